// What a user needs to know about a loaded model and its file (format versions, producer, input, classes,
// where labels come from, whether the ONNX checker ran), in one place for `mnv2 info` (text and JSON) and
// the app's Topology header.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mnv2/json_io.h"

namespace mnv2 {

struct Model;

// A declared input shape as "[batch, 3, 224, 224]": numbers, symbolic dimensions by name, "?" for open ones.
std::string format_input_shape(const std::vector<std::string>& dims);

// (label, value) rows in display order, e.g. ("format", "ONNX IR 10, opset 20"), ("producer", "pytorch
// 2.11.0+cu130"), ("input", "x [2, 3, 96, 96]"), ("classes", "10"), ("labels", labels_source(...)),
// ("checker", "ONNX 1.12.0 checker passed" or why it was skipped), ("sha256", "<64 hex>  FILE": the line
// `sha256sum FILE` prints), ("external data", files and bytes), and a "sha256" row per external data file;
// the built-in model's ("checksum", "sha256:... of the synthetic weights (no file)").
// `labels` is what labels_source() says for the labels in use.
std::vector<std::pair<std::string, std::string>> model_summary_rows(const Model& model, const std::string& labels);

// The same facts as a JSON object (input shape as numbers and names, checker as {ran, note}, checksum as
// "sha256:<64 hex>", external data's checksums by location).
json::Json model_summary_json(const Model& model, const std::string& labels);

}  // namespace mnv2
