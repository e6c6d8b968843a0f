// Accuracy evaluation: top-1 and top-5 over a labelled image set, with decoding and preprocessing on a
// pool of loader threads that runs ahead of inference by a bounded number of batches.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"

namespace mnv2 {

struct EvalItem {
  std::string path;  // as found (list file: relative names are joined to the images folder)
  int label = 0;     // class index of the model's output
  // Non-empty: found but unreadable ("a symbolic link loop", "a FIFO (named pipe), not an image file", ...);
  // evaluate() lists it in EvalResult::skipped with this reason, in input order, without loading it.
  std::string skip = {};
};

// A list file: one "FILENAME LABEL" per line (the label is the last whitespace-separated field, so names
// may hold spaces); blank lines and lines starting with '#' are skipped; a UTF-8 byte order mark is dropped;
// names are taken from `images_dir`. Throws Error naming FILE:LINE for a malformed line, a label outside
// 0..classes-1, or a name that is absolute or holds a '..' (a list reads beneath its images folder only), and
// Error naming the file for one that is not a regular file (a FIFO or a device is refused, never waited
// on) or is over its budget (inputs::kEvalList in mnv2/input_files.h).
std::vector<EvalItem> read_eval_list(const std::string& list_file, const std::string& images_dir, int classes);

// One sub-folder per class. A folder's name is its label index when it is a decimal number ("286"),
// otherwise a class name: the whole label line or its first comma-separated name, compared without
// regard to case, spaces and underscores ("Egyptian_cat" is 285 with 1001 labels). Files are taken in
// name order; hidden files are skipped. Throws Error naming the folder when a name matches no class, or
// several (a labels file that names two classes alike: the folder must then be named by its index), or
// when `dir` itself cannot be listed. What cannot be read below it (a symbolic link loop, a dangling link,
// a FIFO, socket or device, a sub-folder without permission to list it) becomes an item with `skip` set,
// so the evaluation goes on and reports it; an unreadable file is skipped by the loader.
std::vector<EvalItem> scan_class_folders(const std::string& dir, const std::vector<std::string>& labels);

struct EvalConfig {
  std::string backend = "cpu";
  int batch = 1;
  Precision precision = Precision::fp32;
  CudaOptions cuda;        // the cuda backend's options (PrepareConfig::cuda)
  int loader_threads = 0;  // 0: min(4, hardware threads)
  int queue_batches = 0;   // batches decoded ahead of inference at most; 0: loader_threads + 1
  CudnnOptions cudnn;      // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;          // the GPU backends' CUDA ordinal (PrepareConfig::device)
};

struct EvalMiss {
  std::string path;
  int label = 0;
  std::vector<int> top5;  // predicted, most probable first
};

struct EvalSkip {
  std::string path;
  std::string reason;  // the decoder's message, or why the folder scan could not read it (EvalItem::skip)
};

struct EvalResult {
  EvalConfig config;
  std::string backend_description;
  int images = 0;  // evaluated (skipped files excluded)
  int top1_correct = 0, top5_correct = 0;
  double top1 = 0, top5 = 0;            // fractions of `images`
  double wall_s = 0;                    // first decode to last result
  double images_per_s = 0;              // images / wall_s
  double inference_s = 0;               // time inside PreparedNet::run
  double loader_wait_s = 0;             // time inference waited for decoded batches (the loaders' shortfall)
  std::vector<EvalMiss> misclassified;  // top-1 wrong, in input order
  std::vector<EvalSkip> skipped;        // unreadable images, in input order
  std::string queue_note;               // non-empty when the loader queue was cut to fit (fit_loader_queue)
};

// The image loaders' queue, fitted to the host's memory before any image is decoded: batches claimed ahead of the
// network (being decoded or ready) take ahead x batch x the preprocessed image, plus the batch being consumed and
// the network's input batch, plus each thread's decode of one image (kLoaderDecodeBytes: a 20-megapixel photograph
// decoded to RGB with its resize). When that exceeds kLoaderShareOfAvailable of `available` (bytes, -1 for
// unknown: taken as asked), the queue is shortened (down to 1 batch ahead) and the threads with it (never more
// threads than batches ahead: the rest would wait); when even one batch ahead does not fit, Error naming the
// batch and both figures. A queue of 257 batches of 4,096 images once took 23.8 GB before the OOM killer ended it.
inline constexpr int64_t kLoaderDecodeBytes = int64_t{64} << 20;
inline constexpr double kLoaderShareOfAvailable = 0.75;
struct LoaderQueue {
  int threads = 1, ahead = 1;
  int64_t bytes = 0;  // what the queue may hold at most, by the rule above
  std::string note;   // how and why it was cut; empty when taken as asked
};
LoaderQueue fit_loader_queue(int batch, int64_t values_per_image, int threads, int ahead, int64_t available);

// Turns a file into one preprocessed 1xCxHxW tensor of the model's input size; throws Error naming the
// file. The default decodes with decode_image_file() and preprocess(), except that a ".f32" file is taken
// as one image already preprocessed (raw float32 NCHW 1x3xCROPxCROP, the --tensor format): a set decoded on
// one machine evaluates on another without image codecs (the GPU machine). The app passes its own decoder.
using ImageLoader = std::function<Tensor(const std::string& path)>;
bool is_tensor_file(const std::string& path);  // a ".f32" name, any case
ImageLoader default_image_loader(const Preprocess& preprocess);

// (images done, images total); returning false cancels (throws Error "cancelled"). Called with done = 0 once
// the backend is prepared, when the clock of wall_s and images_per_s starts, then after every batch.
using EvalProgress = std::function<bool(int done, int total)>;

// An unreadable image is skipped and listed in `skipped` (a data set with one bad file still evaluates);
// Error when every image is unreadable, the set is empty, or the backend fails.
EvalResult evaluate(const Model& model, const std::vector<EvalItem>& items, const EvalConfig& config,
                    const ImageLoader& loader, const EvalProgress& progress = {});

}  // namespace mnv2
