// mnv2 classify: the top-K classes of each image file (or each image of a raw tensor), through the classify
// study.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
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
  // At most this many images per forward pass: many files stream through one prepared network.
  a.table("batch", std::to_string(kClassifyBatch));
  precision_option(a);
  device_option(a);
  cuda_option_set(a);
  a.flag("--json", "print JSON (top-5, the top K, every logit) instead of text");
  a.positional("images", "image files");
}

namespace {

// Where classify's images come from: image files decoded one batch at a time, or a tensor file read one batch at
// a time; either way at most one batch is in memory.
class ImageSource {
 public:
  ImageSource(const std::vector<std::string>& files, const std::optional<std::string>& tensor, const Model& model,
              int height, int width)
      : files_(files), model_(model), image_{1, model.input_channels, height, width} {
    if (tensor) {
      tensor_.emplace(*tensor, image_);
      tensor_path_ = *tensor;
    }
  }
  int64_t count() const { return tensor_ ? tensor_->images() : static_cast<int64_t>(files_.size()); }
  std::string name(int64_t i) const {
    if (!tensor_) return files_[static_cast<size_t>(i)];
    return tensor_->images() == 1 ? tensor_path_ : tensor_path_ + "[" + std::to_string(i) + "]";
  }
  // Images [first, first + count) into the rows of `batch` (zeroed past the last one filled); `taken` gets the
  // index of each row's image. An image file that cannot be read gets `failed(index, error)` and no row.
  template <typename Failed>
  void fill(int64_t first, int64_t count, Tensor& batch, std::vector<int64_t>& taken, Failed&& failed) const {
    taken.clear();
    const int64_t per_image = image_.per_image();
    if (tensor_) {
      const Tensor part = tensor_->read(first, count);
      std::copy(part.data.begin(), part.data.end(), batch.data.begin());
      for (int64_t i = 0; i < count; ++i) taken.push_back(first + i);
    } else {
      for (int64_t i = first; i < first + count; ++i) {
        Tensor one;
        try {
          one = preprocess(decode_image_file(files_[static_cast<size_t>(i)]), model_.preprocess);
        } catch (const Error& e) {
          failed(i, e);
          continue;
        }
        if (one.shape.per_image() != per_image)
          throw Error(files_[static_cast<size_t>(i)] + ": preprocessed to " + one.shape.str() + ", the network takes " +
                      image_.str());
        std::copy(one.data.begin(), one.data.end(),
                  batch.data.begin() + static_cast<int64_t>(taken.size()) * per_image);
        taken.push_back(i);
      }
    }
    std::fill(batch.data.begin() + static_cast<int64_t>(taken.size()) * per_image, batch.data.end(), 0.0f);
  }

 private:
  const std::vector<std::string>& files_;
  const Model& model_;
  Shape image_;
  std::optional<TensorFileReader> tensor_;
  std::string tensor_path_;
};

}  // namespace

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

  // Images run at the size the model's preprocessing crops them to; a tensor file at --input-size (or the model's).
  const int height = tensor_path ? pc.height : m.model.preprocess.crop;
  const int width = tensor_path ? pc.width : m.model.preprocess.crop;
  const ImageSource source(images, tensor_path, m.model, height, width);
  const int64_t total = source.count();
  const int batch = classify_batch(total, pc.batch);
  Classifier classifier;
  ClassifyConfig classify_config{backend_name, precision, pc.cuda, std::max(top, 5), pc.cudnn};
  classify_config.device = pc.device;
  // The network is prepared before any image is read: a model, a size or a batch that cannot run is refused at
  // once, not after the files were decoded.
  const Shape batch_shape{batch, m.model.input_channels, height, width};
  classifier.prepare(m.model, classify_config, batch_shape);
  Tensor input(batch_shape);

  const bool as_json = args.flag("--json");
  int64_t failures = 0;
  auto failed = [&](int64_t i, const Error& e) {
    if (total == 1) throw;  // one file: its error is the command's (called inside the handler that caught it)
    ++failures;
    std::cout.flush();
    std::cerr << "error: " << printable(e.what()) << "\n";
    (void)i;
  };
  bool first_json = true;
  std::vector<int64_t> taken;
  for (int64_t first = 0; first < total; first += batch) {
    const int64_t count = std::min<int64_t>(batch, total - first);
    source.fill(first, count, input, taken, failed);
    if (taken.empty()) continue;
    const ClassifyResult classified = classifier.classify(m.model, labels, classify_config, input);
    // NaN/Inf logits: the results still print (exit 0, as for a model with NaN weights), the warning naming the
    // first layer that produced them goes to stderr, whatever the output format.
    for (const auto& w : classified.warnings) std::cerr << "WARNING: " << printable(w) << "\n";
    for (size_t row = 0; row < taken.size(); ++row) {
      const std::string name = source.name(taken[row]);
      if (as_json) {
        // One image's entry at a time, indented as one array's element: the output does not wait for the last file.
        const std::vector<ClassifiedImage> one{{name, &classified.images[row]}};
        std::string text = json::dump(classify_json(one, backend_name, precision, m.model, top).at(0), 2);
        std::string indented = "\n  ";
        for (char c : text) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
        std::cout << (first_json ? "[" : ",") << indented;
        first_json = false;
        continue;
      }
      const std::vector<Prediction>& preds = classified.images[row].top;
      print_warnings(std::cout, m.model);
      std::cout << printable(name) << "  [backend " << backend_name << ", " << to_string(precision) << "]\n";
      for (int k = 0; k < top && k < static_cast<int>(preds.size()); ++k) {
        char line[512];
        std::snprintf(line, sizeof line, "  %2d. %4d  %6.2f%%  %s\n", k + 1, preds[k].index, preds[k].prob * 100.0,
                      printable(preds[k].label).c_str());
        std::cout << line;
      }
    }
    std::cout.flush();
  }
  if (as_json) std::cout << (first_json ? "[]\n" : "\n]\n");
  // Each unreadable file had its own error line; the exit status says that not every image was classified.
  if (failures > 1)
    std::cerr << failures << " of " << total << " images could not be read (each named above); the others were "
              << "classified\n";
  return failures > 0 ? 1 : 0;
}

}  // namespace mnv2::cli
