// The compare and diff studies and their one precision rule (mnv2/studies.h).
#include <algorithm>
#include <string>
#include <vector>

#include "mnv2/bench.h"  // random_input
#include "mnv2/error.h"
#include "mnv2/studies.h"

namespace mnv2 {

namespace {

bool has_mode(const std::string& backend, Precision precision, const SupportsPrecision& supports) {
  if (supports) return supports(backend, precision);
  return make_backend(backend)->supports(precision);  // unknown names: UsageError
}

}  // namespace

CompareRule resolve_compare(const std::vector<std::string>& backends, Precision requested,
                            const SupportsPrecision& supports) {
  if (backends.empty()) throw UsageError("no backend to compare");
  CompareRule rule;
  rule.requested = requested;
  rule.judged = requested;
  for (size_t i = 0; i < backends.size(); ++i) {
    const std::string& name = backends[i];
    for (size_t k = 0; k < i; ++k)
      if (backends[k] == name) throw UsageError("backend '" + name + "' given twice");
    const bool runs_mode = has_mode(name, requested, supports);
    if (i == 0) {
      rule.run.push_back(runs_mode ? requested : Precision::fp32);
      if (!runs_mode)
        rule.notes.push_back(name + " runs fp32 as the reference (it has no " + to_string(requested) + " mode)");
      continue;
    }
    if (!runs_mode)
      throw UsageError("backend '" + name + "' has no " + to_string(requested) +
                       " mode; only the reference (the first backend) may run fp32 in its place ('mnv2 info' lists "
                       "each backend's modes)");
    rule.run.push_back(requested);
  }
  return rule;
}

CompareSelection select_compare(const std::vector<std::string>& available, Precision requested,
                                const SupportsPrecision& supports) {
  if (available.empty()) throw UsageError("no backend to compare");
  CompareSelection s;
  for (size_t i = 0; i < available.size(); ++i) {
    if (i > 0 && !has_mode(available[i], requested, supports))
      s.left_out.push_back(available[i]);
    else
      s.backends.push_back(available[i]);
  }
  s.rule = resolve_compare(s.backends, requested, supports);
  for (const std::string& name : s.left_out)
    s.rule.notes.push_back(name + " is left out (it has no " + to_string(requested) + " mode, and only the reference " +
                           s.backends.front() + " may run fp32 in its place)");
  return s;
}

namespace {

// The first image of `input` (or of the random batch of seed 1), the one every diff runs on.
Tensor first_image(const Model& model, const ProfileConfig& c) {
  Tensor first(Shape{1, model.input_channels, c.height, c.width});
  if (c.input && c.input->shape.per_image() == first.shape.per_image()) {
    std::copy(c.input->data.begin(), c.input->data.begin() + first.shape.numel(), first.data.begin());
    return first;
  }
  return random_input(first.shape, 1);
}

}  // namespace

CompareResult run_compare(const Model& model, const CompareConfig& config, const CompareProgress& progress) {
  CompareResult result;
  result.rule = resolve_compare(config.backends, config.base.precision);
  const int n = static_cast<int>(config.backends.size());
  for (int i = 0; i < n; ++i) {
    ProfileConfig c = config.base;
    c.backend = config.backends[static_cast<size_t>(i)];
    c.precision = result.rule.run[static_cast<size_t>(i)];
    ProfileProgress p;
    if (progress)
      p = [&, i](const std::string& phase, int done, int total) { return progress(i, c.backend, phase, done, total); };
    result.reports.push_back(profile(model, c, p));
  }
  if (!config.diffs || n < 2) return result;
  const Tensor first = first_image(model, config.base);
  const std::string& reference = config.backends.front();
  PrepareConfig pc{1, config.base.height, config.base.width, result.rule.judged, config.base.cuda,
                   0, config.base.cudnn};
  pc.device = config.base.device;
  for (int i = 1; i < n; ++i) {
    const std::string& backend = config.backends[static_cast<size_t>(i)];
    if (progress && !progress(i, backend, "diff", 0, 1)) throw Error("cancelled");
    result.reports[static_cast<size_t>(i)].diff = diff_backends(model, backend, reference, pc, first);
    if (progress && !progress(i, backend, "diff", 1, 1)) throw Error("cancelled");
  }
  return result;
}

DiffResult run_diff(const Model& model, const DiffConfig& config) {
  DiffResult result;
  result.rule = resolve_compare({config.reference, config.backend}, config.precision);
  Tensor input = config.input;
  if (input.empty()) input = random_input(Shape{1, model.input_channels, config.height, config.width}, 1);
  PrepareConfig pc{
      1,           static_cast<int>(input.shape.h), static_cast<int>(input.shape.w), result.rule.judged, config.cuda, 0,
      config.cudnn};
  pc.device = config.device;
  result.diff = diff_backends(model, config.backend, config.reference, pc, input);
  return result;
}

}  // namespace mnv2
