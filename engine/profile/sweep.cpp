// Sweeps over backends, input sizes and batch sizes (see mnv2/sweep.h).
#include "mnv2/sweep.h"

#include "mnv2/error.h"

namespace mnv2 {

std::vector<BenchConfig> sweep_points(const SweepConfig& c) {
  if (c.backends.empty() || c.sizes.empty() || c.batches.empty())
    throw UsageError("a sweep needs at least one backend, one input size and one batch size");
  std::vector<BenchConfig> points;
  for (const auto& backend : c.backends)
    for (const auto& [h, w] : c.sizes)
      for (int batch : c.batches) {
        BenchConfig b;
        b.backend = backend;
        b.batch = batch;
        b.height = h;
        b.width = w;
        b.warmup = c.warmup;
        b.iters = c.iters;
        b.precision = c.precision;
        b.cuda = c.cuda;
        b.cudnn = c.cudnn;
        b.cpu_threads = c.cpu_threads;
        b.device = c.device;
        b.u8_input = c.u8_input;
        b.sub_batch = c.sub_batch > 0 && batch > c.sub_batch ? c.sub_batch : 0;
        if (b.sub_batch > 0 && batch % b.sub_batch != 0)
          throw UsageError("the sub-batch " + std::to_string(c.sub_batch) + " does not divide the batch " +
                           std::to_string(batch));
        points.push_back(b);
      }
  return points;
}

std::vector<BenchResult> run_sweep(const Model& model, const SweepConfig& config, const SweepProgress& progress) {
  const std::vector<BenchConfig> points = sweep_points(config);
  for (const auto& [h, w] : config.sizes) analyse(model, 1, h, w);  // a size the network cannot take fails first
  std::vector<BenchResult> results;
  const int count = static_cast<int>(points.size());
  for (int i = 0; i < count; ++i) {
    const BenchConfig& p = points[static_cast<size_t>(i)];
    ProgressFn step;
    if (progress) step = [&](int done, int total) { return progress(i, count, done, total); };
    try {
      results.push_back(run_bench(model, p, step));
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      if (std::string(e.what()) == "cancelled") throw;
      throw Error(p.backend + " at " + std::to_string(p.height) + "x" + std::to_string(p.width) + ", batch " +
                  std::to_string(p.batch) + ": " + e.what());
    }
  }
  return results;
}

std::pair<int, int> parse_input_size(const std::string& text) {
  auto side = [&](const std::string& s, const std::string& what) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size()) throw UsageError(what + " must be an integer, got '" + s + "'");
    if (v < 8 || v > 8192) throw UsageError(what + " must be in 8..8192, got " + s);
    return static_cast<int>(v);
  };
  const auto x = text.find('x');
  if (x == std::string::npos) return {side(text, "input height"), side(text, "input width")};
  if (text.find('x', x + 1) != std::string::npos)
    throw UsageError("--input-size must look like 224x224 (height x width), got '" + text + "'");
  return {side(text.substr(0, x), "input height"), side(text.substr(x + 1), "input width")};
}

std::vector<std::pair<int, int>> parse_size_list(const std::string& text) {
  std::vector<std::pair<int, int>> sizes;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    sizes.push_back(
        parse_input_size(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

}  // namespace mnv2
