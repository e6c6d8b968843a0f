// RunReport serialisation: CSV, JSON (read back too) and Chrome/Perfetto traces (see mnv2/report.h).
#include "mnv2/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include "mnv2/csv.h"
#include "mnv2/error.h"
#include "mnv2/memory_report.h"
#include "mnv2/options.h"
#include "mnv2/output_files.h"
#include "mnv2/profiler.h"
#include "mnv2/timeline.h"

namespace mnv2 {

namespace {

using json::Json;

// ---- small helpers ------------------------------------------------------------------------------------

std::string ns_int(double ns) { return std::isfinite(ns) ? std::to_string(std::llround(ns)) : ""; }

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.imbue(std::locale::classic());
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}

std::string sci(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6e", v);
  return buf;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// Error messages are printed as one line; text from a file may hold line breaks or control characters.
std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  return out;
}

// Integers of the report that the program keeps as int: a larger value is refused, never wrapped.
int int_from(const Json& v, const char* what) {
  int64_t x = 0;
  try {
    x = json::as_int(v);
  } catch (const Error& e) {
    throw Error(json::named_error(what, e.what()));
  }
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    throw Error(std::string(what) + " " + std::to_string(x) + " is out of range");
  return static_cast<int>(x);
}

// Clip bounds are floats; a double beyond float's range cannot be converted (undefined behaviour).
float float_from(const Json& v, const char* what) {
  double x = 0;
  try {
    x = json::as_number(v);
  } catch (const Error& e) {
    throw Error(json::named_error(what, e.what()));
  }
  if (std::fabs(x) > std::numeric_limits<float>::max()) throw Error(std::string(what) + " is out of range");
  return static_cast<float>(x);
}

// Values are checked where they are read: a count or a size is never negative, a dimension lies within what
// the importer accepts, a figure is finite. "batch -5" is refused naming the field, not loaded.
int int_in(const Json& v, const char* what, int lo, int hi) {
  const int x = int_from(v, what);
  if (x < lo || x > hi)
    throw Error(std::string(what) + " " + std::to_string(x) + " is outside " + std::to_string(lo) + ".." +
                std::to_string(hi));
  return x;
}
int64_t count_at(const Json& object, const char* key) {
  const int64_t x = json::int_at(object, key);
  if (x < 0) throw Error(std::string(key) + " " + std::to_string(x) + " is negative");
  return x;
}
double figure_at(const Json& object, const std::string& key) {
  const double x = json::number_at(object, key);
  if (!std::isfinite(x) || x < 0) throw Error(key + " " + std::to_string(x) + " is not a non-negative figure");
  return x;
}
constexpr int kMaxDim = 1 << 20;  // sides, channels and batches beyond any model the importer reads

Json summary_json(const Summary& s, const std::string& unit) {
  Json j = Json::object();
  j["n"] = s.n;
  for (auto [key, v] : std::initializer_list<std::pair<const char*, double>>{{"median", s.median},
                                                                             {"mean", s.mean},
                                                                             {"min", s.min},
                                                                             {"max", s.max},
                                                                             {"std", s.stddev},
                                                                             {"p10", s.p10},
                                                                             {"p90", s.p90},
                                                                             {"p95", s.p95},
                                                                             {"p99", s.p99}})
    j[std::string(key) + "_" + unit] = v;
  j["cv"] = s.cv;
  return j;
}

Summary summary_from(const Json& j, const std::string& unit) {
  Summary s;
  s.n = static_cast<int>(std::min<int64_t>(count_at(j, "n"), std::numeric_limits<int>::max()));
  s.median = figure_at(j, "median_" + unit);
  s.mean = figure_at(j, "mean_" + unit);
  s.min = figure_at(j, "min_" + unit);
  s.max = figure_at(j, "max_" + unit);
  s.stddev = figure_at(j, "std_" + unit);
  s.p10 = figure_at(j, "p10_" + unit);
  s.p90 = figure_at(j, "p90_" + unit);
  s.p95 = figure_at(j, "p95_" + unit);
  s.p99 = figure_at(j, "p99_" + unit);
  s.cv = figure_at(j, "cv");
  if (s.min > s.median || s.median > s.max) throw Error("median_" + unit + " is not between min and max");
  return s;
}

Json error_json(const ErrorStats& e) {
  Json j = Json::object();
  j["max_abs"] = e.max_abs;
  j["rel_l2"] = e.rel_l2;
  j["cosine"] = e.cosine;
  j["finite"] = e.finite;
  return j;
}

ErrorStats error_from(const Json& j) {
  ErrorStats e;
  e.finite = json::bool_at(j, "finite");
  auto num = [&](const char* k) {
    const Json& v = json::at(j, k);
    return v.is_null() ? std::numeric_limits<double>::infinity() : json::as_number(v);
  };
  e.max_abs = num("max_abs");
  e.rel_l2 = num("rel_l2");
  e.cosine = json::at(j, "cosine").is_null() ? std::nan("") : json::number_at(j, "cosine");
  return e;
}

Json ints_json(const std::vector<int>& v) { return Json(v); }

std::vector<int> ints_from(const Json& j) {
  std::vector<int> v;
  for (const auto& x : json::as_array(j)) v.push_back(int_from(x, "value"));
  return v;
}

Json strings_json(const std::vector<std::string>& v) { return Json(v); }

std::vector<std::string> strings_from(const Json& j) {
  std::vector<std::string> v;
  for (const auto& x : json::as_array(j)) v.push_back(json::as_string(x));
  return v;
}

LayerKind kind_from(const std::string& s) {
  for (LayerKind k : {LayerKind::Conv2d, LayerKind::ReLU6, LayerKind::ReLU, LayerKind::ResidualAdd,
                      LayerKind::GlobalAveragePool, LayerKind::Linear})
    if (s == to_string(k)) return k;
  throw Error("unknown layer kind '" + s + "'");
}

TimerKind timer_from(const std::string& s) { return parse_timer(s); }

// ---- timeline -------------------------------------------------------------------------------------------

constexpr int kMaxThreads = 4096;  // MNV2_CPU_THREADS's bound: worker numbers beyond it are not a team's

Json record_json(const KernelRecord& k) {
  Json kj = Json::object();
  kj["name"] = k.name;
  kj["kind"] = k.kind;
  kj["step"] = k.step;
  kj["start_ns"] = k.start_ns;
  kj["end_ns"] = k.end_ns;
  kj["grid"] = Json::array({k.grid[0], k.grid[1], k.grid[2]});
  kj["block"] = Json::array({k.block[0], k.block[1], k.block[2]});
  kj["bytes"] = k.bytes;
  kj["stream"] = k.stream;
  kj["correlation"] = k.correlation;
  return kj;
}

KernelRecord record_from(const Json& kj, int steps) {
  KernelRecord k;
  k.name = json::string_at(kj, "name");
  k.kind = json::string_at(kj, "kind");
  k.step = int_from(json::at(kj, "step"), "step");
  k.start_ns = count_at(kj, "start_ns");
  k.end_ns = count_at(kj, "end_ns");
  if (k.end_ns < k.start_ns) throw Error("a kernel record ends before it starts");
  if (k.step < -1 || k.step >= steps)
    throw Error("a kernel record names step " + std::to_string(k.step) + ", which is absent");
  std::vector<int> g = ints_from(json::at(kj, "grid")), b = ints_from(json::at(kj, "block"));
  if (g.size() != 3 || b.size() != 3) throw Error("kernel record grid/block need 3 values");
  for (int x : g)
    if (x < 0) throw Error("kernel record grid " + std::to_string(x) + " is negative");
  for (int x : b)
    if (x < 0) throw Error("kernel record block " + std::to_string(x) + " is negative");
  k.grid = {g[0], g[1], g[2]};
  k.block = {b[0], b[1], b[2]};
  k.bytes = count_at(kj, "bytes");
  // Absent in the kernel records of reports written before timelines.
  if (json::find(kj, "stream")) {
    k.stream = json::int_at(kj, "stream");
    if (k.stream < -1) throw Error("kernel record stream " + std::to_string(k.stream) + " is negative");
  }
  if (json::find(kj, "correlation")) k.correlation = count_at(kj, "correlation");
  return k;
}

// A span's start and end: non-negative, the end not before the start.
std::pair<int64_t, int64_t> span_from(const Json& sj, const char* what) {
  const int64_t start = count_at(sj, "start_ns"), end = count_at(sj, "end_ns");
  if (end < start) throw Error(std::string(what) + " ends before it starts");
  return {start, end};
}

Json timeline_json(const Timeline& t) {
  Json j = Json::object();
  j["clock"] = t.clock;
  j["iteration"] = t.iteration;
  j["iterations"] = t.iterations;
  j["choice"] = t.choice;
  j["total_ns"] = t.total_ns;
  j["median_total_ns"] = t.median_total_ns;
  Json steps = Json::array();
  for (const StepSpan& s : t.steps)
    steps.push_back(Json{{"step", s.step}, {"start_ns", s.start_ns}, {"end_ns", s.end_ns}});
  j["steps"] = steps;
  Json threads = Json::array();
  for (const ThreadSpan& s : t.threads)
    threads.push_back(Json{{"step", s.step}, {"thread", s.thread}, {"start_ns", s.start_ns}, {"end_ns", s.end_ns}});
  j["threads"] = threads;
  Json records = Json::array();
  for (const KernelRecord& k : t.records) records.push_back(record_json(k));
  j["records"] = records;
  return j;
}

Timeline timeline_from(const Json& j, int steps, int iterations) {
  Timeline t;
  t.clock = json::string_at(j, "clock");
  timer_from(t.clock);  // one of the timers' names
  t.iterations = int_in(json::at(j, "iterations"), "timeline iterations", 1, iterations);
  t.iteration = int_in(json::at(j, "iteration"), "timeline iteration", 0, t.iterations - 1);
  t.choice = json::string_at(j, "choice");
  t.total_ns = figure_at(j, "total_ns");
  t.median_total_ns = figure_at(j, "median_total_ns");
  const auto& sa = json::array_at(j, "steps");
  if (sa.size() > static_cast<size_t>(steps)) throw Error("the timeline has more layer spans than the run has steps");
  std::vector<char> seen(static_cast<size_t>(steps), 0);
  for (const auto& sj : sa) {
    StepSpan s;
    s.step = int_in(json::at(sj, "step"), "timeline step", 0, steps - 1);
    if (seen[static_cast<size_t>(s.step)]++)
      throw Error("the timeline spans step " + std::to_string(s.step) + " twice");
    std::tie(s.start_ns, s.end_ns) = span_from(sj, "a timeline layer span");
    t.steps.push_back(s);
  }
  const auto& ta = json::array_at(j, "threads");
  if (ta.size() > static_cast<size_t>(steps) * kMaxThreads)
    throw Error("the timeline has more thread spans than " + std::to_string(kMaxThreads) + " threads per step");
  for (const auto& sj : ta) {
    ThreadSpan s;
    s.step = int_in(json::at(sj, "step"), "timeline thread step", 0, steps - 1);
    s.thread = int_in(json::at(sj, "thread"), "timeline thread", 0, kMaxThreads - 1);
    std::tie(s.start_ns, s.end_ns) = span_from(sj, "a timeline thread span");
    t.threads.push_back(s);
  }
  for (const auto& kj : json::array_at(j, "records")) t.records.push_back(record_from(kj, steps));
  return t;
}

// Reports written before timelines kept CUPTI's last iteration as "kernel_records" (ns from its first
// record): that is a timeline too, of the last iteration, with layer spans from the records.
std::optional<Timeline> timeline_from_old_records(const RunReport& r, std::vector<KernelRecord> records) {
  if (records.empty()) return std::nullopt;
  Timeline t;
  t.clock = to_string(TimerKind::cupti_kernel);
  t.iterations = r.config.iters;
  t.iteration = r.config.iters - 1;
  t.choice = "last iteration";
  std::vector<StepSpan> spans(r.steps.size());
  for (const KernelRecord& k : records) {
    if (k.step < 0) continue;
    StepSpan& s = spans[static_cast<size_t>(k.step)];
    if (s.step < 0) s = StepSpan{k.step, k.start_ns, k.end_ns};
    s.start_ns = std::min(s.start_ns, k.start_ns);
    s.end_ns = std::max(s.end_ns, k.end_ns);
  }
  for (const StepSpan& s : spans)
    if (s.step >= 0) t.steps.push_back(s);
  for (const KernelRecord& k : records)
    if (k.step >= 0) t.total_ns += static_cast<double>(k.duration_ns());
  t.median_total_ns = t.total_ns;  // unknown then: this iteration's own
  std::stable_sort(t.steps.begin(), t.steps.end(),
                   [](const StepSpan& a, const StepSpan& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  t.records = std::move(records);
  return t;
}

}  // namespace

// ---- reliability ----------------------------------------------------------------------------------------

Json reliability_json(const Reliability& rel) {
  Json findings = Json::array();
  for (const ReliabilityFinding& f : rel.findings)
    findings.push_back(Json{{"code", f.code},
                            {"verdict", to_string(f.verdict)},
                            {"reason", f.reason},
                            {"value", std::isfinite(f.value) ? f.value : 0.0},
                            {"limit", std::isfinite(f.limit) ? f.limit : 0.0}});
  return Json{{"verdict", to_string(rel.verdict())}, {"findings", findings}};
}

Reliability reliability_from_json(const Json& j) {
  Reliability rel;
  for (const Json& fj : json::array_at(j, "findings")) {
    ReliabilityFinding f;
    f.code = json::string_at(fj, "code");
    if (f.code.empty()) throw Error("a reliability finding has an empty code");
    f.verdict = parse_verdict(json::string_at(fj, "verdict"));
    if (f.verdict == Verdict::ok) throw Error("reliability finding '" + f.code + "' has the verdict ok");
    f.reason = json::string_at(fj, "reason");
    f.value = json::number_at(fj, "value");
    f.limit = json::number_at(fj, "limit");
    if (!std::isfinite(f.value) || !std::isfinite(f.limit))
      throw Error("reliability finding '" + f.code + "': value or limit is not finite");
    rel.findings.push_back(std::move(f));
  }
  // The stored verdict must be the one the findings give: a hand-edited "ok" over an unreliable finding
  // would hide it.
  const std::string stored = json::string_at(j, "verdict");
  if (parse_verdict(stored) != rel.verdict())
    throw Error("reliability verdict '" + stored + "' does not match its findings ('" + to_string(rel.verdict()) +
                "')");
  return rel;
}

// ---- the GPU ------------------------------------------------------------------------------------------

Json gpu_record_json(const GpuRecord& g) {
  Json j = Json{{"index", g.index},
                {"uuid", g.uuid},
                {"name", g.name},
                {"pci_bus_id", g.pci_bus_id},
                {"sm_clock_max_mhz", g.sm_clock_max_mhz},
                {"sm_clock_applications_mhz", g.sm_clock_applications_mhz},
                {"memory_clock_mhz", g.memory_clock_mhz},
                {"power_limit_w", g.power_limit_w}};
  if (!g.nvml_problem.empty()) j["nvml_problem"] = g.nvml_problem;
  return j;
}

GpuRecord gpu_record_from_json(const Json& j) {
  constexpr int kMaxClock = 100000;  // MHz: far beyond any GPU; a bound for a file's claim
  GpuRecord g;
  g.index = int_in(json::at(j, "index"), "gpu index", 0, 1023);
  g.uuid = one_line(json::string_at(j, "uuid"));
  g.name = one_line(json::string_at(j, "name"));
  g.pci_bus_id = one_line(json::string_at(j, "pci_bus_id"));
  g.sm_clock_max_mhz = int_in(json::at(j, "sm_clock_max_mhz"), "gpu sm_clock_max_mhz", -1, kMaxClock);
  g.sm_clock_applications_mhz =
      int_in(json::at(j, "sm_clock_applications_mhz"), "gpu sm_clock_applications_mhz", -1, kMaxClock);
  g.memory_clock_mhz = int_in(json::at(j, "memory_clock_mhz"), "gpu memory_clock_mhz", -1, kMaxClock);
  g.power_limit_w = json::number_at(j, "power_limit_w");
  if (!(g.power_limit_w == -1 || (std::isfinite(g.power_limit_w) && g.power_limit_w > 0 && g.power_limit_w < 1e6)))
    throw Error("gpu power_limit_w " + std::to_string(g.power_limit_w) + " is neither -1 nor a power in watts");
  if (const Json* p = json::find(j, "nvml_problem")) g.nvml_problem = one_line(json::as_string(*p));
  return g;
}

// ---- resolved options -------------------------------------------------------------------------------

Json resolved_options_json(const std::vector<ResolvedOption>& options) {
  Json j = Json::object();
  for (const ResolvedOption& o : options)
    j[o.option] = Json{{"requested", o.requested}, {"resolved", o.resolved}, {"why", o.why}};
  return j;
}

std::vector<ResolvedOption> resolved_options_from_json(const Json& value) {
  if (!value.is_object()) throw Error("resolved_options is not an object");
  std::vector<ResolvedOption> out;
  for (const auto& [name, entry] : value.items()) {
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr || spec->choices.empty())
      throw Error("resolved_options: '" + one_line(name) + "' is not an option with choices");
    ResolvedOption o{name, json::string_at(entry, "requested"), json::string_at(entry, "resolved"),
                     one_line(json::string_at(entry, "why"))};
    for (const std::string* v : {&o.requested, &o.resolved})
      if (std::find(spec->choices.begin(), spec->choices.end(), *v) == spec->choices.end())
        throw Error("resolved_options: " + name + " '" + one_line(*v) + "' is not one of its choices");
    out.push_back(std::move(o));
  }
  return out;
}

// ---- CSV ------------------------------------------------------------------------------------------------

namespace {

// Kernels launched per iteration: a whole number as an integer ("3"), an average as one with two decimals
// ("2.50"); empty where the timer recorded no kernels (the host clock, cudaEvent).
std::string kernels_text(const StepProfile& p) {
  if (p.kernels_per_iter == 0 && p.kernel_names.empty()) return "";
  if (p.kernels_per_iter == std::floor(p.kernels_per_iter))
    return std::to_string(static_cast<int64_t>(p.kernels_per_iter));
  return fixed(p.kernels_per_iter, 2);
}

}  // namespace

std::string report_csv(const std::vector<RunReport>& reports) {
  std::ostringstream out;
  out << "run_id,backend,precision,batch,input_hw,layer_index,layer_name,kind,block,fused_group,step,variant,"
         "output_shape,params,macs,bytes,timer,n,p10_ns,median_ns,p90_ns,p99_ns,mean_ns,std_ns,min_ns,max_ns,share,"
         "gflop_s,gbytes_s,event_median_ns,timers_disagree,kernels_per_iter,kernel_names,grid,block_dim,"
         "diff_reference,max_abs_err,rel_l2_err,cosine,activation_bytes,weight_bytes,reliability\n";
  for (const RunReport& r : reports) {
    const std::string hw = std::to_string(r.config.height) + "x" + std::to_string(r.config.width);
    for (const LayerProfile& lp : r.layers) {
      const Layer& l = r.topology.at(static_cast<size_t>(lp.layer));
      const LayerStats& st = r.layer_stats.at(static_cast<size_t>(lp.layer));
      const StepProfile& p = r.steps.at(static_cast<size_t>(lp.step));
      // A fused step's time is written once, on its first layer, so that summing the column never
      // counts it twice; the other layers name the group.
      const bool carries_time = p.layers.front() == lp.layer;
      // Every text field is quoted where needed: a report read back from a file may carry any text.
      out << csv_quote(r.run_id) << ',' << csv_quote(r.backend) << ',' << to_string(r.config.precision) << ','
          << r.config.batch << ',' << hw << ',' << l.index << ',' << csv_quote(l.name) << ',' << to_string(l.kind)
          << ',' << csv_quote(l.block_name) << ',' << csv_quote(lp.fused_group) << ',' << p.step << ','
          << csv_quote(p.variant) << ',' << st.output.str() << ',' << st.params << ',' << st.macs << ',' << st.bytes
          << ',' << csv_quote(r.timer) << ',';
      if (carries_time) {
        const Summary& s = p.time_ns;
        out << s.n << ',' << ns_int(s.p10) << ',' << ns_int(s.median) << ',' << ns_int(s.p90) << ',' << ns_int(s.p99)
            << ',' << ns_int(s.mean) << ',' << ns_int(s.stddev) << ',' << ns_int(s.min) << ',' << ns_int(s.max) << ','
            << fixed(p.share, 6) << ',' << fixed(p.gflops, 3) << ',' << fixed(p.gbytes_per_s, 3) << ','
            << (p.event_ns ? ns_int(p.event_ns->median) : "") << ','
            << (p.event_ns ? (p.timers_disagree ? "1" : "0") : "") << ',' << kernels_text(p) << ','
            << csv_quote(join(p.kernel_names, ";")) << ',' << csv_quote(p.grid) << ',' << csv_quote(p.block) << ',';
      } else {
        out << ",,,,,,,,,,,,,,,,,,";  // the 18 fields above, empty
      }
      if (r.diff) {
        const LayerDiff& d = r.diff->layers.at(static_cast<size_t>(lp.layer));
        out << csv_quote(r.diff->reference) << ',';
        if (d.compared)
          out << sci(d.error.max_abs) << ',' << sci(d.error.rel_l2) << ',' << fixed(d.error.cosine, 9);
        else
          out << ",,";
      } else {
        out << ",,,";
      }
      // The run's verdict (ok, unknown, noted, unreliable) on every row; the reasons are in the JSON report.
      out << ',' << st.activation_bytes << ',' << st.params * static_cast<int64_t>(sizeof(float)) << ','
          << to_string(r.reliability.verdict()) << "\n";
    }
  }
  return out.str();
}

// ---- JSON -----------------------------------------------------------------------------------------------

Json layer_json(const Layer& l, const LayerStats& st) {
  Json lj = Json::object();
  lj["index"] = l.index;
  lj["kind"] = to_string(l.kind);
  lj["name"] = l.name;
  lj["source_name"] = l.source_name;
  lj["description"] = describe(l);
  lj["block"] = l.block;
  lj["block_name"] = l.block_name;
  lj["inputs"] = ints_json(l.inputs);
  if (l.kind == LayerKind::Conv2d) {
    const ConvParams& c = l.conv;
    lj["conv"] = Json::array({c.in_channels, c.out_channels, c.kernel_h, c.kernel_w, c.stride_h, c.stride_w, c.pad_top,
                              c.pad_left, c.pad_bottom, c.pad_right, c.dilation_h, c.dilation_w, c.groups});
  }
  if (l.kind == LayerKind::Linear) lj["features"] = Json::array({l.in_features, l.out_features});
  if (l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU) {
    lj["clip_min"] = static_cast<double>(l.clip_min);
    lj["clip_max"] = std::isfinite(l.clip_max) ? Json(static_cast<double>(l.clip_max)) : Json();
  }
  lj["output_shape"] = Json::array({st.output.n, st.output.c, st.output.h, st.output.w});
  lj["params"] = st.params;
  lj["macs"] = st.macs;
  lj["activation_bytes"] = st.activation_bytes;
  lj["weight_bytes"] = st.params * static_cast<int64_t>(sizeof(float));  // float32 as imported
  lj["bytes"] = st.bytes;
  return lj;
}

ReportModel report_model(const Model& model, const std::string& found_by) {
  return ReportModel{model.source,    found_by,          model.checksum,
                     model.synthetic, model.num_classes, static_cast<int64_t>(model.layers.size()),
                     model.warnings};
}

Json model_json(const ReportModel& model) {
  return Json{{"source", model.source},       {"found_by", model.found_by}, {"checksum", model.checksum},
              {"synthetic", model.synthetic}, {"classes", model.classes},   {"layers", model.layers},
              {"warnings", model.warnings}};
}

Json report_json(const RunReport& r) {
  Json j = Json::object();
  Json meta = Json::object();
  meta["schema_version"] = r.schema_version;
  meta["run_id"] = r.run_id;
  meta["backend"] = r.backend;
  meta["backend_description"] = r.backend_description;
  meta["precision"] = to_string(r.config.precision);
  meta["timer"] = r.timer;
  meta["batch"] = r.config.batch;
  meta["input_height"] = r.config.height;
  meta["input_width"] = r.config.width;
  meta["warmup"] = r.config.warmup;
  meta["iterations"] = r.config.iters;
  meta["cpu_threads"] = r.config.cpu_threads;          // the cpu backends' threads as run; 0 for GPU backends
  meta["cuda_graph"] = r.execution == "graph replay";  // of the per-layer phase
  if (r.backend == "cudnn")  // the cudnn backend's options (absent in older reports and for other backends)
    meta["cudnn_options"] = Json{{"variant", to_string(r.config.cudnn.variant)},
                                 {"graph", to_string(r.config.cudnn.graph)},
                                 {"layout", to_string(r.config.cudnn.layout)}};
  meta["execution"] = r.execution;
  if (r.kernels_per_run >= 0) meta["kernels_per_run"] = r.kernels_per_run;  // of an un-instrumented run
  // What the backend made of options that ask it to choose (cuda-fusion auto -> block); absent where none did
  if (!r.resolved_options.empty()) meta["resolved_options"] = resolved_options_json(r.resolved_options);
  meta["device"] = r.device;
  if (r.gpu.index >= 0) meta["gpu"] = gpu_record_json(r.gpu);  // GPU runs; absent in older reports
  if (!r.origin.target.empty())                                // a remote run's target (absent for a local run)
    meta["target"] = Json{{"name", r.origin.target}, {"host", r.origin.host}, {"slurm_job", r.origin.slurm_job}};
  meta["sm_clock_mhz_start"] = r.sm_clock_mhz_start;
  meta["sm_clock_mhz_end"] = r.sm_clock_mhz_end;
  meta["driver"] = r.driver;
  meta["cuda_runtime"] = r.cuda_runtime;
  meta["cudnn"] = r.cudnn;
  meta["date"] = r.date;
  meta["commit"] = r.commit;
  meta["model"] = r.model_source;
  meta["model_checksum"] = r.model_checksum;
  if (!r.model_data_files.empty()) {  // only for a model with external data (and absent in older reports)
    Json files = Json::array();
    for (const ExternalDataFile& f : r.model_data_files)
      files.push_back(Json{{"location", f.location}, {"checksum", f.checksum}});
    meta["model_data_files"] = files;
  }
  meta["model_synthetic"] = r.model_synthetic;
  meta["input"] = r.config.input_name;
  meta["input_checksum"] = r.input_checksum;
  meta["percentile_method"] = "linear interpolation between closest ranks (Hyndman-Fan type 7)";
  // Every per-run option (mnv2/options.h) with its value and where it came from, in table order.
  // The values that ran (the configuration's fields) with the sources the front end gave them.
  ProfileConfig ran = r.config;
  ran.backend = r.backend;
  const OptionValues values = options_of(ran);
  Json options = Json::object();
  for (const OptionSpec& s : option_table())
    if (s.per_run)
      options[s.name] = Json{{"value", values.value(s.name)}, {"source", to_string(values.at(s.name).source)}};
  meta["options"] = options;
  j["metadata"] = meta;

  j["memory"] = r.memory;

  Json e2e;
  e2e["host"] = summary_json(r.end_to_end.host_ms, "ms");
  if (r.end_to_end.gpu_ms) e2e["gpu"] = summary_json(*r.end_to_end.gpu_ms, "ms");
  e2e["images_per_s"] = r.end_to_end.images_per_s;
  e2e["sum_of_layer_medians_ms"] = r.sum_of_steps_ms;
  e2e["gap_ms"] = r.gap_ms;
  j["end_to_end"] = e2e;

  Json layers = Json::array();
  for (size_t i = 0; i < r.topology.size(); ++i) {
    const Layer& l = r.topology[i];
    const LayerStats& st = r.layer_stats.at(i);
    Json lj = layer_json(l, st);
    lj["step"] = r.layers.at(i).step;
    lj["fused_group"] = r.layers.at(i).fused_group;
    if (r.diff && i < r.diff->layers.size() && r.diff->layers[i].compared)
      lj["diff"] = error_json(r.diff->layers[i].error);
    layers.push_back(lj);
  }
  j["layers"] = layers;

  Json steps = Json::array();
  for (const StepProfile& p : r.steps) {
    Json sj = Json::object();
    sj["step"] = p.step;
    sj["name"] = p.name;
    sj["layers"] = ints_json(p.layers);
    sj["variant"] = p.variant;
    sj["time"] = summary_json(p.time_ns, "ns");
    if (p.event_ns) sj["event_time"] = summary_json(*p.event_ns, "ns");
    sj["timers_disagree"] = p.timers_disagree;
    sj["kernel_names"] = strings_json(p.kernel_names);
    sj["kernels_per_iteration"] = p.kernels_per_iter;
    sj["grid"] = p.grid;
    sj["block"] = p.block;
    sj["macs"] = p.macs;
    sj["bytes"] = p.bytes;
    sj["gflop_s"] = p.gflops;
    sj["gbytes_s"] = p.gbytes_per_s;
    sj["share"] = p.share;
    steps.push_back(sj);
  }
  j["steps"] = steps;

  auto totals = [](const std::vector<GroupTotal>& groups) {
    Json a = Json::array();
    for (const auto& g : groups) {
      Json gj = Json::object();
      gj["name"] = g.name;
      gj["median_ns"] = g.median_ns;
      gj["share"] = g.share;
      gj["macs"] = g.macs;
      gj["layers"] = g.layers;
      gj["steps"] = g.steps;
      gj["fused_layers"] = g.fused_layers;
      a.push_back(gj);
    }
    return a;
  };
  j["per_kind"] = totals(r.per_kind);
  j["per_block"] = totals(r.per_block);

  if (r.timeline) j["timeline"] = timeline_json(*r.timeline);
  j["warnings"] = strings_json(r.warnings);
  j["reliability"] = reliability_json(r.reliability);

  if (r.diff) {
    const DiffReport& d = *r.diff;
    Json dj = Json::object();
    dj["backend"] = d.backend;
    dj["reference"] = d.reference;
    dj["logits"] = error_json(d.logits);
    dj["top5_agree"] = d.top5_agree;
    dj["top5"] = ints_json(d.top5);
    dj["reference_top5"] = ints_json(d.reference_top5);
    dj["first_divergent_layer"] = d.first_divergent_layer;
    dj["threshold_rel_l2"] = d.threshold;
    if (!d.outputs_plan.empty()) dj["outputs_plan"] = d.outputs_plan;
    Json compared = Json::array();
    for (const LayerDiff& ld : d.layers) compared.emplace_back(ld.compared);
    dj["compared"] = compared;
    j["diff"] = dj;
  }
  return j;
}

Json reports_json(const std::vector<RunReport>& reports) {
  Json j = Json::object();
  j["schema"] = "mnv2.report";
  j["schema_version"] = kReportSchemaVersion;
  Json runs = Json::array();
  for (const auto& r : reports) runs.push_back(report_json(r));
  j["runs"] = runs;
  return j;
}

namespace {

// The report's options object: each value checked against the table and applied to the run's configuration
// (the cuda options exist only here). A report written before it: the options its metadata implies, source
// "unknown".
void read_options(const Json& m, RunReport& r) {
  const Json* o = json::find(m, "options");
  if (o == nullptr) {
    r.options = options_of(r.config);
    OptionValues unknown;
    for (const auto& [name, v] : r.options.all()) unknown.assign(name, v.value, OptionSource::unknown);
    r.options = unknown;
    return;
  }
  if (!o->is_object()) throw Error("json: 'options' is not an object");
  OptionValues values;
  OptionSource backend_source = OptionSource::unknown;
  for (const auto& [name, entry] : o->items()) {
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr || !spec->per_run) continue;  // an option of a newer program: not this one's to judge
    if (name == "backend") {  // the report's backend field says which (options_of); its source is kept
      backend_source = parse_option_source(json::string_at(entry, "source"));
      continue;
    }
    try {
      values.assign(name, json::string_at(entry, "value"), parse_option_source(json::string_at(entry, "source")));
    } catch (const Error& e) {
      throw Error("json: 'options." + name + "': " + e.what());
    }
  }
  const std::vector<std::string>& backends = find_option("backend")->choices;
  if (std::find(backends.begin(), backends.end(), r.backend) != backends.end())
    values.assign("backend", r.backend, backend_source);
  r.options = values;
  try {
    const PrepareConfig p = prepare_config_of(values, {r.config.height, r.config.width});
    r.config.cuda = p.cuda;
    r.config.cudnn = p.cudnn;
  } catch (const UsageError& e) {
    throw Error(std::string("json: 'options': ") + e.what());
  }
  r.config.options = values;
}

RunReport report_from(const Json& j) {
  RunReport r;
  const Json& m = json::at(j, "metadata");
  r.schema_version = int_in(json::at(m, "schema_version"), "schema_version", 1, std::numeric_limits<int>::max());
  if (r.schema_version > kReportSchemaVersion)
    throw Error("report schema version " + std::to_string(r.schema_version) + " is newer than this program reads (" +
                std::to_string(kReportSchemaVersion) + ")");
  r.run_id = json::string_at(m, "run_id");
  r.backend = json::string_at(m, "backend");
  r.backend_description = json::string_at(m, "backend_description");
  r.config.backend = r.backend;
  r.config.precision = parse_precision(json::string_at(m, "precision"));
  r.timer = json::string_at(m, "timer");
  r.config.timer = timer_from(r.timer);
  r.config.batch = int_in(json::at(m, "batch"), "batch", 1, kMaxDim);
  r.config.height = int_in(json::at(m, "input_height"), "input_height", 1, kMaxDim);
  r.config.width = int_in(json::at(m, "input_width"), "input_width", 1, kMaxDim);
  r.config.warmup = int_in(json::at(m, "warmup"), "warmup", 0, std::numeric_limits<int>::max());
  r.config.iters = int_in(json::at(m, "iterations"), "iterations", 1, std::numeric_limits<int>::max());
  r.config.input_name = json::string_at(m, "input");
  if (const Json* t = json::find(m, "cpu_threads"))  // absent in older reports: unknown, read as 0
    r.config.cpu_threads = int_in(*t, "cpu_threads", 0, 4096);
  if (const Json* o = json::find(m, "cudnn_options")) {  // absent in older reports: the defaults
    try {
      r.config.cudnn.variant = parse_cudnn_variant(json::string_at(*o, "variant"));
      r.config.cudnn.graph = parse_cudnn_graph(json::string_at(*o, "graph"));
      r.config.cudnn.layout = parse_cudnn_layout(json::string_at(*o, "layout"));
    } catch (const UsageError& e) {
      throw Error(std::string("json: 'cudnn_options': ") + e.what());
    }
  }
  r.device = json::string_at(m, "device");
  if (const Json* g = json::find(m, "gpu")) r.gpu = gpu_record_from_json(*g);
  if (const Json* t = json::find(m, "target")) {
    r.origin.target = json::string_at(*t, "name");
    r.origin.host = json::string_at(*t, "host");
    r.origin.slurm_job = json::string_at(*t, "slurm_job");
    if (r.origin.target.empty()) throw Error("json: 'target': an empty name");
  }
  r.sm_clock_mhz_start = int_from(json::at(m, "sm_clock_mhz_start"), "sm_clock_mhz_start");
  r.sm_clock_mhz_end = int_from(json::at(m, "sm_clock_mhz_end"), "sm_clock_mhz_end");
  r.driver = json::string_at(m, "driver");
  r.cuda_runtime = json::string_at(m, "cuda_runtime");
  r.cudnn = json::string_at(m, "cudnn");
  r.date = json::string_at(m, "date");
  r.commit = json::string_at(m, "commit");
  if (const Json* e = json::find(m, "execution")) r.execution = json::as_string(*e);  // absent in older reports
  if (json::find(m, "kernels_per_run")) {  // absent in older reports and where the backend does not count them
    const int64_t k = json::int_at(m, "kernels_per_run");
    if (k < 0 || k > (int64_t{1} << 30))
      throw Error("json: 'kernels_per_run' " + std::to_string(k) + " is out of range");
    r.kernels_per_run = k;
  }
  if (const Json* o = json::find(m, "resolved_options")) r.resolved_options = resolved_options_from_json(*o);
  r.config.graph_replay = r.execution == "graph replay";
  read_options(m, r);
  r.model_source = json::string_at(m, "model");
  r.model_checksum = json::string_at(m, "model_checksum");
  if (json::find(m, "model_data_files"))
    for (const Json& f : json::array_at(m, "model_data_files"))
      r.model_data_files.push_back({json::string_at(f, "location"), json::string_at(f, "checksum")});
  r.model_synthetic = json::bool_at(m, "model_synthetic");
  r.input_checksum = json::string_at(m, "input_checksum");

  r.memory = json::at(j, "memory").get<MemoryReport>();

  const Json& e2e = json::at(j, "end_to_end");
  r.end_to_end.host_ms = summary_from(json::at(e2e, "host"), "ms");
  if (const Json* g = json::find(e2e, "gpu")) r.end_to_end.gpu_ms = summary_from(*g, "ms");
  r.end_to_end.images_per_s = figure_at(e2e, "images_per_s");
  r.sum_of_steps_ms = figure_at(e2e, "sum_of_layer_medians_ms");
  r.gap_ms = json::number_at(e2e, "gap_ms");  // host time minus the layers' sum: may be negative
  if (!std::isfinite(r.gap_ms)) throw Error("gap_ms is not finite");

  const auto& steps = json::array_at(j, "steps");
  for (const auto& sj : steps) {
    StepProfile p;
    p.step = int_from(json::at(sj, "step"), "step");
    if (p.step != static_cast<int>(r.steps.size())) throw Error("steps out of order");
    p.name = json::string_at(sj, "name");
    p.layers = ints_from(json::at(sj, "layers"));
    if (p.layers.empty()) throw Error("step " + std::to_string(p.step) + " covers no layer");
    p.variant = json::string_at(sj, "variant");
    p.time_ns = summary_from(json::at(sj, "time"), "ns");
    if (const Json* e = json::find(sj, "event_time")) p.event_ns = summary_from(*e, "ns");
    p.timers_disagree = json::bool_at(sj, "timers_disagree");
    p.kernel_names = strings_from(json::at(sj, "kernel_names"));
    p.kernels_per_iter = figure_at(sj, "kernels_per_iteration");
    p.grid = json::string_at(sj, "grid");
    p.block = json::string_at(sj, "block");
    p.macs = count_at(sj, "macs");
    p.bytes = count_at(sj, "bytes");
    p.gflops = figure_at(sj, "gflop_s");
    p.gbytes_per_s = figure_at(sj, "gbytes_s");
    p.share = figure_at(sj, "share");
    if (p.share > 1.000001)
      throw Error("step " + std::to_string(p.step) + ": share " + std::to_string(p.share) + " is over 1");
    r.steps.push_back(std::move(p));
  }

  const auto& layers = json::array_at(j, "layers");
  for (const auto& lj : layers) {
    Layer l;
    l.index = int_from(json::at(lj, "index"), "layer index");
    if (l.index != static_cast<int>(r.topology.size())) throw Error("layers out of order");
    l.kind = kind_from(json::string_at(lj, "kind"));
    l.name = json::string_at(lj, "name");
    l.source_name = json::string_at(lj, "source_name");
    l.block = int_in(json::at(lj, "block"), "block", -1, std::numeric_limits<int>::max());
    l.block_name = json::string_at(lj, "block_name");
    l.inputs = ints_from(json::at(lj, "inputs"));
    for (int in : l.inputs)
      if (in < -1 || in >= l.index)
        throw Error("layer " + std::to_string(l.index) + " reads layer " + std::to_string(in) +
                    ", which is not before it");
    if (const Json* c = json::find(lj, "conv")) {
      std::vector<int> v = ints_from(*c);
      if (v.size() != 13) throw Error("layer " + std::to_string(l.index) + ": conv attributes need 13 values");
      l.conv = ConvParams{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]};
    }
    if (const Json* f = json::find(lj, "features")) {
      std::vector<int> v = ints_from(*f);
      if (v.size() != 2) throw Error("layer " + std::to_string(l.index) + ": features need 2 values");
      l.in_features = v[0];
      l.out_features = v[1];
    }
    if (const Json* c = json::find(lj, "clip_min")) l.clip_min = float_from(*c, "clip_min");
    if (const Json* c = json::find(lj, "clip_max"))
      l.clip_max = c->is_null() ? std::numeric_limits<float>::infinity() : float_from(*c, "clip_max");
    LayerStats st;
    const auto& shape = json::array_at(lj, "output_shape");
    if (shape.size() != 4) throw Error("layer " + std::to_string(l.index) + ": output_shape needs 4 values");
    st.output = Shape{int_in(shape[0], "output_shape", 1, kMaxDim), int_in(shape[1], "output_shape", 1, kMaxDim),
                      int_in(shape[2], "output_shape", 1, kMaxDim), int_in(shape[3], "output_shape", 1, kMaxDim)};
    st.params = count_at(lj, "params");
    st.macs = count_at(lj, "macs");
    st.activation_bytes = count_at(lj, "activation_bytes");
    st.bytes = count_at(lj, "bytes");
    LayerProfile lp;
    lp.layer = l.index;
    lp.step = int_from(json::at(lj, "step"), "step");
    if (lp.step < 0 || lp.step >= static_cast<int>(r.steps.size()))
      throw Error("layer " + std::to_string(l.index) + " names step " + std::to_string(lp.step) + ", which is absent");
    lp.fused_group = json::string_at(lj, "fused_group");
    r.topology.push_back(std::move(l));
    r.layer_stats.push_back(st);
    r.layers.push_back(lp);
  }
  for (const auto& p : r.steps)
    for (int l : p.layers)
      if (l < 0 || l >= static_cast<int>(r.layers.size()))
        throw Error("step " + std::to_string(p.step) + " covers layer " + std::to_string(l) + ", which is absent");

  auto totals_from = [](const Json& a) {
    std::vector<GroupTotal> out;
    for (const auto& gj : json::as_array(a)) {
      GroupTotal g;
      g.name = json::string_at(gj, "name");
      g.median_ns = figure_at(gj, "median_ns");
      g.share = figure_at(gj, "share");
      g.macs = count_at(gj, "macs");
      // Absent in reports written before these counts existed (same schema version: they are additions).
      const auto count = [&gj](const char* key) {
        const Json* v = json::find(gj, key);
        const int n = v ? int_from(*v, key) : 0;
        if (n < 0) throw Error(std::string(key) + " " + std::to_string(n) + " is negative");
        return n;
      };
      g.layers = count("layers");
      g.steps = count("steps");
      g.fused_layers = count("fused_layers");
      out.push_back(g);
    }
    return out;
  };
  r.per_kind = totals_from(json::at(j, "per_kind"));
  r.per_block = totals_from(json::at(j, "per_block"));
  // Reports written before the totals counted layers, steps and fused layers: the same totals, derived
  // again from the topology and the steps, so a fused-away kind does not read as missing.
  const bool counted = !r.per_kind.empty() && r.per_kind.front().layers > 0;
  if (!counted) compute_group_totals(r);

  if (const Json* tj = json::find(j, "timeline")) {
    try {
      r.timeline = timeline_from(*tj, static_cast<int>(r.steps.size()), r.config.iters);
    } catch (const Error& e) {
      throw Error(std::string("timeline: ") + e.what());
    }
  } else if (const Json* old_records = json::find(j, "kernel_records")) {
    std::vector<KernelRecord> records;
    for (const auto& kj : json::as_array(*old_records))
      records.push_back(record_from(kj, static_cast<int>(r.steps.size())));
    r.timeline = timeline_from_old_records(r, std::move(records));
  }
  r.warnings = strings_from(json::at(j, "warnings"));
  if (const Json* rel = json::find(j, "reliability"))  // absent in older reports: no findings
    r.reliability = reliability_from_json(*rel);

  if (const Json* dj = json::find(j, "diff")) {
    DiffReport d;
    d.backend = json::string_at(*dj, "backend");
    d.reference = json::string_at(*dj, "reference");
    d.logits = error_from(json::at(*dj, "logits"));
    d.top5_agree = json::bool_at(*dj, "top5_agree");
    d.top5 = ints_from(json::at(*dj, "top5"));
    d.reference_top5 = ints_from(json::at(*dj, "reference_top5"));
    d.first_divergent_layer = int_in(json::at(*dj, "first_divergent_layer"), "first_divergent_layer", -1,
                                     static_cast<int>(layers.size()) - 1);
    d.threshold = figure_at(*dj, "threshold_rel_l2");
    if (json::find(*dj, "outputs_plan")) d.outputs_plan = json::string_at(*dj, "outputs_plan");
    for (const std::vector<int>* top : {&d.top5, &d.reference_top5})
      for (int c : *top)
        if (c < 0) throw Error("diff top-5 names class " + std::to_string(c));
    const auto& compared = json::array_at(*dj, "compared");
    if (compared.size() != layers.size()) throw Error("diff covers a different number of layers");
    for (size_t i = 0; i < layers.size(); ++i) {
      LayerDiff ld;
      ld.layer = static_cast<int>(i);
      ld.compared = json::as_bool(compared[i]);
      if (ld.compared) ld.error = error_from(json::at(layers[i], "diff"));
      d.layers.push_back(ld);
    }
    r.diff = std::move(d);
  }
  return r;
}

}  // namespace

std::vector<RunReport> reports_from_json(const Json& value) {
  const Json* schema = value.is_object() ? json::find(value, "schema") : nullptr;
  if (!schema || !schema->is_string() || json::as_string(*schema) != "mnv2.report")
    throw Error("not an mnv2 report (no \"schema\": \"mnv2.report\")");
  const int64_t version = json::int_at(value, "schema_version");
  if (version < 1) throw Error("report schema version " + std::to_string(version) + " is not a version (1 or more)");
  if (version > kReportSchemaVersion)
    throw Error("report schema version " + std::to_string(version) + " is newer than this program reads (" +
                std::to_string(kReportSchemaVersion) + "); update mnv2");
  std::vector<RunReport> out;
  const auto& runs = json::array_at(value, "runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    try {
      out.push_back(report_from(runs[i]));
    } catch (const Error& e) {
      throw Error("run " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}

std::vector<RunReport> read_reports_file(const std::string& path) {
  try {
    const Json v = json::parse_file(path, inputs::kReport);
    try {
      return reports_from_json(v);
    } catch (const std::bad_alloc&) {
      throw Error(path + ": not enough memory to read the report");
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  } catch (const Error& e) {
    throw Error(one_line(e.what()));
  }
}

// ---- trace ----------------------------------------------------------------------------------------------

// One process per run; one thread track per timeline track (GPU streams, or host and its worker threads),
// then the median summary. Layer spans and their records share a track, so Perfetto and chrome://tracing
// nest the records under the layer by time containment (timeline_layout keeps them inside).
std::string trace_json(const std::vector<RunReport>& reports) {
  Json events = Json::array();
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const RunReport& r = reports[ri];
    const int pid = static_cast<int>(ri) + 1;
    const TimelineLayout layout = timeline_layout(r);
    auto meta = [&](const char* what, int tid, const Json& args) {
      Json e = Json::object();
      e["name"] = what;
      e["ph"] = "M";
      e["pid"] = pid;
      if (tid > 0) e["tid"] = tid;
      e["args"] = args;
      events.push_back(e);
    };
    std::string process =
        r.backend + " (" + r.timer + ", batch " + std::to_string(r.config.batch) +
        "): " + (layout.has_timeline ? layout.description : "no timeline in this report, median summary only");
    if (layout.clamped > 0) process += "; " + std::to_string(layout.clamped) + " records clamped into their layer span";
    meta("process_name", 0, Json{{"name", process}});
    meta("process_sort_index", 0, Json{{"sort_index", pid}});
    for (size_t ti = 0; ti < layout.tracks.size(); ++ti) {
      const TimelineTrack& track = layout.tracks[ti];
      const int tid = static_cast<int>(ti) + 1;
      meta("thread_name", tid, Json{{"name", track.name}});
      meta("thread_sort_index", tid, Json{{"sort_index", tid}});
      for (const TimelineBar& b : track.bars) {
        Json e = Json::object();
        e["name"] = b.name;
        e["cat"] = b.category;
        e["ph"] = "X";
        e["ts"] = static_cast<double>(b.start_ns) / 1000.0;  // microseconds, the format's unit
        e["dur"] = static_cast<double>(b.duration_ns()) / 1000.0;
        e["pid"] = pid;
        e["tid"] = tid;
        Json a = Json::object();
        a["step"] = b.step;
        if (b.step >= 0 && b.step < static_cast<int>(r.steps.size())) {
          const StepProfile& p = r.steps[static_cast<size_t>(b.step)];
          a["layers"] = ints_json(p.layers);
          a["step_name"] = p.name;
          a["variant"] = p.variant;
          if (b.category == "layer" || b.category == "summary") a["median_ns"] = p.time_ns.median;
        }
        if (b.category == "kernel") {
          a["grid"] = Json::array({b.grid[0], b.grid[1], b.grid[2]});
          a["block"] = Json::array({b.block[0], b.block[1], b.block[2]});
        } else if (b.category == "memcpy" || b.category == "memset") {
          a["bytes"] = b.bytes;
        }
        if (b.category == "summary") a["timing"] = "median duration, laid end to end (not a timestamp)";
        e["args"] = a;
        events.push_back(e);
      }
    }
  }
  Json j = Json::object();
  j["traceEvents"] = events;
  j["displayTimeUnit"] = "ns";
  return json::dump(j, -1) + "\n";
}

std::string reports_json_text(const std::vector<RunReport>& reports) {
  return json::dump(reports_json(reports), 1) + "\n";
}

void write_csv_report(const std::string& path, const std::vector<RunReport>& reports) {
  write_output_file(path, report_csv(reports));
}
void write_json_report(const std::string& path, const std::vector<RunReport>& reports) {
  write_output_file(path, reports_json_text(reports));
}
void write_trace(const std::string& path, const std::vector<RunReport>& reports) {
  write_output_file(path, trace_json(reports));
}

std::string origin_text(const RunOrigin& o) {
  if (o.target.empty()) return {};
  std::string where = o.host;
  if (!o.slurm_job.empty()) where += (where.empty() ? "" : ", ") + std::string("Slurm job ") + o.slurm_job;
  return "on " + o.target + (where.empty() ? std::string() : " (" + where + ")");
}

}  // namespace mnv2
