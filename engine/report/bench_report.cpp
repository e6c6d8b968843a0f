// Benchmark and sweep CSV and JSON (see mnv2/bench_report.h).
#include "mnv2/bench_report.h"

#include <cmath>
#include <locale>
#include <sstream>

#include "mnv2/csv.h"
#include "mnv2/memory_report.h"
#include "mnv2/report.h"

namespace mnv2 {

using json::Json;

namespace {

// Six significant digits, '.' whatever the locale (the app may set one with a decimal comma); "" for a
// figure that is not finite.
std::string num(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.imbue(std::locale::classic());
  o.precision(6);
  o << v;
  return o.str();
}

}  // namespace

double speedup_vs_cudnn(const std::vector<BenchResult>& results, const BenchResult& r) {
  for (const auto& c : results)
    if (c.config.backend == "cudnn" && c.config.batch == r.config.batch && c.config.height == r.config.height &&
        c.config.width == r.config.width && c.gpu_ms && r.gpu_ms && r.gpu_ms->median > 0)
      return c.gpu_ms->median / r.gpu_ms->median;
  return 0;
}

std::string bench_csv(const std::vector<BenchResult>& results) {
  std::ostringstream out;
  out << "backend,backend_description,precision,batch,height,width,warmup,iters,host_median_ms,host_p90_ms,"
         "host_min_ms,host_mean_ms,host_cv,images_per_s,gpu_median_ms,gpu_p90_ms,device_resident_median_ms,"
         "device_resident_images_per_s,memory_bytes,driver_held_bytes,cpu_threads,reliability\n";
  for (const BenchResult& r : results) {
    const BenchConfig& c = r.config;
    const Summary& s = r.latency_ms;
    out << csv_quote(c.backend) << ',' << csv_quote(r.backend_description) << ',' << to_string(c.precision) << ','
        << c.batch << ',' << c.height << ',' << c.width << ',' << c.warmup << ',' << c.iters << ',' << num(s.median)
        << ',' << num(s.p90) << ',' << num(s.min) << ',' << num(s.mean) << ',' << num(s.cv) << ','
        << num(r.images_per_s) << ',' << (r.gpu_ms ? num(r.gpu_ms->median) : "") << ','
        << (r.gpu_ms ? num(r.gpu_ms->p90) : "") << ',' << (r.device_ms ? num(r.device_ms->median) : "") << ','
        << (r.device_ms ? num(r.device_images_per_s) : "") << ',' << r.memory.total() << ','
        << r.memory.driver_held_bytes() << ',' << r.config.cpu_threads << ',' << to_string(r.reliability.verdict())
        << "\n";
  }
  return out.str();
}

std::string bench_json(const std::vector<BenchResult>& results, const ReportModel& model) {
  Json rows = Json::array();
  for (const auto& r : results) {
    const Summary& s = r.latency_ms;
    Json rj = {{"backend", r.config.backend},
               {"backend_description", r.backend_description},
               {"precision", to_string(r.config.precision)},
               {"batch", r.config.batch},
               {"height", r.config.height},
               {"width", r.config.width},
               {"warmup", r.config.warmup},
               {"iters", r.config.iters},
               {"median_ms", s.median},
               {"mean_ms", s.mean},
               {"min_ms", s.min},
               {"max_ms", s.max},
               {"std_ms", s.stddev},
               {"p90_ms", s.p90},
               {"p95_ms", s.p95},
               {"p99_ms", s.p99},
               {"cv", s.cv},
               {"images_per_s", r.images_per_s}};
    if (r.gpu_ms) {
      rj["gpu_median_ms"] = r.gpu_ms->median;
      rj["gpu_p90_ms"] = r.gpu_ms->p90;
      rj["gpu_min_ms"] = r.gpu_ms->min;
      if (const double x = speedup_vs_cudnn(results, r); x > 0) rj["gpu_speedup_vs_cudnn"] = x;
    }
    if (r.device_ms) {  // input already on the GPU, graph replay, no copies: not an end-to-end figure
      rj["device_resident_median_ms"] = r.device_ms->median;
      rj["device_resident_p90_ms"] = r.device_ms->p90;
      rj["device_resident_min_ms"] = r.device_ms->min;
      rj["device_resident_images_per_s"] = r.device_images_per_s;
    }
    rj["memory_bytes"] = r.memory.total();
    rj["memory"] = r.memory;
    rj["cpu_threads"] = r.config.cpu_threads;  // the cpu backends' threads as run; 0 for GPU backends
    rj["reliability"] = reliability_json(r.reliability);
    rows.push_back(std::move(rj));
  }
  const Json j = {{"schema", "mnv2.bench/1"},
                  {"model", model_json(model)},
                  {"commit", MNV2_GIT_COMMIT},
                  {"timer", "host_clock"},
                  {"results", rows}};
  return json::dump(j, 2) + "\n";
}

}  // namespace mnv2
