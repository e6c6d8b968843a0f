// The kernel lab's result document, format "mnv2.lab" version 1 (/work/lab-protocol.md, mnv2/lab.h): what
// `mnv2 lab --json` writes, what the worker sends its parent, and what the app's Kernel lab page reads.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>

#include "mnv2/error.h"
#include "mnv2/lab.h"

namespace mnv2 {
namespace {

using json::Json;

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

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
    if (l.check) {
      cj["passed"] = l.check->passed;
      cj["max_abs_vs_reference"] = l.check->max_abs_vs_reference;
      cj["rel_l2_vs_reference"] = l.check->rel_l2_vs_reference;
      cj["max_abs_vs_ours"] = l.check->max_abs_vs_ours;
      cj["bound"] = l.check->bound;
    }
    if (l.check && l.check->first_failure) {
      const LabFailure& f = *l.check->first_failure;
      Json fj = Json::object();
      fj["flat_index"] = f.flat_index;
      fj["coords"] = f.coords;
      // NaN and Inf are not JSON numbers: a non-finite value is written as its name.
      fj["expected"] = std::isfinite(f.expected) ? Json(f.expected) : Json(std::to_string(f.expected));
      fj["got"] = std::isfinite(f.got) ? Json(f.got) : Json(std::to_string(f.got));
      cj["first_failure"] = fj;
    } else if (l.check) {
      cj["first_failure"] = Json();
    }
    lj["check"] = l.check ? cj : Json();
    lj["user_us"] = opt(l.user_us);
    lj["ours_us"] = opt(l.ours_us);
    lj["cudnn_us"] = opt(l.cudnn_us);
    lj["flops"] = opt(l.flops);
    lj["bytes"] = opt(l.bytes);
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

// The strict reader: a field that is not what the contract says is named with its path.
constexpr int kLabVersion = 1;
const char* const kStatuses[] = {"passed", "check_failed", "compile_error", "crashed", "timeout", "error"};

std::string type_name(const Json* v) {
  if (v == nullptr) return "missing";
  switch (v->type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    default:
      return "not a JSON value";
  }
}

[[noreturn]] void wrong_type(const std::string& path, const char* wanted, const Json* v) {
  throw Error(path + " should be " + wanted + ", is " + type_name(v));
}

// o's member `key`, or nullptr when absent or null.
const Json* member(const Json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}
const Json* present(const Json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

std::string required_string(const Json& o, const char* key, const std::string& path) {
  const Json* v = present(o, key);
  if (v == nullptr || !v->is_string()) wrong_type(path + key, "a string", v);
  return v->get<std::string>();
}
std::string optional_string(const Json& o, const char* key, const std::string& path) {
  const Json* v = member(o, key);
  if (v == nullptr) return "";
  if (!v->is_string()) wrong_type(path + key, "a string", v);
  return v->get<std::string>();
}
bool required_bool(const Json& o, const char* key, const std::string& path) {
  const Json* v = present(o, key);
  if (v == nullptr || !v->is_boolean()) wrong_type(path + key, "true or false", v);
  return v->get<bool>();
}
std::optional<double> optional_number(const Json& o, const char* key, const std::string& path) {
  const Json* v = member(o, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(path + key, "a number or null", v);
  return v->get<double>();
}
int64_t whole_number(const Json* v, const std::string& path) {
  if (v == nullptr || !v->is_number()) wrong_type(path, "a whole number", v);
  const double d = v->get<double>();
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) wrong_type(path, "a whole number", v);
  return v->is_number_float() ? static_cast<int64_t>(d) : v->get<int64_t>();
}
// An object member that may be absent or null (nullptr then).
const Json* optional_object(const Json& o, const char* key, const std::string& path) {
  const Json* v = member(o, key);
  if (v != nullptr && !v->is_object()) wrong_type(path + key, "an object", v);
  return v;
}
const Json* optional_array(const Json& o, const char* key, const std::string& path) {
  const Json* v = member(o, key);
  if (v != nullptr && !v->is_array()) wrong_type(path + key, "an array", v);
  return v;
}

// An element value: JSON has no NaN or Inf, so they come as null or as the strings "nan", "inf", "-inf" (a bad output
// is exactly where they appear: read, not refused).
double element_value(const Json& o, const char* key, const std::string& path) {
  const Json* v = present(o, key);
  if (v != nullptr && v->is_number()) return v->get<double>();
  if (v != nullptr && v->is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v != nullptr && v->is_string()) {
    std::string s = v->get<std::string>();
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "nan" || s == "-nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf" || s == "+inf" || s == "infinity") return std::numeric_limits<double>::infinity();
    if (s == "-inf" || s == "-infinity") return -std::numeric_limits<double>::infinity();
  }
  wrong_type(path + key, "a number (or null / \"nan\" / \"inf\")", v);
}

LabCompileResult read_compile(const Json& c) {
  const std::string p = "compile.";
  LabCompileResult r;
  r.ok = required_bool(c, "ok", p);
  if (member(c, "cached") != nullptr) r.cached = required_bool(c, "cached", p);
  r.seconds = optional_number(c, "seconds", p).value_or(0);
  r.arch = optional_string(c, "arch", p);
  r.nvrtc_version = optional_string(c, "nvrtc_version", p);
  r.key = optional_string(c, "key", p);
  r.log = optional_string(c, "log", p);
  if (const Json* options = optional_array(c, "options", p))
    for (const Json& o : *options) {
      if (!o.is_string()) wrong_type(p + "options[]", "a string", &o);
      r.options.push_back(o.get<std::string>());
    }
  if (const Json* diags = optional_array(c, "diagnostics", p)) {
    int i = 0;
    for (const Json& dj : *diags) {
      const std::string dp = p + "diagnostics[" + std::to_string(i++) + "].";
      if (!dj.is_object()) wrong_type(dp.substr(0, dp.size() - 1), "an object", &dj);
      LabDiagnostic d;
      d.file = optional_string(dj, "file", dp);
      if (const Json* line = member(dj, "line")) d.line = static_cast<int>(whole_number(line, dp + "line"));
      if (const Json* column = member(dj, "column")) d.column = static_cast<int>(whole_number(column, dp + "column"));
      d.severity = required_string(dj, "severity", dp);
      d.message = required_string(dj, "message", dp);
      r.diagnostics.push_back(d);
    }
  }
  return r;
}

LabLayer read_layer(const Json& lj, const std::string& lp) {
  if (!lj.is_object()) wrong_type(lp.substr(0, lp.size() - 1), "an object", &lj);
  LabLayer l;
  l.index = static_cast<int>(whole_number(present(lj, "index"), lp + "index"));
  l.name = optional_string(lj, "name", lp);
  l.op = optional_string(lj, "op", lp);
  l.shape = optional_string(lj, "shape", lp);
  if (const Json* cj = optional_object(lj, "check", lp)) {
    const std::string cp = lp + "check.";
    LabCheck c;
    c.passed = required_bool(*cj, "passed", cp);
    c.max_abs_vs_reference = optional_number(*cj, "max_abs_vs_reference", cp).value_or(0);
    c.rel_l2_vs_reference = optional_number(*cj, "rel_l2_vs_reference", cp).value_or(0);
    c.max_abs_vs_ours = optional_number(*cj, "max_abs_vs_ours", cp).value_or(0);
    c.bound = optional_number(*cj, "bound", cp).value_or(0);
    if (const Json* fj = optional_object(*cj, "first_failure", cp)) {
      const std::string fp = cp + "first_failure.";
      LabFailure f;
      f.flat_index = whole_number(present(*fj, "flat_index"), fp + "flat_index");
      const Json* coords = present(*fj, "coords");
      if (coords == nullptr || !coords->is_array()) wrong_type(fp + "coords", "an array", coords);
      for (const Json& x : *coords) f.coords.push_back(whole_number(&x, fp + "coords[]"));
      f.expected = element_value(*fj, "expected", fp);
      f.got = element_value(*fj, "got", fp);
      c.first_failure = f;
    }
    l.check = c;
  }
  l.user_us = optional_number(lj, "user_us", lp);
  l.ours_us = optional_number(lj, "ours_us", lp);
  l.cudnn_us = optional_number(lj, "cudnn_us", lp);
  l.flops = optional_number(lj, "flops", lp);
  l.bytes = optional_number(lj, "bytes", lp);
  return l;
}

LabResult read_fields(const Json& j) {
  LabResult r;
  r.status = required_string(j, "status", "");
  if (std::find(std::begin(kStatuses), std::end(kStatuses), r.status) == std::end(kStatuses)) {
    std::string all;
    for (const char* s : kStatuses) all += std::string(all.empty() ? "" : ", ") + s;
    throw Error("status '" + r.status + "' is none of " + all);
  }
  r.slot = required_string(j, "slot", "");
  r.message = required_string(j, "message", "");
  r.kernel_file = optional_string(j, "kernel_file", "");
  r.kernel_name = optional_string(j, "kernel_name", "");
  r.source_sha256 = optional_string(j, "source_sha256", "");
  r.precision = optional_string(j, "precision", "");
  if (r.precision.empty()) r.precision = "fp32";
  r.device = optional_string(j, "device", "");
  if (const Json* batch = member(j, "batch")) r.batch = static_cast<int>(whole_number(batch, "batch"));
  if (const Json* c = optional_object(j, "compile", "")) r.compile = read_compile(*c);
  if (const Json* l = optional_object(j, "launch", "")) {
    r.has_launch = true;
    auto ints = [&](const char* key, int* out, size_t n) {
      const Json* a = member(*l, key);
      if (a == nullptr) return;
      if (!a->is_array() || a->size() != n)
        wrong_type(std::string("launch.") + key, n == 3 ? "an array of three numbers" : "an array of two numbers", a);
      for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<int>(whole_number(&(*a)[i], std::string("launch.") + key + "[]"));
    };
    ints("block", r.block, 3);
    ints("tile", r.tile, 2);
    r.grid_rule = optional_string(*l, "grid_rule", "launch.");
    r.shared_bytes = static_cast<int>(optional_number(*l, "shared_bytes", "launch.").value_or(0));
  }
  const Json* layers = present(j, "layers");
  if (layers == nullptr || !layers->is_array()) wrong_type("layers", "an array", layers);
  int i = 0;
  for (const Json& lj : *layers) r.layers.push_back(read_layer(lj, "layers[" + std::to_string(i++) + "]."));
  if (const Json* e = optional_object(j, "end_to_end", "")) {
    const std::string p = "end_to_end.";
    r.end_to_end = LabEndToEnd{optional_number(*e, "user_ms", p), optional_number(*e, "ours_unfused_ms", p),
                               optional_number(*e, "ours_default_ms", p), optional_number(*e, "cudnn_ms", p)};
  }
  if (const Json* c = optional_object(j, "commands", "")) {
    r.compute_sanitizer_command = optional_string(*c, "compute_sanitizer", "commands.");
    r.ncu_command = optional_string(*c, "ncu", "commands.");
  }
  if (const Json* rep = optional_object(j, "reports", "")) {
    r.report_json = optional_string(*rep, "json", "reports.");
    r.report_csv = optional_string(*rep, "csv", "reports.");
  }
  return r;
}

}  // namespace

LabResult lab_result_from_json(const json::Json& j) {
  if (!j.is_object()) throw Error("the result is not a JSON object");
  const Json* format = present(j, "format");
  const Json* version = present(j, "version");
  if (format == nullptr || !format->is_string() || format->get<std::string>() != "mnv2.lab")
    throw Error(
        "the result's format is " +
        (format != nullptr && format->is_string() ? "\"" + format->get<std::string>() + "\"" : type_name(format)) +
        ", not \"mnv2.lab\": this build reads mnv2.lab version " + std::to_string(kLabVersion));
  if (version == nullptr || !version->is_number() || version->get<double>() != kLabVersion)
    throw Error("the result is mnv2.lab version " +
                (version != nullptr && version->is_number() ? version->dump() : type_name(version)) +
                "; this build reads version " + std::to_string(kLabVersion) + " (update the app or mnv2)");
  try {
    return read_fields(j);
  } catch (const Error& e) {
    throw Error("the result (mnv2.lab version " + std::to_string(kLabVersion) + ") is malformed: " + e.what());
  }
}

LabResult read_lab_result(const std::string& text) {
  Json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw Error(std::string("the result is not JSON (") + e.what() + ")");
  }
  return lab_result_from_json(j);
}

}  // namespace mnv2
