// The outputs of `mnv2 topology` and `mnv2 classify --json`: the layers with their figures (JSON and CSV), and
// the classification of each image (JSON), written by the engine like every other report.
#pragma once

#include <string>
#include <vector>

#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"

namespace mnv2 {

// {"model", "input": {batch, channels, height, width}, "layers": [layer_json...], "totals"}; `stats` from
// analyse(model, batch, height, width).
json::Json topology_json(const ReportModel& model_info, const Model& model, const std::vector<LayerStats>& stats,
                         int batch, int height, int width);
// Header and one row per layer: index, kind, name, block, description, inputs, output shape, params, MACs, bytes.
std::string topology_csv(const Model& model, const std::vector<LayerStats>& stats);

// What one image of a classify run names and ranks.
struct ClassifiedImage {
  std::string input;  // the file (or "file[i]" for the images of a tensor file)
  const Classification* result = nullptr;
};
// One entry per image: input, backend, precision, model, top5 (and "top" when top_k is not 5), every logit, the
// model's warnings.
json::Json classify_json(const std::vector<ClassifiedImage>& images, const std::string& backend, Precision precision,
                         const Model& model, int top_k);

}  // namespace mnv2
