// Accuracy evaluation files: JSON (schema mnv2.eval/1, the CLI's --json) and CSV (the app's export; one
// summary row, then one row per misclassified and per skipped image).
#pragma once

#include <functional>
#include <string>

#include "mnv2/eval.h"
#include "mnv2/report.h"

namespace mnv2 {

// Where the images came from: the folder and, when one was given, the list file ("" otherwise).
struct EvalSource {
  std::string images_dir;
  std::string list;
};

std::string eval_json(const EvalResult& result, const ReportModel& model, const EvalSource& source);

// What the CSV says beside the result: the set's name, the image decoder, and class names (both set).
struct EvalCsvContext {
  std::string set;
  std::string decoder;
  std::function<std::string(int)> label_name;       // the "label_name" column of a misclassified image
  std::function<std::string(int)> prediction_name;  // each of "predicted_top5_names", joined by " | "
};

std::string eval_csv(const EvalResult& result, const EvalCsvContext& context);

}  // namespace mnv2
