// Class names (compiled-in ImageNet lists or a labels file) and ranking logits into top-k predictions.
#include "mnv2/labels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>

#include "mnv2/error.h"
#include "mnv2/input_files.h"

namespace mnv2::resources {
// resources/imagenet_labels_1001.txt, compiled into mnv2_resources (resources/labels_data.cpp.in).
extern const char* const kImagenetLabels1001;
}  // namespace mnv2::resources

namespace mnv2 {

namespace {

// One entry per line; "\r\n" endings lose their "\r", and the empty "line" after a final newline is no label.
std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = end + 1;
  }
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

const std::vector<std::string>& imagenet_1001() {
  static const std::vector<std::string> labels = split_lines(resources::kImagenetLabels1001);
  return labels;
}

}  // namespace

std::vector<std::string> builtin_labels(int num_classes) {
  if (num_classes < 0) throw UsageError("builtin_labels: negative class count " + std::to_string(num_classes));
  const std::vector<std::string>& all = imagenet_1001();
  if (num_classes == 1001 && all.size() == 1001) return all;
  if (num_classes == 1000 && all.size() == 1001) return {all.begin() + 1, all.end()};  // no "background"
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(num_classes));
  for (int i = 0; i < num_classes; ++i) names.push_back("class " + std::to_string(i));
  return names;
}

std::string labels_source(int num_classes, const std::string& labels_file) {
  if (!labels_file.empty()) return "file " + labels_file;
  const size_t builtin = imagenet_1001().size();
  if (num_classes == 1001 && builtin == 1001) return "built-in ImageNet, 1001 classes (background first)";
  if (num_classes == 1000 && builtin == 1001) return "built-in ImageNet, 1000 classes";
  return "generated names 'class 0'..'class " + std::to_string(std::max(num_classes - 1, 0)) +
         "' (no built-in list has " + std::to_string(num_classes) + " classes)";
}

std::vector<std::string> read_labels_file(const std::string& path) {
  const InputBudget& budget = inputs::kLabels;
  std::string content = read_input_file(path, budget);
  // Editors on Windows like to start UTF-8 files with a byte-order mark; it is not part of the first label.
  if (content.starts_with("\xEF\xBB\xBF")) content.erase(0, 3);
  std::vector<std::string> labels = split_lines(content);
  if (labels.size() > budget.max_lines)
    throw Error(path + ": " + std::to_string(labels.size()) + " lines is more than a labels file can have (at most " +
                std::to_string(budget.max_lines) + ", the most classes a model can have)");
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i].size() > budget.max_string_bytes)
      throw Error(path + ":" + std::to_string(i + 1) + ": a label of " + std::to_string(labels[i].size()) +
                  " bytes (at most " + std::to_string(budget.max_string_bytes) + ")");
  const bool all_blank = std::all_of(labels.begin(), labels.end(), [](const std::string& l) {
    return l.find_first_not_of(" \t") == std::string::npos;
  });
  if (all_blank) throw Error(path + ": labels file is empty (expected one label per line)");
  return labels;
}

std::vector<Prediction> top_k(const float* logits, int count, int k, const std::vector<std::string>& labels) {
  if (count < 0) throw UsageError("top_k: negative logit count " + std::to_string(count));
  if (count > 0 && logits == nullptr) throw UsageError("top_k: no logits given");
  k = std::clamp(k, 0, count);
  if (k == 0) return {};

  // Probabilities are computed as exp(x - max) / sum, which cannot overflow. Degenerate inputs get defined
  // answers instead of NaN arithmetic: any NaN logit makes every probability NaN (the output is garbage and
  // should look it); +inf logits share all the mass; all -inf is NaN (softmax is undefined there).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  bool any_nan = false;
  double max_logit = -kInf;
  int num_pos_inf = 0;
  for (int i = 0; i < count; ++i) {
    const double x = logits[i];
    if (std::isnan(x))
      any_nan = true;
    else
      max_logit = std::max(max_logit, x);
    if (x == kInf) ++num_pos_inf;
  }
  std::vector<double> prob(static_cast<size_t>(count), kNaN);
  if (!any_nan && max_logit == kInf) {
    for (int i = 0; i < count; ++i) prob[i] = logits[i] == kInf ? 1.0 / num_pos_inf : 0.0;
  } else if (!any_nan && max_logit > -kInf) {
    double sum = 0.0;
    for (int i = 0; i < count; ++i) sum += prob[i] = std::exp(static_cast<double>(logits[i]) - max_logit);
    for (double& v : prob) v /= sum;
  }

  // Rank by logit (the same order as probability, and exact); NaN ranks lowest so the comparison stays a
  // strict weak ordering.
  auto key = [&](int i) { return std::isnan(logits[i]) ? -kInf : static_cast<double>(logits[i]); };
  std::vector<int> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    const double ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });

  std::vector<Prediction> top;
  top.reserve(static_cast<size_t>(k));
  for (int r = 0; r < k; ++r) {
    const int i = order[r];
    Prediction p;
    p.index = i;
    p.label = i < static_cast<int>(labels.size()) ? labels[i] : "class " + std::to_string(i);
    p.prob = prob[i];
    p.logit = logits[i];
    top.push_back(std::move(p));
  }
  return top;
}

}  // namespace mnv2
