// The kernel lab's result document, format "mnv2.lab" version 1 (/work/lab-protocol.md, mnv2/lab.h): what
// `mnv2 lab --json` writes, what the worker sends its parent, and what the app's Kernel lab page reads.
#include "mnv2/error.h"
#include "mnv2/lab.h"

namespace mnv2 {
namespace {

using json::Json;

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
std::optional<double> opt_double(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) throw Error(std::string("mnv2.lab: '") + key + "' is not a number");
  return j[key].get<double>();
}
template <class T>
T get(const Json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const std::exception&) {
    throw Error(std::string("mnv2.lab: '") + key + "' has the wrong type");
  }
}

Json compile_json(const LabCompileResult& c) {
  Json j = Json::object();
  j["ok"] = c.ok;
  j["cached"] = c.cached;
  j["seconds"] = c.seconds;
  j["arch"] = c.arch;
  j["options"] = c.options;
  j["nvrtc_version"] = c.nvrtc_version;
  j["key"] = c.key;
  j["log"] = c.log;
  Json diags = Json::array();
  for (const LabDiagnostic& d : c.diagnostics) {
    Json dj = Json::object();
    dj["file"] = d.file;
    dj["line"] = d.line;
    dj["column"] = d.column;
    dj["severity"] = d.severity;
    dj["message"] = d.message;
    diags.push_back(dj);
  }
  j["diagnostics"] = diags;
  return j;
}

LabCompileResult compile_from_json(const Json& j) {
  LabCompileResult c;
  c.ok = get<bool>(j, "ok", false);
  c.cached = get<bool>(j, "cached", false);
  c.seconds = get<double>(j, "seconds", 0.0);
  c.arch = get<std::string>(j, "arch", "");
  c.options = get<std::vector<std::string>>(j, "options", {});
  c.nvrtc_version = get<std::string>(j, "nvrtc_version", "");
  c.key = get<std::string>(j, "key", "");
  c.log = get<std::string>(j, "log", "");
  if (j.contains("diagnostics") && j["diagnostics"].is_array())
    for (const Json& dj : j["diagnostics"]) {
      LabDiagnostic d;
      d.file = get<std::string>(dj, "file", "");
      d.line = get<int>(dj, "line", 0);
      d.column = get<int>(dj, "column", 0);
      d.severity = get<std::string>(dj, "severity", "error");
      d.message = get<std::string>(dj, "message", "");
      c.diagnostics.push_back(d);
    }
  return c;
}

}  // namespace

json::Json lab_result_json(const LabResult& r) {
  Json j = Json::object();
  j["format"] = "mnv2.lab";
  j["version"] = 1;
  j["slot"] = r.slot;
  j["kernel_file"] = r.kernel_file;
  j["kernel_name"] = r.kernel_name;
  j["source_sha256"] = r.source_sha256;
  j["precision"] = r.precision;
  j["batch"] = r.batch;
  j["device"] = r.device;
  j["status"] = r.status;
  j["message"] = r.message;
  j["compile"] = r.compile ? compile_json(*r.compile) : Json();
  if (r.has_launch) {
    Json l = Json::object();
    l["block"] = {r.block[0], r.block[1], r.block[2]};
    l["tile"] = {r.tile[0], r.tile[1]};
    l["grid_rule"] = r.grid_rule;
    l["shared_bytes"] = r.shared_bytes;
    j["launch"] = l;
  } else {
    j["launch"] = Json();
  }
  Json layers = Json::array();
  for (const LabLayer& l : r.layers) {
    Json lj = Json::object();
    lj["index"] = l.index;
    lj["name"] = l.name;
    lj["op"] = l.op;
    lj["shape"] = l.shape;
    Json cj = Json::object();
    cj["passed"] = l.check.passed;
    cj["max_abs_vs_reference"] = l.check.max_abs_vs_reference;
    cj["rel_l2_vs_reference"] = l.check.rel_l2_vs_reference;
    cj["max_abs_vs_ours"] = l.check.max_abs_vs_ours;
    cj["bound"] = l.check.bound;
    if (l.check.first_failure) {
      const LabFailure& f = *l.check.first_failure;
      Json fj = Json::object();
      fj["flat_index"] = f.flat_index;
      fj["coords"] = f.coords;
      // NaN and Inf are not JSON numbers: a non-finite value is written as its name.
      fj["expected"] = std::isfinite(f.expected) ? Json(f.expected) : Json(std::to_string(f.expected));
      fj["got"] = std::isfinite(f.got) ? Json(f.got) : Json(std::to_string(f.got));
      cj["first_failure"] = fj;
    } else {
      cj["first_failure"] = Json();
    }
    lj["check"] = cj;
    lj["user_us"] = opt(l.user_us);
    lj["ours_us"] = opt(l.ours_us);
    lj["cudnn_us"] = opt(l.cudnn_us);
    lj["flops"] = l.flops;
    lj["bytes"] = l.bytes;
    layers.push_back(lj);
  }
  j["layers"] = layers;
  if (r.end_to_end) {
    Json e = Json::object();
    e["user_ms"] = opt(r.end_to_end->user_ms);
    e["ours_unfused_ms"] = opt(r.end_to_end->ours_unfused_ms);
    e["ours_default_ms"] = opt(r.end_to_end->ours_default_ms);
    e["cudnn_ms"] = opt(r.end_to_end->cudnn_ms);
    j["end_to_end"] = e;
  } else {
    j["end_to_end"] = Json();
  }
  Json commands = Json::object();
  commands["compute_sanitizer"] = r.compute_sanitizer_command;
  commands["ncu"] = r.ncu_command;
  j["commands"] = commands;
  Json reports = Json::object();
  reports["json"] = r.report_json.empty() ? Json() : Json(r.report_json);
  reports["csv"] = r.report_csv.empty() ? Json() : Json(r.report_csv);
  j["reports"] = reports;
  return j;
}

namespace {
double value_or_name(const Json& j, const char* key) {
  if (!j.contains(key)) return 0;
  if (j[key].is_number()) return j[key].get<double>();
  if (j[key].is_string()) {
    const std::string s = j[key].get<std::string>();
    try {
      return std::stod(s);  // "nan", "inf", "-inf"
    } catch (const std::exception&) {
    }
  }
  throw Error(std::string("mnv2.lab: '") + key + "' is neither a number nor nan/inf");
}
}  // namespace

LabResult lab_result_from_json(const json::Json& j) {
  if (!j.is_object() || get<std::string>(j, "format", "") != "mnv2.lab")
    throw Error("not a kernel lab result (format \"mnv2.lab\")");
  if (get<int>(j, "version", 0) != 1)
    throw Error("mnv2.lab version " + std::to_string(get<int>(j, "version", 0)) + " is not supported (1 is)");
  LabResult r;
  r.slot = get<std::string>(j, "slot", "");
  r.kernel_file = get<std::string>(j, "kernel_file", "");
  r.kernel_name = get<std::string>(j, "kernel_name", "");
  r.source_sha256 = get<std::string>(j, "source_sha256", "");
  r.precision = get<std::string>(j, "precision", "fp32");
  r.batch = get<int>(j, "batch", 1);
  r.device = get<std::string>(j, "device", "");
  r.status = get<std::string>(j, "status", "");
  r.message = get<std::string>(j, "message", "");
  if (j.contains("compile") && j["compile"].is_object()) r.compile = compile_from_json(j["compile"]);
  if (j.contains("launch") && j["launch"].is_object()) {
    const Json& l = j["launch"];
    r.has_launch = true;
    const auto block = get<std::vector<int>>(l, "block", {256, 1, 1});
    const auto tile = get<std::vector<int>>(l, "tile", {1, 1});
    if (block.size() != 3 || tile.size() != 2) throw Error("mnv2.lab: launch block/tile have the wrong length");
    for (int i = 0; i < 3; ++i) r.block[i] = block[static_cast<size_t>(i)];
    for (int i = 0; i < 2; ++i) r.tile[i] = tile[static_cast<size_t>(i)];
    r.grid_rule = get<std::string>(l, "grid_rule", "");
    r.shared_bytes = get<int>(l, "shared_bytes", 0);
  }
  if (j.contains("layers") && j["layers"].is_array())
    for (const Json& lj : j["layers"]) {
      LabLayer l;
      l.index = get<int>(lj, "index", 0);
      l.name = get<std::string>(lj, "name", "");
      l.op = get<std::string>(lj, "op", "");
      l.shape = get<std::string>(lj, "shape", "");
      if (lj.contains("check") && lj["check"].is_object()) {
        const Json& cj = lj["check"];
        l.check.passed = get<bool>(cj, "passed", false);
        l.check.max_abs_vs_reference = get<double>(cj, "max_abs_vs_reference", 0.0);
        l.check.rel_l2_vs_reference = get<double>(cj, "rel_l2_vs_reference", 0.0);
        l.check.max_abs_vs_ours = get<double>(cj, "max_abs_vs_ours", 0.0);
        l.check.bound = get<double>(cj, "bound", 0.0);
        if (cj.contains("first_failure") && cj["first_failure"].is_object()) {
          const Json& fj = cj["first_failure"];
          LabFailure f;
          f.flat_index = get<int64_t>(fj, "flat_index", 0);
          f.coords = get<std::vector<int64_t>>(fj, "coords", {});
          f.expected = value_or_name(fj, "expected");
          f.got = value_or_name(fj, "got");
          l.check.first_failure = f;
        }
      }
      l.user_us = opt_double(lj, "user_us");
      l.ours_us = opt_double(lj, "ours_us");
      l.cudnn_us = opt_double(lj, "cudnn_us");
      l.flops = get<double>(lj, "flops", 0.0);
      l.bytes = get<double>(lj, "bytes", 0.0);
      r.layers.push_back(l);
    }
  if (j.contains("end_to_end") && j["end_to_end"].is_object()) {
    const Json& e = j["end_to_end"];
    r.end_to_end = LabEndToEnd{opt_double(e, "user_ms"), opt_double(e, "ours_unfused_ms"),
                               opt_double(e, "ours_default_ms"), opt_double(e, "cudnn_ms")};
  }
  if (j.contains("commands") && j["commands"].is_object()) {
    r.compute_sanitizer_command = get<std::string>(j["commands"], "compute_sanitizer", "");
    r.ncu_command = get<std::string>(j["commands"], "ncu", "");
  }
  if (j.contains("reports") && j["reports"].is_object()) {
    r.report_json = get<std::string>(j["reports"], "json", "");
    r.report_csv = get<std::string>(j["reports"], "csv", "");
  }
  return r;
}

}  // namespace mnv2
