// mnv2 classify: the top-K classes of each image file (or each image of a raw tensor), through the classify
// study.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/json_io.h"
#include "mnv2/labels.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"
#include "mnv2/tensor.h"
#include "mnv2/topology_report.h"
#include "output.h"
#include "run_request.h"

namespace mnv2::cli {

void declare_classify(Args& a) {
  model_options(a);
  labels_option(a);
  backend_option(a);
  a.value("--top", "classes per image (default 5)");
  a.input("--tensor", "classify the images of this raw float32 NCHW tensor file instead");
  size_option(a);
  precision_option(a);
  device_option(a);
  cuda_option_set(a);
  a.flag("--json", "print JSON (top-5, the top K, every logit) instead of text");
  a.positional("images", "image files");
}

int cmd_classify(const Args& args, const OptionValues& options) {
  const std::string backend_name = args.get_or("--backend", "cpu");
  const int top = parse_int(args.get_or("--top", "5"), "--top", 1, 100000);
  const Precision precision = parse_precision(options.value("precision"));
  const auto tensor_path = args.get("--tensor");
  const auto& images = args.positionals();
  if (tensor_path && !images.empty()) throw UsageError("give image files or --tensor, not both");
  if (!tensor_path && images.empty()) throw UsageError("classify needs image files or --tensor F");
  if (!tensor_path && args.get("--input-size"))
    throw UsageError("--input-size applies to --tensor inputs; images are cropped as the model's preprocessing says");
  make_backend(backend_name);  // unknown names are usage errors, before any file work
  if (Availability a = make_backend(backend_name)->availability(); !a.available)
    throw Error("backend '" + backend_name + "' is not available: " + a.reason);

  LoadedModel m = load_model(args, options);
  const PrepareConfig pc = prepare_config_of(options, {m.model.input_height, m.model.input_width});
  std::vector<std::string> labels =
      args.get("--labels") ? read_labels_file(*args.get("--labels")) : builtin_labels(m.model.num_classes);
  if (static_cast<int>(labels.size()) != m.model.num_classes)
    throw Error(args.get_or("--labels", "built-in labels") + ": " + std::to_string(labels.size()) +
                " labels for a model with " + std::to_string(m.model.num_classes) + " classes");

  Tensor input;
  std::vector<std::string> names;
  if (tensor_path) {
    input = read_tensor_file(*tensor_path, Shape{1, m.model.input_channels, pc.height, pc.width});
    for (int64_t i = 0; i < input.shape.n; ++i)
      names.push_back(input.shape.n == 1 ? *tensor_path : *tensor_path + "[" + std::to_string(i) + "]");
  } else {
    std::vector<Tensor> batch;
    for (const auto& path : images) {
      batch.push_back(preprocess(decode_image_file(path), m.model.preprocess));
      names.push_back(path);
    }
    input = stack_batch(batch);
  }
  Classifier classifier;
  ClassifyConfig classify_config{backend_name, precision, pc.cuda, std::max(top, 5), pc.cudnn};
  classify_config.device = pc.device;
  const ClassifyResult classified = classifier.classify(m.model, labels, classify_config, input);
  // NaN/Inf logits: the results still print (exit 0, as for a model with NaN weights), the warning naming the
  // first layer that produced them goes to stderr, whatever the output format.
  for (const auto& w : classified.warnings) std::cerr << "WARNING: " << printable(w) << "\n";
  if (args.flag("--json")) {
    std::vector<ClassifiedImage> images;
    for (size_t i = 0; i < classified.images.size(); ++i) images.push_back({names[i], &classified.images[i]});
    std::cout << json::dump(classify_json(images, backend_name, precision, m.model, top), 2) << "\n";
    return 0;
  }
  for (size_t i = 0; i < classified.images.size(); ++i) {
    const std::vector<Prediction>& preds = classified.images[i].top;
    print_warnings(std::cout, m.model);
    std::cout << printable(names[i]) << "  [backend " << backend_name << ", " << to_string(precision) << "]\n";
    for (int k = 0; k < top && k < static_cast<int>(preds.size()); ++k) {
      char line[512];
      std::snprintf(line, sizeof line, "  %2d. %4d  %6.2f%%  %s\n", k + 1, preds[k].index, preds[k].prob * 100.0,
                    printable(preds[k].label).c_str());
      std::cout << line;
    }
  }
  return 0;
}

}  // namespace mnv2::cli
