// Benchmark and sweep CSV and JSON (see mnv2/bench_report.h).
#include "mnv2/bench_report.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <locale>
#include <new>
#include <optional>
#include <sstream>

#include "mnv2/build_info.h"
#include "mnv2/csv.h"
#include "mnv2/error.h"
#include "mnv2/input_files.h"
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
        c.config.width == r.config.width && c.config.precision == r.config.precision && c.gpu_ms && r.gpu_ms &&
        r.gpu_ms->median > 0)
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
    if (r.u8_ms) {  // from 8-bit pixels on the host to logits on the host, sub-batches pipelined
      rj["end_to_end_u8_median_ms"] = r.u8_ms->median;
      rj["end_to_end_u8_p90_ms"] = r.u8_ms->p90;
      rj["end_to_end_u8_min_ms"] = r.u8_ms->min;
      rj["end_to_end_u8_images_per_s"] = r.u8_images_per_s;
      rj["u8_sub_batch"] = r.config.sub_batch;
      rj["u8_path"] = r.u8_path;
    }
    if (r.kernels_per_run >= 0) rj["kernels_per_run"] = r.kernels_per_run;  // GPU backends that count them
    if (!r.resolved_options.empty()) rj["resolved_options"] = resolved_options_json(r.resolved_options);
    rj["memory_bytes"] = r.memory.total();
    rj["memory"] = r.memory;
    rj["cpu_threads"] = r.config.cpu_threads;  // the cpu backends' threads as run; 0 for GPU backends
    rj["reliability"] = reliability_json(r.reliability);
    if (r.gpu.index >= 0) rj["gpu"] = gpu_record_json(r.gpu);  // GPU backends; absent in older files
    rows.push_back(std::move(rj));
  }
  const Json j = {{"schema", "mnv2.bench/1"},
                  {"model", model_json(model)},
                  {"commit", build_commit()},
                  {"timer", "host_clock"},
                  {"results", rows}};
  return json::dump(j, 2) + "\n";
}

// ---- reading ----------------------------------------------------------------------------------------------

namespace {

constexpr const char* kBenchSchema = "mnv2.bench/1";
constexpr int kMaxSide = 1 << 20;  // as the report reader: beyond any model the importer reads
constexpr int kMaxBatch = 65536;   // mnv2 bench's own bound
constexpr size_t kMaxBackendName = 64;
constexpr int64_t kMaxKernelsPerRun = int64_t{1} << 30;  // far beyond any network; a bound for a file's claim

// Errors are printed as one line; text from a file may hold line breaks or control characters.
std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  return out;
}

int int_in(const json::Json& object, const char* key, int lo, int hi) {
  const int64_t x = json::int_at(object, key);
  if (x < lo || x > hi)
    throw Error(std::string(key) + " " + std::to_string(x) + " is outside " + std::to_string(lo) + ".." +
                std::to_string(hi));
  return static_cast<int>(x);
}

// A figure is finite and not negative (times, rates, the coefficient of variation).
double figure_at(const json::Json& object, const char* key) {
  const double x = json::number_at(object, key);
  if (!std::isfinite(x) || x < 0) throw Error(std::string("'") + key + "' is not a finite figure of 0 or more");
  return x;
}

std::optional<double> optional_figure(const json::Json& object, const char* key) {
  if (!json::find(object, key)) return std::nullopt;
  return figure_at(object, key);
}

// "gpu" -> gpu_median_ms, gpu_p90_ms, gpu_min_ms: all three where the median is present.
std::optional<Summary> optional_summary(const json::Json& object, const std::string& prefix, int64_t n) {
  const std::string median = prefix + "_median_ms";
  if (!json::find(object, median)) return std::nullopt;
  Summary s;
  s.n = n;
  s.median = figure_at(object, median.c_str());
  s.p90 = figure_at(object, (prefix + "_p90_ms").c_str());
  s.min = figure_at(object, (prefix + "_min_ms").c_str());
  return s;  // mean, max and the other percentiles are not in the schema: left 0
}

std::string backend_at(const json::Json& object) {
  const std::string& b = json::string_at(object, "backend");
  if (b.empty() || b.size() > kMaxBackendName) throw Error("'backend' must be 1 to 64 characters");
  for (char c : b)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ',')
      throw Error("'backend' holds a control character or a comma");
  return b;
}

BenchResult result_from(const json::Json& j) {
  json::as_object(j);
  BenchResult r;
  BenchConfig& c = r.config;
  c.backend = backend_at(j);
  r.backend_description = json::string_at(j, "backend_description");
  try {
    c.precision = parse_precision(json::string_at(j, "precision"));
  } catch (const UsageError& e) {  // a file's content is not the user's command line
    throw Error(std::string("'precision': ") + e.what());
  }
  c.batch = int_in(j, "batch", 1, kMaxBatch);
  c.height = int_in(j, "height", 1, kMaxSide);
  c.width = int_in(j, "width", 1, kMaxSide);
  c.warmup = int_in(j, "warmup", 0, std::numeric_limits<int>::max());
  c.iters = int_in(j, "iters", 1, std::numeric_limits<int>::max());
  if (json::find(j, "cpu_threads")) c.cpu_threads = int_in(j, "cpu_threads", 0, 4096);
  Summary& s = r.latency_ms;
  s.n = c.iters;
  s.median = figure_at(j, "median_ms");
  s.mean = figure_at(j, "mean_ms");
  s.min = figure_at(j, "min_ms");
  s.max = figure_at(j, "max_ms");
  s.stddev = figure_at(j, "std_ms");
  s.p10 = optional_figure(j, "p10_ms").value_or(0);  // written by the PyTorch anchor; absent from ours (0)
  s.p90 = figure_at(j, "p90_ms");
  s.p95 = figure_at(j, "p95_ms");
  s.p99 = figure_at(j, "p99_ms");
  s.cv = figure_at(j, "cv");
  if (s.min > s.median || s.median > s.max) throw Error("min_ms, median_ms and max_ms are out of order");
  r.images_per_s = figure_at(j, "images_per_s");
  r.gpu_ms = optional_summary(j, "gpu", c.iters);
  r.device_ms = optional_summary(j, "device_resident", c.iters);
  if (r.device_ms) r.device_images_per_s = figure_at(j, "device_resident_images_per_s");
  r.u8_ms = optional_summary(j, "end_to_end_u8", c.iters);
  if (r.u8_ms) {
    c.u8_input = true;
    r.u8_images_per_s = figure_at(j, "end_to_end_u8_images_per_s");
    c.sub_batch = int_in(j, "u8_sub_batch", 1, c.batch);
    r.u8_path = json::string_at(j, "u8_path");
  }
  if (const json::Json* o = json::find(j, "resolved_options")) r.resolved_options = resolved_options_from_json(*o);
  if (json::find(j, "kernels_per_run")) {  // absent in older files, host backends' and other programs'
    const int64_t k = json::int_at(j, "kernels_per_run");
    if (k < 0 || k > kMaxKernelsPerRun)
      throw Error("kernels_per_run " + std::to_string(k) + " is outside 0.." + std::to_string(kMaxKernelsPerRun));
    r.kernels_per_run = k;
  }
  if (const json::Json* m = json::find(j, "memory")) {
    try {
      r.memory = m->get<MemoryReport>();
    } catch (const Error& e) {
      throw Error(json::named_error("memory", e.what()));
    }
  }
  if (const json::Json* rel = json::find(j, "reliability")) {  // absent in older files and other programs'
    try {
      r.reliability = reliability_from_json(*rel);
    } catch (const Error& e) {
      throw Error(json::named_error("reliability", e.what()));
    }
  }
  if (const json::Json* g = json::find(j, "gpu")) {  // GPU backends; absent in older files
    try {
      r.gpu = gpu_record_from_json(*g);
    } catch (const Error& e) {
      throw Error(json::named_error("gpu", e.what()));
    }
  }
  return r;
}

ReportModel model_from(const json::Json& j) {
  json::as_object(j);
  ReportModel m;
  m.source = json::string_at(j, "source");
  m.checksum = json::string_at(j, "checksum");
  m.synthetic = json::bool_at(j, "synthetic");
  m.classes = int_in(j, "classes", 0, 1 << 20);
  m.layers = json::int_at(j, "layers");
  if (m.layers < 0) throw Error("'layers' is negative");
  if (json::find(j, "found_by")) m.found_by = json::string_at(j, "found_by");
  if (const json::Json* w = json::find(j, "warnings"))
    for (const json::Json& x : json::as_array(*w)) m.warnings.push_back(json::as_string(x));
  return m;
}

}  // namespace

BenchFile bench_from_json(const json::Json& value) {
  const json::Json* schema = value.is_object() ? json::find(value, "schema") : nullptr;
  if (!schema || !schema->is_string() || json::as_string(*schema) != kBenchSchema) {
    if (schema && schema->is_string() && json::as_string(*schema).rfind("mnv2.bench/", 0) == 0)
      throw Error("bench file schema '" + json::as_string(*schema) + "' is not one this program reads (" +
                  kBenchSchema + "); update mnv2");
    throw Error(std::string("not an mnv2 bench file (no \"schema\": \"") + kBenchSchema + "\")");
  }
  BenchFile f;
  try {
    f.model = model_from(json::at(value, "model"));
  } catch (const Error& e) {
    throw Error(json::named_error("model", e.what()));
  }
  f.commit = json::string_at(value, "commit");
  const json::Json& results = json::array_at(value, "results");
  if (results.size() > kMaxBenchResults)
    throw Error(std::to_string(results.size()) + " results: more than " + std::to_string(kMaxBenchResults));
  for (size_t i = 0; i < results.size(); ++i) {
    try {
      f.results.push_back(result_from(results[i]));
    } catch (const Error& e) {
      throw Error("result " + std::to_string(i) + ": " + e.what());
    }
  }
  return f;
}

BenchFile read_bench_file(const std::string& path) {
  try {
    const json::Json v = json::parse_file(path, inputs::kReport);
    try {
      return bench_from_json(v);
    } catch (const std::bad_alloc&) {
      throw Error(path + ": not enough memory to read the bench file");
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  } catch (const Error& e) {
    throw Error(one_line(e.what()));
  }
}

bool is_bench_file(const std::string& path) {
  std::string head;
  try {
    const OpenedInput in = open_input_file(path, inputs::kReport);
    head.resize(static_cast<size_t>(std::min<uint64_t>(in.size, 64 * 1024)));
    size_t got = 0;
    while (got < head.size()) {
      const ssize_t n = ::read(in.fd, head.data() + got, head.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(in.fd);
    head.resize(got);
  } catch (const Error&) {
    return false;  // the reader that is picked says why
  }
  // "schema", optional white space, ':', optional white space, then the value.
  for (size_t at = head.find("\"schema\""); at != std::string::npos; at = head.find("\"schema\"", at + 1)) {
    size_t i = at + 8;
    while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (i >= head.size() || head[i] != ':') continue;
    ++i;
    while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (head.compare(i, 14, "\"mnv2.bench/1\"") == 0) return true;
  }
  return false;
}

}  // namespace mnv2
