// How two runs' settings differ, as the pages say it: the engine's compare_settings (mnv2/studies.h) turned
// into rich text and one-line summaries. No widgets here.
#pragma once

#include <QString>
#include <string>
#include <string_view>
#include <vector>

#include "mnv2/studies.h"
#include "models/report_access.h"

namespace mnv2::ui {

// "batch 1 → 2" for one difference.
QString differenceText(const mnv2::SettingDifference& d);
// Every difference as an HTML list: refusals and warnings in bold with their consequence, notes in grey.
// Empty when nothing differs.
QString differencesHtml(const mnv2::RunComparability& c);
// The warnings and refusals on one line ("batch 1 → 2; input size 224×224 → 160×160"); empty when none.
QString warningsLine(const mnv2::RunComparability& c);
// Where several runs differ, by the engine's rule (compare_settings of each run against the first): every setting
// in which some run differs from the first, in the engine's order, with each run's value as the engine shows it.
struct RunsDifferences {
  struct Setting {
    std::string name;                 // the engine's name: "input", "batch", "input size", ...
    std::vector<std::string> values;  // one per run, in the runs' order
  };
  std::vector<Setting> settings;
  const Setting* find(std::string_view name) const;  // nullptr: every run has the first one's value
};
RunsDifferences differencesAmong(const std::vector<ReportPtr>& runs);
// Run `run`'s values in the settings that differ ("input owl.jpg, batch 2"), joined by `separator`; empty when
// every run has the same settings.
QString settingsOf(const RunsDifferences& differences, size_t run, const QString& separator = QStringLiteral(", "));
// A name for each run that tells it from the others where no run history names them: its label ("cpu fp32"),
// then its values in the settings that differ ("cpu fp32 · batch 2"); "#2", "#3" where runs differ in nothing.
QStringList distinctRunNames(const std::vector<ReportPtr>& runs);

// "B is 2.08× slower" for a pair of times, and per image when the batches differ: "B takes 2.08× as long
// per run for 2× the images: 1.04× slower per image".
QString ratioText(double timeA, double timeB, double imagesRatio);

}  // namespace mnv2::ui
