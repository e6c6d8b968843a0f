// How two runs' settings differ (see run_differences.h).
#include "models/run_differences.h"

#include <QStringList>
#include <algorithm>

#include "models/report_access.h"

namespace mnv2::ui {

QString differenceText(const mnv2::SettingDifference& d) {
  return QStringLiteral("%1 %2 → %3")
      .arg(QString::fromStdString(d.setting), shownText(d.a.empty() ? std::string("—") : d.a),
           shownText(d.b.empty() ? std::string("—") : d.b));
}

QString differencesHtml(const mnv2::RunComparability& c) {
  if (c.differences.empty()) return {};
  QStringList items;
  for (const mnv2::SettingDifference& d : c.differences) {
    const QString what = differenceText(d).toHtmlEscaped();
    const QString why = QString::fromStdString(d.consequence).toHtmlEscaped();
    switch (d.weight) {
      case mnv2::SettingDifference::Weight::refuse:
        items << QStringLiteral("<li><b style='color:#b02a37'>Not comparable — %1</b>: %2</li>").arg(what, why);
        break;
      case mnv2::SettingDifference::Weight::warn:
        items << QStringLiteral("<li><b style='color:#9a6700'>%1</b>: %2</li>").arg(what, why);
        break;
      case mnv2::SettingDifference::Weight::note:
        items << QStringLiteral("<li><span style='color:#777'>%1 (%2)</span></li>").arg(what, why);
        break;
    }
  }
  return QStringLiteral("Settings that differ:<ul style='margin:0'>%1</ul>").arg(items.join(QString()));
}

QString warningsLine(const mnv2::RunComparability& c) {
  QStringList parts;
  for (const mnv2::SettingDifference& d : c.differences)
    if (d.weight != mnv2::SettingDifference::Weight::note) parts << differenceText(d);
  return parts.join(QStringLiteral("; "));
}

const RunsDifferences::Setting* RunsDifferences::find(std::string_view name) const {
  const auto it = std::find_if(settings.begin(), settings.end(), [&](const Setting& s) { return s.name == name; });
  return it == settings.end() ? nullptr : &*it;
}

RunsDifferences differencesAmong(const std::vector<ReportPtr>& runs) {
  RunsDifferences out;
  if (runs.size() < 2) return out;
  std::vector<mnv2::RunComparability> against(runs.size());  // [i]: the first run against run i
  for (size_t i = 1; i < runs.size(); ++i) {
    against[i] = mnv2::compare_settings(*runs.front(), *runs[i]);
    for (const mnv2::SettingDifference& d : against[i].differences)
      if (!out.find(d.setting)) out.settings.push_back({d.setting, std::vector<std::string>(runs.size(), d.a)});
  }
  // A run that does not differ from the first in a setting has the first one's value.
  for (RunsDifferences::Setting& s : out.settings)
    for (size_t i = 1; i < runs.size(); ++i)
      for (const mnv2::SettingDifference& d : against[i].differences)
        if (d.setting == s.name) s.values[i] = d.b;
  return out;
}

QString settingsOf(const RunsDifferences& differences, size_t run, const QString& separator) {
  QStringList parts;
  for (const RunsDifferences::Setting& s : differences.settings)
    if (run < s.values.size()) parts << QString::fromStdString(s.name + " " + s.values[run]);
  return parts.join(separator);
}

QStringList distinctRunNames(const std::vector<ReportPtr>& runs) {
  RunsDifferences differ = differencesAmong(runs);
  // The label says the backend and precision already.
  std::erase_if(differ.settings, [](const RunsDifferences::Setting& s) {
    return s.name == "backend" || s.name == "precision" || s.name == "where";
  });
  QStringList names;
  for (size_t i = 0; i < runs.size(); ++i) {
    const QString own = settingsOf(differ, i, QStringLiteral(" · "));
    names << runLabel(*runs[i]) + (own.isEmpty() ? QString() : QStringLiteral(" · ") + own);
  }
  const QStringList plain = names;
  for (qsizetype i = 0; i < names.size(); ++i)
    if (plain.count(plain[i]) > 1) names[i] += QStringLiteral(" #%1").arg(i + 1);
  return names;
}

QString ratioText(double timeA, double timeB, double imagesRatio) {
  if (!(timeA > 0) || !(timeB > 0)) return {};
  auto ratio = [](double a, double b) {
    return b < a ? QStringLiteral("%1× faster").arg(a / b, 0, 'f', 2)
                 : QStringLiteral("%1× slower").arg(b / a, 0, 'f', 2);
  };
  if (imagesRatio == 1) return QStringLiteral("B is ") + ratio(timeA, timeB);
  return QStringLiteral("B takes %1× as long per run for %2× the images: B is %3 per image")
      .arg(timeB / timeA, 0, 'f', 2)
      .arg(imagesRatio, 0, 'g', 3)
      .arg(ratio(timeA, timeB / imagesRatio));
}

}  // namespace mnv2::ui
