// `mnv2 topology` and `mnv2 classify --json` outputs (mnv2/topology_report.h).
#include "mnv2/topology_report.h"

#include <algorithm>

#include "mnv2/csv.h"

namespace mnv2 {

json::Json topology_json(const ReportModel& model_info, const Model& model, const std::vector<LayerStats>& stats,
                         int batch, int height, int width) {
  json::Json j = json::Json::object();
  j["model"] = model_json(model_info);
  j["input"] = {{"batch", batch}, {"channels", model.input_channels}, {"height", height}, {"width", width}};
  json::Json layers = json::Json::array();
  int64_t params = 0, macs = 0, activation_bytes = 0;
  for (size_t i = 0; i < model.layers.size() && i < stats.size(); ++i) {
    layers.push_back(layer_json(model.layers[i], stats[i]));
    params += stats[i].params;
    macs += stats[i].macs;
    activation_bytes += stats[i].activation_bytes;
  }
  j["layers"] = layers;
  json::Json totals = json::Json::object();
  totals["layers"] = static_cast<int64_t>(model.layers.size());
  for (LayerKind k : {LayerKind::Conv2d, LayerKind::ReLU6, LayerKind::ReLU, LayerKind::ResidualAdd,
                      LayerKind::GlobalAveragePool, LayerKind::Linear})
    if (int c = count_layers(model, k)) totals[to_string(k)] = c;
  totals["blocks"] = model.num_blocks;
  totals["params"] = params;
  totals["macs"] = macs;
  totals["activation_bytes"] = activation_bytes;
  j["totals"] = totals;
  return j;
}

std::string topology_csv(const Model& model, const std::vector<LayerStats>& stats) {
  std::string out =
      "index,kind,name,block,description,inputs,out_n,out_c,out_h,out_w,params,macs,activation_bytes,bytes\n";
  for (size_t i = 0; i < model.layers.size() && i < stats.size(); ++i) {
    const Layer& l = model.layers[i];
    const LayerStats& s = stats[i];
    std::string inputs;
    for (int in : l.inputs) inputs += (inputs.empty() ? "" : " ") + std::to_string(in);
    // The description is always quoted (it holds commas); the other text fields only where they must be.
    std::string description = csv_quote(describe(l));
    if (description.front() != '"') description = '"' + description + '"';
    out += std::to_string(l.index) + ',' + to_string(l.kind) + ',' + csv_quote(l.name) + ',' + csv_quote(l.block_name) +
           ',' + description + ',' + inputs + ',' + std::to_string(s.output.n) + ',' + std::to_string(s.output.c) +
           ',' + std::to_string(s.output.h) + ',' + std::to_string(s.output.w) + ',' + std::to_string(s.params) + ',' +
           std::to_string(s.macs) + ',' + std::to_string(s.activation_bytes) + ',' + std::to_string(s.bytes) + '\n';
  }
  return out;
}

json::Json classify_json(const std::vector<ClassifiedImage>& images, const std::string& backend, Precision precision,
                         const Model& model, int top_k) {
  json::Json results = json::Json::array();
  for (const ClassifiedImage& image : images) {
    const std::vector<Prediction>& preds = image.result->top;
    auto pred_list = [&](size_t count) {
      json::Json a = json::Json::array();
      for (size_t k = 0; k < count && k < preds.size(); ++k)
        a.push_back({{"index", preds[k].index}, {"label", preds[k].label}, {"prob", preds[k].prob}});
      return a;
    };
    json::Json r = json::Json::object();
    r["input"] = image.input;
    r["backend"] = backend;
    r["precision"] = to_string(precision);
    r["model"] = model.source;
    r["top5"] = pred_list(5);
    if (top_k != 5) r["top"] = pred_list(static_cast<size_t>(top_k));
    json::Json logits = json::Json::array();
    for (float v : image.result->logits) logits.push_back(static_cast<double>(v));
    r["logits"] = logits;
    r["warnings"] = model.warnings;
    results.push_back(r);
  }
  return results;
}

}  // namespace mnv2
