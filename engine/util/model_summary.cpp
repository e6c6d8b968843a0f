// Model facts for `mnv2 info` and the app (see model_summary.h).
#include "mnv2/model_summary.h"

#include <charconv>
#include <filesystem>

#include "mnv2/model.h"

namespace mnv2 {

namespace {

bool is_number(const std::string& s, int64_t& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && p == end;
}

std::string producer(const ModelFileInfo& f) {
  if (f.producer_name.empty() && f.producer_version.empty()) return "not given";
  if (f.producer_version.empty()) return f.producer_name;
  return f.producer_name.empty() ? f.producer_version : f.producer_name + " " + f.producer_version;
}

std::string external_data(const ModelFileInfo& f) {
  std::string files;
  for (const ExternalDataFile& e : f.external_files) files += (files.empty() ? "" : ", ") + e.location;
  return files + " (" + std::to_string(f.external_bytes) + " bytes read)";
}

// "<64 hex>  PATH", the line `sha256sum PATH` prints, for a "sha256:" checksum; other checksums as they are.
std::string sha256sum_line(const std::string& checksum, const std::string& path) {
  const std::string prefix = "sha256:";
  if (checksum.compare(0, prefix.size(), prefix) != 0) return checksum + "  " + path;
  return checksum.substr(prefix.size()) + "  " + path;
}

}  // namespace

std::string format_input_shape(const std::vector<std::string>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + "]";
}

std::vector<std::pair<std::string, std::string>> model_summary_rows(const Model& model, const std::string& labels) {
  std::vector<std::pair<std::string, std::string>> rows;
  const ModelFileInfo& f = model.file;
  if (model.synthetic || f.ir_version == 0) {
    rows.emplace_back("format", "built-in topology (no file)");
  } else {
    rows.emplace_back("format", "ONNX IR " + std::to_string(f.ir_version) + ", opset " + std::to_string(f.opset));
    rows.emplace_back("producer", producer(f));
  }
  const std::string name = f.input_name.empty() ? std::string("input") : f.input_name;
  const std::string shape =
      f.input_dims.empty() ? format_input_shape({"N", std::to_string(model.input_channels),
                                                 std::to_string(model.input_height), std::to_string(model.input_width)})
                           : format_input_shape(f.input_dims);
  rows.emplace_back("input", name + " " + shape);
  rows.emplace_back("classes", std::to_string(model.num_classes));
  rows.emplace_back("labels", labels);
  if (!f.checker_note.empty()) rows.emplace_back("checker", f.checker_note);
  if (model.synthetic || f.ir_version == 0) {
    rows.emplace_back("checksum", model.checksum + " of the synthetic weights (no file)");
    return rows;
  }
  rows.emplace_back("sha256", sha256sum_line(model.checksum, model.source));
  if (!f.external_files.empty()) rows.emplace_back("external data", external_data(f));
  // Named as from the model's folder, where the locations are resolved.
  const std::filesystem::path folder = std::filesystem::path(model.source).parent_path();
  for (const ExternalDataFile& e : f.external_files)
    rows.emplace_back("sha256", sha256sum_line(e.checksum, (folder / e.location).string()));
  return rows;
}

json::Json model_summary_json(const Model& model, const std::string& labels) {
  const ModelFileInfo& f = model.file;
  json::Json shape = json::Json::array();
  for (const std::string& d : f.input_dims) {
    int64_t v = 0;
    shape.push_back(is_number(d, v) ? json::Json(v) : json::Json(d));  // symbolic dimensions by name
  }
  json::Json files = json::Json::array(), checksums = json::Json::object();
  for (const ExternalDataFile& e : f.external_files) {
    files.push_back(e.location);
    checksums[e.location] = e.checksum;
  }
  return json::Json{{"ir_version", f.ir_version == 0 ? json::Json() : json::Json(f.ir_version)},
                    {"opset", f.opset == 0 ? json::Json() : json::Json(f.opset)},
                    {"producer_name", f.producer_name},
                    {"producer_version", f.producer_version},
                    {"input", {{"name", f.input_name}, {"shape", shape}}},
                    {"classes", model.num_classes},
                    {"labels", labels},
                    {"checker", {{"ran", f.checker_ran}, {"note", f.checker_note}}},
                    {"checksum", model.checksum},  // "sha256:<64 hex>" of the file (of the weights when built in)
                    {"external_data", {{"files", files}, {"bytes", f.external_bytes}, {"checksums", checksums}}}};
}

}  // namespace mnv2
