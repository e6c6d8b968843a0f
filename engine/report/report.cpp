// RunReport serialisation: CSV, JSON (read back too) and Chrome/Perfetto traces (see mnv2/report.h).
#include "mnv2/report.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "mnv2/atomic_file.h"
#include "mnv2/error.h"
#include "mnv2/profiler.h"

namespace mnv2 {

namespace {

// A report of a few runs of a 99-layer network is well under a megabyte; a file far larger than this is
// not one, and parsing it would hold many times its size in memory.
constexpr uintmax_t kMaxReportBytes = uintmax_t{64} << 20;

// ---- small helpers ------------------------------------------------------------------------------------

std::string csv_field(const std::string& s) { return csv_quote(s); }

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
int int_from(const json::Value& v, const char* what) {
  int64_t x = 0;
  try {
    x = v.as_int();
  } catch (const Error& e) {
    throw Error(json::named_error(what, e.what()));
  }
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    throw Error(std::string(what) + " " + std::to_string(x) + " is out of range");
  return static_cast<int>(x);
}

// Clip bounds are floats; a double beyond float's range cannot be converted (undefined behaviour).
float float_from(const json::Value& v, const char* what) {
  double x = 0;
  try {
    x = v.as_number();
  } catch (const Error& e) {
    throw Error(json::named_error(what, e.what()));
  }
  if (std::fabs(x) > std::numeric_limits<float>::max()) throw Error(std::string(what) + " is out of range");
  return static_cast<float>(x);
}

json::Value summary_json(const Summary& s, const std::string& unit) {
  json::Value j;
  j.set("n", s.n);
  for (auto [key, v] : std::initializer_list<std::pair<const char*, double>>{
           {"median", s.median}, {"mean", s.mean}, {"min", s.min}, {"max", s.max}, {"std", s.stddev},
           {"p10", s.p10}, {"p90", s.p90}, {"p95", s.p95}, {"p99", s.p99}})
    j.set(std::string(key) + "_" + unit, v);
  j.set("cv", s.cv);
  return j;
}

Summary summary_from(const json::Value& j, const std::string& unit) {
  Summary s;
  s.n = j.int_at("n");
  s.median = j.at("median_" + unit).as_number();
  s.mean = j.at("mean_" + unit).as_number();
  s.min = j.at("min_" + unit).as_number();
  s.max = j.at("max_" + unit).as_number();
  s.stddev = j.at("std_" + unit).as_number();
  s.p10 = j.at("p10_" + unit).as_number();
  s.p90 = j.at("p90_" + unit).as_number();
  s.p95 = j.at("p95_" + unit).as_number();
  s.p99 = j.at("p99_" + unit).as_number();
  s.cv = j.number_at("cv");
  return s;
}

json::Value error_json(const ErrorStats& e) {
  json::Value j;
  j.set("max_abs", e.max_abs);
  j.set("rel_l2", e.rel_l2);
  j.set("cosine", e.cosine);
  j.set("finite", e.finite);
  return j;
}

ErrorStats error_from(const json::Value& j) {
  ErrorStats e;
  e.finite = j.bool_at("finite");
  auto num = [&](const char* k) {
    const json::Value& v = j.at(k);
    return v.is_null() ? std::numeric_limits<double>::infinity() : v.as_number();
  };
  e.max_abs = num("max_abs");
  e.rel_l2 = num("rel_l2");
  e.cosine = j.at("cosine").is_null() ? std::nan("") : j.number_at("cosine");
  return e;
}

json::Value ints_json(const std::vector<int>& v) {
  json::Array a;
  for (int x : v) a.emplace_back(x);
  return json::Value(a);
}

std::vector<int> ints_from(const json::Value& j) {
  std::vector<int> v;
  for (const auto& x : j.as_array()) v.push_back(int_from(x, "value"));
  return v;
}

json::Value strings_json(const std::vector<std::string>& v) {
  json::Array a;
  for (const auto& x : v) a.emplace_back(x);
  return json::Value(a);
}

std::vector<std::string> strings_from(const json::Value& j) {
  std::vector<std::string> v;
  for (const auto& x : j.as_array()) v.push_back(x.as_string());
  return v;
}

LayerKind kind_from(const std::string& s) {
  for (LayerKind k : {LayerKind::Conv2d, LayerKind::ReLU6, LayerKind::ReLU, LayerKind::ResidualAdd,
                      LayerKind::GlobalAveragePool, LayerKind::Linear})
    if (s == to_string(k)) return k;
  throw Error("unknown layer kind '" + s + "'");
}

TimerKind timer_from(const std::string& s) { return parse_timer(s); }

}  // namespace

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

json::Value memory_json(const MemoryReport& m) {
  json::Value j;
  j.set("weight_bytes", m.weight_bytes);
  j.set("activation_bytes", m.activation_bytes);
  j.set("workspace_bytes", m.workspace_bytes);
  j.set("total_bytes", m.total());
  j.set("tensors", m.tensors);
  j.set("device_used_before_bytes", m.device_used_before_bytes);
  j.set("device_used_peak_bytes", m.device_used_peak_bytes);
  j.set("device_total_bytes", m.device_total_bytes);
  j.set("driver_held_bytes", m.driver_held_bytes());
  return j;
}

MemoryReport memory_from_json(const json::Value& mem) {
  MemoryReport m;
  m.weight_bytes = mem.int_at("weight_bytes");
  m.activation_bytes = mem.int_at("activation_bytes");
  m.workspace_bytes = mem.int_at("workspace_bytes");
  // Absent in reports written before the memory report.
  if (const json::Value* v = mem.find("tensors")) m.tensors = static_cast<int>(v->as_int());
  if (const json::Value* v = mem.find("device_used_before_bytes")) m.device_used_before_bytes = v->as_int();
  if (const json::Value* v = mem.find("device_used_peak_bytes")) m.device_used_peak_bytes = v->as_int();
  if (const json::Value* v = mem.find("device_total_bytes")) m.device_total_bytes = v->as_int();
  return m;
}

// ---- CSV ------------------------------------------------------------------------------------------------

std::string report_csv(const std::vector<RunReport>& reports) {
  std::ostringstream out;
  out << "run_id,backend,precision,batch,input_hw,layer_index,layer_name,kind,block,fused_group,step,variant,"
         "output_shape,params,macs,bytes,timer,n,median_ns,p90_ns,p99_ns,mean_ns,std_ns,min_ns,max_ns,share,"
         "gflop_s,gbytes_s,event_median_ns,timers_disagree,kernel_count,kernel_names,grid,block_dim,"
         "diff_reference,max_abs_err,rel_l2_err,cosine,activation_bytes,weight_bytes\n";
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
      out << csv_field(r.run_id) << ',' << csv_field(r.backend) << ',' << to_string(r.config.precision) << ','
          << r.config.batch << ',' << hw << ',' << l.index << ',' << csv_field(l.name) << ',' << to_string(l.kind)
          << ',' << csv_field(l.block_name) << ',' << csv_field(lp.fused_group) << ',' << p.step << ','
          << csv_field(p.variant) << ',' << st.output.str() << ',' << st.params << ',' << st.macs << ',' << st.bytes
          << ',' << csv_field(r.timer) << ',';
      if (carries_time) {
        const Summary& s = p.time_ns;
        out << s.n << ',' << ns_int(s.median) << ',' << ns_int(s.p90) << ',' << ns_int(s.p99) << ',' << ns_int(s.mean)
            << ',' << ns_int(s.stddev) << ',' << ns_int(s.min) << ',' << ns_int(s.max) << ',' << fixed(p.share, 6)
            << ',' << fixed(p.gflops, 3) << ',' << fixed(p.gbytes_per_s, 3) << ','
            << (p.event_ns ? ns_int(p.event_ns->median) : "") << ',' << (p.event_ns ? (p.timers_disagree ? "1" : "0") : "")
            << ',' << fixed(p.kernels_per_iter, 2) << ',' << csv_field(join(p.kernel_names, ";")) << ','
            << csv_field(p.grid) << ',' << csv_field(p.block) << ',';
      } else {
        out << ",,,,,,,,,,,,,,,,,";  // the 17 fields above, empty
      }
      if (r.diff) {
        const LayerDiff& d = r.diff->layers.at(static_cast<size_t>(lp.layer));
        out << csv_field(r.diff->reference) << ',';
        if (d.compared)
          out << sci(d.error.max_abs) << ',' << sci(d.error.rel_l2) << ',' << fixed(d.error.cosine, 9);
        else
          out << ",,";
      } else {
        out << ",,,";
      }
      out << ',' << st.activation_bytes << ',' << st.params * static_cast<int64_t>(sizeof(float)) << "\n";
    }
  }
  return out.str();
}

// ---- JSON -----------------------------------------------------------------------------------------------

json::Value layer_json(const Layer& l, const LayerStats& st) {
  json::Value lj;
  lj.set("index", l.index);
  lj.set("kind", to_string(l.kind));
  lj.set("name", l.name);
  lj.set("source_name", l.source_name);
  lj.set("description", describe(l));
  lj.set("block", l.block);
  lj.set("block_name", l.block_name);
  lj.set("inputs", ints_json(l.inputs));
  if (l.kind == LayerKind::Conv2d) {
    const ConvParams& c = l.conv;
    lj.set("conv", json::Value(json::Array{c.in_channels, c.out_channels, c.kernel_h, c.kernel_w, c.stride_h,
                                           c.stride_w, c.pad_top, c.pad_left, c.pad_bottom, c.pad_right,
                                           c.dilation_h, c.dilation_w, c.groups}));
  }
  if (l.kind == LayerKind::Linear) lj.set("features", json::Value(json::Array{l.in_features, l.out_features}));
  if (l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU) {
    lj.set("clip_min", static_cast<double>(l.clip_min));
    lj.set("clip_max", std::isfinite(l.clip_max) ? json::Value(static_cast<double>(l.clip_max)) : json::Value());
  }
  lj.set("output_shape", json::Value(json::Array{st.output.n, st.output.c, st.output.h, st.output.w}));
  lj.set("params", st.params);
  lj.set("macs", st.macs);
  lj.set("activation_bytes", st.activation_bytes);
  lj.set("weight_bytes", st.params * static_cast<int64_t>(sizeof(float)));  // float32 as imported
  lj.set("bytes", st.bytes);
  return lj;
}


json::Value report_json(const RunReport& r) {
  json::Value j;
  json::Value meta;
  meta.set("schema_version", r.schema_version);
  meta.set("run_id", r.run_id);
  meta.set("backend", r.backend);
  meta.set("backend_description", r.backend_description);
  meta.set("precision", to_string(r.config.precision));
  meta.set("timer", r.timer);
  meta.set("batch", r.config.batch);
  meta.set("input_height", r.config.height);
  meta.set("input_width", r.config.width);
  meta.set("warmup", r.config.warmup);
  meta.set("iterations", r.config.iters);
  meta.set("cuda_graph", r.execution == "graph replay");  // of the per-layer phase
  meta.set("execution", r.execution);
  meta.set("device", r.device);
  meta.set("sm_clock_mhz_start", r.sm_clock_mhz_start);
  meta.set("sm_clock_mhz_end", r.sm_clock_mhz_end);
  meta.set("driver", r.driver);
  meta.set("cuda_runtime", r.cuda_runtime);
  meta.set("cudnn", r.cudnn);
  meta.set("date", r.date);
  meta.set("commit", r.commit);
  meta.set("model", r.model_source);
  meta.set("model_checksum", r.model_checksum);
  meta.set("model_synthetic", r.model_synthetic);
  meta.set("input", r.config.input_name);
  meta.set("input_checksum", r.input_checksum);
  meta.set("percentile_method", "linear interpolation between closest ranks (Hyndman-Fan type 7)");
  j.set("metadata", meta);

  j.set("memory", memory_json(r.memory));

  json::Value e2e;
  e2e.set("host", summary_json(r.end_to_end.host_ms, "ms"));
  if (r.end_to_end.gpu_ms) e2e.set("gpu", summary_json(*r.end_to_end.gpu_ms, "ms"));
  e2e.set("images_per_s", r.end_to_end.images_per_s);
  e2e.set("sum_of_layer_medians_ms", r.sum_of_steps_ms);
  e2e.set("gap_ms", r.gap_ms);
  j.set("end_to_end", e2e);

  json::Array layers;
  for (size_t i = 0; i < r.topology.size(); ++i) {
    const Layer& l = r.topology[i];
    const LayerStats& st = r.layer_stats.at(i);
    json::Value lj = layer_json(l, st);
    lj.set("step", r.layers.at(i).step);
    lj.set("fused_group", r.layers.at(i).fused_group);
    if (r.diff && i < r.diff->layers.size() && r.diff->layers[i].compared)
      lj.set("diff", error_json(r.diff->layers[i].error));
    layers.push_back(lj);
  }
  j.set("layers", json::Value(layers));

  json::Array steps;
  for (const StepProfile& p : r.steps) {
    json::Value sj;
    sj.set("step", p.step);
    sj.set("name", p.name);
    sj.set("layers", ints_json(p.layers));
    sj.set("variant", p.variant);
    sj.set("time", summary_json(p.time_ns, "ns"));
    if (p.event_ns) sj.set("event_time", summary_json(*p.event_ns, "ns"));
    sj.set("timers_disagree", p.timers_disagree);
    sj.set("kernel_names", strings_json(p.kernel_names));
    sj.set("kernels_per_iteration", p.kernels_per_iter);
    sj.set("grid", p.grid);
    sj.set("block", p.block);
    sj.set("macs", p.macs);
    sj.set("bytes", p.bytes);
    sj.set("gflop_s", p.gflops);
    sj.set("gbytes_s", p.gbytes_per_s);
    sj.set("share", p.share);
    steps.push_back(sj);
  }
  j.set("steps", json::Value(steps));

  auto totals = [](const std::vector<GroupTotal>& groups) {
    json::Array a;
    for (const auto& g : groups) {
      json::Value gj;
      gj.set("name", g.name);
      gj.set("median_ns", g.median_ns);
      gj.set("share", g.share);
      gj.set("macs", g.macs);
      gj.set("layers", g.layers);
      gj.set("steps", g.steps);
      gj.set("fused_layers", g.fused_layers);
      a.push_back(gj);
    }
    return json::Value(a);
  };
  j.set("per_kind", totals(r.per_kind));
  j.set("per_block", totals(r.per_block));

  json::Array trace;
  for (const KernelRecord& k : r.trace) {
    json::Value kj;
    kj.set("name", k.name);
    kj.set("kind", k.kind);
    kj.set("step", k.step);
    kj.set("start_ns", k.start_ns);
    kj.set("end_ns", k.end_ns);
    kj.set("grid", json::Value(json::Array{k.grid[0], k.grid[1], k.grid[2]}));
    kj.set("block", json::Value(json::Array{k.block[0], k.block[1], k.block[2]}));
    kj.set("bytes", k.bytes);
    trace.push_back(kj);
  }
  j.set("kernel_records", json::Value(trace));
  j.set("warnings", strings_json(r.warnings));

  if (r.diff) {
    const DiffReport& d = *r.diff;
    json::Value dj;
    dj.set("backend", d.backend);
    dj.set("reference", d.reference);
    dj.set("logits", error_json(d.logits));
    dj.set("top5_agree", d.top5_agree);
    dj.set("top5", ints_json(d.top5));
    dj.set("reference_top5", ints_json(d.reference_top5));
    dj.set("first_divergent_layer", d.first_divergent_layer);
    dj.set("threshold_rel_l2", d.threshold);
    json::Array compared;
    for (const LayerDiff& ld : d.layers) compared.emplace_back(ld.compared);
    dj.set("compared", json::Value(compared));
    j.set("diff", dj);
  }
  return j;
}

json::Value reports_json(const std::vector<RunReport>& reports) {
  json::Value j;
  j.set("schema", "mnv2.report");
  j.set("schema_version", kReportSchemaVersion);
  json::Array runs;
  for (const auto& r : reports) runs.push_back(report_json(r));
  j.set("runs", json::Value(runs));
  return j;
}

namespace {

RunReport report_from(const json::Value& j) {
  RunReport r;
  const json::Value& m = j.at("metadata");
  r.schema_version = int_from(m.at("schema_version"), "schema_version");
  if (r.schema_version > kReportSchemaVersion)
    throw Error("report schema version " + std::to_string(r.schema_version) + " is newer than this program reads (" +
                std::to_string(kReportSchemaVersion) + ")");
  r.run_id = m.string_at("run_id");
  r.backend = m.string_at("backend");
  r.backend_description = m.string_at("backend_description");
  r.config.backend = r.backend;
  r.config.precision = parse_precision(m.string_at("precision"));
  r.timer = m.string_at("timer");
  r.config.timer = timer_from(r.timer);
  r.config.batch = int_from(m.at("batch"), "batch");
  r.config.height = int_from(m.at("input_height"), "input_height");
  r.config.width = int_from(m.at("input_width"), "input_width");
  r.config.warmup = int_from(m.at("warmup"), "warmup");
  r.config.iters = int_from(m.at("iterations"), "iterations");
  r.config.input_name = m.string_at("input");
  r.device = m.string_at("device");
  r.sm_clock_mhz_start = int_from(m.at("sm_clock_mhz_start"), "sm_clock_mhz_start");
  r.sm_clock_mhz_end = int_from(m.at("sm_clock_mhz_end"), "sm_clock_mhz_end");
  r.driver = m.string_at("driver");
  r.cuda_runtime = m.string_at("cuda_runtime");
  r.cudnn = m.string_at("cudnn");
  r.date = m.string_at("date");
  r.commit = m.string_at("commit");
  if (const json::Value* e = m.find("execution")) r.execution = e->as_string();  // absent in older reports
  r.config.graph_replay = r.execution == "graph replay";
  r.model_source = m.string_at("model");
  r.model_checksum = m.string_at("model_checksum");
  r.model_synthetic = m.bool_at("model_synthetic");
  r.input_checksum = m.string_at("input_checksum");

  r.memory = memory_from_json(j.at("memory"));

  const json::Value& e2e = j.at("end_to_end");
  r.end_to_end.host_ms = summary_from(e2e.at("host"), "ms");
  if (const json::Value* g = e2e.find("gpu")) r.end_to_end.gpu_ms = summary_from(*g, "ms");
  r.end_to_end.images_per_s = e2e.number_at("images_per_s");
  r.sum_of_steps_ms = e2e.number_at("sum_of_layer_medians_ms");
  r.gap_ms = e2e.number_at("gap_ms");

  const auto& steps = j.array_at("steps");
  for (const auto& sj : steps) {
    StepProfile p;
    p.step = int_from(sj.at("step"), "step");
    if (p.step != static_cast<int>(r.steps.size())) throw Error("steps out of order");
    p.name = sj.string_at("name");
    p.layers = ints_from(sj.at("layers"));
    if (p.layers.empty()) throw Error("step " + std::to_string(p.step) + " covers no layer");
    p.variant = sj.string_at("variant");
    p.time_ns = summary_from(sj.at("time"), "ns");
    if (const json::Value* e = sj.find("event_time")) p.event_ns = summary_from(*e, "ns");
    p.timers_disagree = sj.bool_at("timers_disagree");
    p.kernel_names = strings_from(sj.at("kernel_names"));
    p.kernels_per_iter = sj.number_at("kernels_per_iteration");
    p.grid = sj.string_at("grid");
    p.block = sj.string_at("block");
    p.macs = sj.int_at("macs");
    p.bytes = sj.int_at("bytes");
    p.gflops = sj.number_at("gflop_s");
    p.gbytes_per_s = sj.number_at("gbytes_s");
    p.share = sj.number_at("share");
    r.steps.push_back(std::move(p));
  }

  const auto& layers = j.array_at("layers");
  for (const auto& lj : layers) {
    Layer l;
    l.index = int_from(lj.at("index"), "layer index");
    if (l.index != static_cast<int>(r.topology.size())) throw Error("layers out of order");
    l.kind = kind_from(lj.string_at("kind"));
    l.name = lj.string_at("name");
    l.source_name = lj.string_at("source_name");
    l.block = int_from(lj.at("block"), "block");
    l.block_name = lj.string_at("block_name");
    l.inputs = ints_from(lj.at("inputs"));
    if (const json::Value* c = lj.find("conv")) {
      std::vector<int> v = ints_from(*c);
      if (v.size() != 13) throw Error("layer " + std::to_string(l.index) + ": conv attributes need 13 values");
      l.conv = ConvParams{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]};
    }
    if (const json::Value* f = lj.find("features")) {
      std::vector<int> v = ints_from(*f);
      if (v.size() != 2) throw Error("layer " + std::to_string(l.index) + ": features need 2 values");
      l.in_features = v[0];
      l.out_features = v[1];
    }
    if (const json::Value* c = lj.find("clip_min")) l.clip_min = float_from(*c, "clip_min");
    if (const json::Value* c = lj.find("clip_max"))
      l.clip_max = c->is_null() ? std::numeric_limits<float>::infinity() : float_from(*c, "clip_max");
    LayerStats st;
    const auto& shape = lj.array_at("output_shape");
    if (shape.size() != 4) throw Error("layer " + std::to_string(l.index) + ": output_shape needs 4 values");
    st.output = Shape{shape[0].as_int(), shape[1].as_int(), shape[2].as_int(), shape[3].as_int()};
    st.params = lj.int_at("params");
    st.macs = lj.int_at("macs");
    st.activation_bytes = lj.int_at("activation_bytes");
    st.bytes = lj.int_at("bytes");
    LayerProfile lp;
    lp.layer = l.index;
    lp.step = int_from(lj.at("step"), "step");
    if (lp.step < 0 || lp.step >= static_cast<int>(r.steps.size()))
      throw Error("layer " + std::to_string(l.index) + " names step " + std::to_string(lp.step) + ", which is absent");
    lp.fused_group = lj.string_at("fused_group");
    r.topology.push_back(std::move(l));
    r.layer_stats.push_back(st);
    r.layers.push_back(lp);
  }
  for (const auto& p : r.steps)
    for (int l : p.layers)
      if (l < 0 || l >= static_cast<int>(r.layers.size()))
        throw Error("step " + std::to_string(p.step) + " covers layer " + std::to_string(l) + ", which is absent");

  auto totals_from = [](const json::Value& a) {
    std::vector<GroupTotal> out;
    for (const auto& gj : a.as_array()) {
      GroupTotal g;
      g.name = gj.string_at("name");
      g.median_ns = gj.number_at("median_ns");
      g.share = gj.number_at("share");
      g.macs = gj.int_at("macs");
      // Absent in reports written before these counts existed (same schema version: they are additions).
      const auto count = [&gj](const char* key) {
        const json::Value* v = gj.find(key);
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
  r.per_kind = totals_from(j.at("per_kind"));
  r.per_block = totals_from(j.at("per_block"));
  // Reports written before the totals counted layers, steps and fused layers: the same totals, derived
  // again from the topology and the steps, so a fused-away kind does not read as missing.
  const bool counted = !r.per_kind.empty() && r.per_kind.front().layers > 0;
  if (!counted) compute_group_totals(r);

  for (const auto& kj : j.array_at("kernel_records")) {
    KernelRecord k;
    k.name = kj.string_at("name");
    k.kind = kj.string_at("kind");
    k.step = int_from(kj.at("step"), "step");
    k.start_ns = kj.int_at("start_ns");
    k.end_ns = kj.int_at("end_ns");
    std::vector<int> g = ints_from(kj.at("grid")), b = ints_from(kj.at("block"));
    if (g.size() != 3 || b.size() != 3) throw Error("kernel record grid/block need 3 values");
    k.grid = {g[0], g[1], g[2]};
    k.block = {b[0], b[1], b[2]};
    k.bytes = kj.int_at("bytes");
    r.trace.push_back(std::move(k));
  }
  r.warnings = strings_from(j.at("warnings"));

  if (const json::Value* dj = j.find("diff")) {
    DiffReport d;
    d.backend = dj->string_at("backend");
    d.reference = dj->string_at("reference");
    d.logits = error_from(dj->at("logits"));
    d.top5_agree = dj->bool_at("top5_agree");
    d.top5 = ints_from(dj->at("top5"));
    d.reference_top5 = ints_from(dj->at("reference_top5"));
    d.first_divergent_layer = int_from(dj->at("first_divergent_layer"), "first_divergent_layer");
    d.threshold = dj->number_at("threshold_rel_l2");
    const auto& compared = dj->array_at("compared");
    if (compared.size() != layers.size()) throw Error("diff covers a different number of layers");
    for (size_t i = 0; i < layers.size(); ++i) {
      LayerDiff ld;
      ld.layer = static_cast<int>(i);
      ld.compared = compared[i].as_bool();
      if (ld.compared) ld.error = error_from(layers[i].at("diff"));
      d.layers.push_back(ld);
    }
    r.diff = std::move(d);
  }
  return r;
}

}  // namespace

std::vector<RunReport> reports_from_json(const json::Value& value) {
  const json::Value* schema = value.is_object() ? value.find("schema") : nullptr;
  if (!schema || !schema->is_string() || schema->as_string() != "mnv2.report")
    throw Error("not an mnv2 report (no \"schema\": \"mnv2.report\")");
  const int64_t version = value.int_at("schema_version");
  if (version > kReportSchemaVersion)
    throw Error("report schema version " + std::to_string(version) + " is newer than this program reads (" +
                std::to_string(kReportSchemaVersion) + "); update mnv2");
  std::vector<RunReport> out;
  const auto& runs = value.array_at("runs");
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
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxReportBytes)
    throw Error(one_line(path) + ": " + std::to_string(size) + " bytes is more than a report can be (at most " +
                std::to_string(kMaxReportBytes >> 20) + " MiB); not an mnv2 report");
  try {
    const json::Value v = json::parse_file(path);
    try {
      return reports_from_json(v);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  } catch (const Error& e) {
    throw Error(one_line(e.what()));
  }
}

// ---- trace ----------------------------------------------------------------------------------------------

std::string trace_json(const std::vector<RunReport>& reports) {
  json::Array events;
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const RunReport& r = reports[ri];
    const int pid = static_cast<int>(ri) + 1;
    json::Value meta;
    meta.set("name", "process_name");
    meta.set("ph", "M");
    meta.set("pid", pid);
    json::Value margs;
    margs.set("name", r.backend + " (" + r.timer + ", batch " + std::to_string(r.config.batch) + ")");
    meta.set("args", margs);
    events.push_back(meta);
    auto step_event = [&](const StepProfile& p, double ts_us, double dur_us, const char* how) {
      json::Value e;
      e.set("name", p.name);
      e.set("cat", "layer");
      e.set("ph", "X");
      e.set("ts", ts_us);
      e.set("dur", dur_us);
      e.set("pid", pid);
      e.set("tid", 1);
      json::Value a;
      a.set("layers", ints_json(p.layers));
      a.set("backend", r.backend);
      a.set("variant", p.variant);
      a.set("median_ns", p.time_ns.median);
      a.set("timing", how);
      e.set("args", a);
      events.push_back(e);
    };
    if (!r.trace.empty()) {
      // CUPTI: real GPU timestamps of the last iteration, relative to its first record.
      int64_t t0 = r.trace.front().start_ns;
      for (const auto& k : r.trace) t0 = std::min(t0, k.start_ns);
      std::vector<std::pair<int64_t, int64_t>> span(r.steps.size(), {INT64_MAX, INT64_MIN});
      for (const auto& k : r.trace) {
        json::Value e;
        e.set("name", k.name);
        e.set("cat", k.kind);
        e.set("ph", "X");
        e.set("ts", static_cast<double>(k.start_ns - t0) / 1000.0);
        e.set("dur", static_cast<double>(k.duration_ns()) / 1000.0);
        e.set("pid", pid);
        e.set("tid", 2);
        json::Value a;
        a.set("step", k.step);
        if (k.step >= 0 && k.step < static_cast<int>(r.steps.size())) {
          a.set("layers", ints_json(r.steps[static_cast<size_t>(k.step)].layers));
          auto& s = span[static_cast<size_t>(k.step)];
          s.first = std::min(s.first, k.start_ns);
          s.second = std::max(s.second, k.end_ns);
        }
        a.set("backend", r.backend);
        if (k.kind == "kernel") {
          a.set("grid", json::Value(json::Array{k.grid[0], k.grid[1], k.grid[2]}));
          a.set("block", json::Value(json::Array{k.block[0], k.block[1], k.block[2]}));
        } else {
          a.set("bytes", k.bytes);
        }
        e.set("args", a);
        events.push_back(e);
      }
      for (size_t s = 0; s < r.steps.size(); ++s)
        if (span[s].first != INT64_MAX)
          step_event(r.steps[s], static_cast<double>(span[s].first - t0) / 1000.0,
                     static_cast<double>(span[s].second - span[s].first) / 1000.0, "cupti: first kernel start to last kernel end");
    } else {
      // Event / host timers give durations, not timestamps: steps are laid out back to back by median.
      double ts = 0;
      for (const auto& p : r.steps) {
        step_event(p, ts, p.time_ns.median / 1000.0, "median duration, laid out back to back (no timestamps)");
        ts += p.time_ns.median / 1000.0;
      }
    }
  }
  json::Value j;
  j.set("traceEvents", json::Value(events));
  j.set("displayTimeUnit", "ns");
  return json::dump(j, -1) + "\n";
}

void write_csv_report(const std::string& path, const std::vector<RunReport>& reports) {
  write_file_atomically(path, report_csv(reports));
}
void write_json_report(const std::string& path, const std::vector<RunReport>& reports) {
  write_file_atomically(path, json::dump(reports_json(reports), 1) + "\n");
}
void write_trace(const std::string& path, const std::vector<RunReport>& reports) {
  write_file_atomically(path, trace_json(reports));
}

}  // namespace mnv2
