// The classify study: one prepared network kept between calls, the classifier-head check both front ends
// need (mnv2/studies.h).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "mnv2/error.h"
#include "mnv2/studies.h"

namespace mnv2 {

std::string classifier_head_problem(const Model& model, int height, int width) {
  const Shape out = analyse(model, 1, height, width).back().output;
  if (out.h == 1 && out.w == 1) return {};
  return model.source + ": the network's output is a " + std::to_string(out.c) + "x" + std::to_string(out.h) + "x" +
         std::to_string(out.w) +
         " map per image, not one score per class; classify needs a classifier head (a global pool, then a Linear or "
         "1x1 convolution)";
}

int classify_batch(int64_t inputs, int most) {
  return static_cast<int>(std::clamp<int64_t>(inputs, 1, std::max(1, most)));
}

namespace {

bool all_finite(const Tensor& t) {
  return std::all_of(t.data.begin(), t.data.end(), [](float v) { return std::isfinite(v); });
}

}  // namespace

std::string nonfinite_origin(const Model& model, PreparedNet& net, const Tensor& input, const Tensor& outputs) {
  if (all_finite(outputs)) return {};
  const std::string what = "outputs contain NaN/Inf; ";
  if (!all_finite(input)) return what + "the network's input already holds NaN/Inf";
  RunOptions keep;
  keep.keep_layer_outputs = true;
  (void)net.run(input, keep);
  const std::vector<Tensor>& layers = net.layer_outputs();
  for (size_t l = 0; l < layers.size() && l < model.layers.size(); ++l) {
    if (layers[l].empty() || all_finite(layers[l])) continue;
    const Layer& layer = model.layers[l];
    return what + "first produced by layer " + std::to_string(layer.index) + " (" + layer.name + ")";
  }
  return what +
         "the layer that first produced them could not be told (the backend keeps no layer output that "
         "holds them; cpu-ref keeps every one)";
}

struct Classifier::Cache {
  const Model* model = nullptr;
  std::string model_checksum;                      // of the .onnx file (or the synthetic weights)
  std::vector<ExternalDataFile> model_data_files;  // and of its weights files
  ClassifyConfig config;
  PrepareConfig prepared;
  std::string description;
  std::unique_ptr<PreparedNet> net;
};

Classifier::Classifier() : cache_(std::make_unique<Cache>()) {}
Classifier::~Classifier() = default;

void Classifier::release() { cache_ = std::make_unique<Cache>(); }

void Classifier::prepare(const Model& model, const ClassifyConfig& config, const Shape& input) {
  PrepareConfig pc{static_cast<int>(input.n),
                   static_cast<int>(input.h),
                   static_cast<int>(input.w),
                   config.precision,
                   config.cuda,
                   0,
                   config.cudnn};
  pc.device = config.device;
  Cache& c = *cache_;
  const bool same = c.net && c.model == &model && c.model_checksum == model.checksum &&
                    c.model_data_files == model.file.external_files && c.config.backend == config.backend &&
                    c.prepared.batch == pc.batch && c.prepared.height == pc.height && c.prepared.width == pc.width &&
                    c.prepared.precision == pc.precision && c.prepared.cuda == pc.cuda &&
                    c.prepared.cudnn == pc.cudnn && c.prepared.device == pc.device;
  if (same) return;
  c.net.reset();  // a GPU network's memory is freed before the next one takes its own
  if (std::string problem = classifier_head_problem(model, pc.height, pc.width); !problem.empty()) throw Error(problem);
  auto backend = make_backend(config.backend);
  if (const Availability a = backend->availability(); !a.available)
    throw Error("backend '" + config.backend + "' is not available: " + a.reason);
  c.net = backend->prepare(model, pc);
  c.model = &model;
  c.model_checksum = model.checksum;
  c.model_data_files = model.file.external_files;
  c.config = config;
  c.prepared = pc;
  c.description = backend->description();
}

ClassifyResult Classifier::classify(const Model& model, const std::vector<std::string>& labels,
                                    const ClassifyConfig& config, const Tensor& input) {
  if (static_cast<int>(labels.size()) != model.num_classes)
    throw UsageError(std::to_string(labels.size()) + " labels for a model with " + std::to_string(model.num_classes) +
                     " classes");
  if (config.top < 1) throw UsageError("top must be at least 1");
  prepare(model, config, input.shape);
  Cache& c = *cache_;
  const Tensor logits = c.net->run(input);
  const int classes = static_cast<int>(logits.shape.per_image());
  ClassifyResult result;
  result.backend_description = c.description;
  if (std::string warning = nonfinite_origin(model, *c.net, input, logits); !warning.empty())
    result.warnings.push_back(std::move(warning));
  for (int64_t i = 0; i < logits.shape.n; ++i) {
    const float* row = logits.data.data() + i * classes;
    Classification one;
    one.top = top_k(row, classes, config.top, labels);
    one.logits.assign(row, row + classes);
    result.images.push_back(std::move(one));
  }
  return result;
}

}  // namespace mnv2
