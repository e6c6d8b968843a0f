// Plain value types that the run controller's worker thread hands to the GUI thread through queued
// signals. They hold engine results (copies, never pointers into the worker's state).
#pragma once

#include <QImage>
#include <QList>
#include <QMetaType>
#include <QPair>
#include <QSize>
#include <QString>
#include <QStringList>
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/eval.h"
#include "mnv2/labels.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/remote.h"
#include "mnv2/roofline.h"
#include "mnv2/sweep.h"
#include "mnv2/tensor.h"
#include "models/eval_result_model.h"
#include "models/report_access.h"

namespace mnv2::ui {

// Every job sent to the worker gets a fresh id; results of superseded jobs are dropped by the controller.
using JobId = quint64;

// Which library turns image files into pixels (see image_input.h).
enum class ImageDecoder { Auto, OpenCv, QtImage };

struct BackendStatus {
  QString name;  // "cpu", "cudnn", "cuda"
  QString description;
  bool available = false;
  QString reason;                           // why not, when not available
  std::vector<mnv2::Precision> precisions;  // what Backend::supports() answered, fp32 first

  bool supports(mnv2::Precision p) const {
    return std::find(precisions.begin(), precisions.end(), p) != precisions.end();
  }
};

// What the machine offers, queried once on the worker thread (it is the thread that does all CUDA work).
struct EnvironmentInfo {
  std::vector<BackendStatus> backends;
  mnv2::CudaEnvironment cuda;
  bool openCvDecoding = false;  // the engine decodes image files itself (OpenCV imgcodecs)
};

struct ModelInfo {
  QString how;  // "--model", "MNV2_MODEL", "weights folder ...", "none"
  QString source;
  QString checksum;
  bool synthetic = false;
  QStringList warnings;
  int numClasses = 0;
  int inputChannels = 3;
  int inputHeight = 224;
  int inputWidth = 224;
  int numBlocks = 0;
  mnv2::Preprocess preprocess;
  // What the file declares, as label/value rows from mnv2::model_summary_rows() (format, producer, input,
  // classes, labels, checker, external data): the same rows `mnv2 info` prints.
  QList<QPair<QString, QString>> fileFacts;
  std::vector<mnv2::Layer> topology;    // the model's layers without their weights
  std::vector<mnv2::LayerStats> stats;  // batch 1 at the declared input size
};

struct ClassifyRequest {
  QString imagePath;
  QString backend;
  ImageDecoder decoder = ImageDecoder::Auto;
  mnv2::CudaOptions cuda;
  mnv2::CudnnOptions cudnn;  // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;            // the GPU backends' CUDA ordinal (PrepareConfig::device)
};

struct ClassifyResult {
  QString imagePath;
  QString backend;
  QString decoder;     // "OpenCV imgcodecs" or "QImage"
  QImage picture;      // the decoded image, scaled down for display when large
  QSize originalSize;  // decoded size in pixels
  QImage crop;         // the network's 8-bit input crop (RGB888)
  mnv2::Tensor input;  // the preprocessed 1 x C x H x W tensor
  std::vector<mnv2::Prediction> top5;
  double runMs = 0;      // one forward pass, host wall time
  QStringList warnings;  // the engine's, e.g. NaN/Inf logits with the first layer that produced them
};

struct ProfileRequest {
  QStringList backends;  // profiled in this order; with compare, the first is the diff reference
  bool compare = false;  // also diff every other backend against the first (first image of the batch)
  // backend is set per run; input may hold the opened image. config.precision is the mode asked for: a
  // backend that does not run it runs fp32 (mnv2::reference_precision), and its report says so.
  mnv2::ProfileConfig config;
  bool measureCeilings = false;  // also the roofline ceilings of the first backend's device (cached per device)
  // Where the run happens: this machine (none), or a remote target (mnv2::remote::profile_on_target), which is
  // sent the model file `modelPath` (the file the app opened) and the input tensor; no ceilings are measured there.
  std::optional<mnv2::remote::Target> target;
  QString modelPath;
};

struct RunProgress {
  JobId id = 0;
  QString backend;
  QString phase;  // "end-to-end", "per-layer", "diff"
  int done = 0;
  int total = 0;
  int backendIndex = 0;
  int backendCount = 1;
  double fraction = 0;    // of the whole job, 0..1
  double imagesPerS = 0;  // accuracy evaluation: images done / seconds since it started
  // A run on a remote target: the whole status line ("h200: pending: job 12: Priority", "h200: upload model 3/14
  // MiB", "h200: cuda end-to-end 5/20"); empty for a run here, whose line is made of the fields above.
  QString text{};
};

struct ProfileResult {
  JobId id = 0;
  bool compare = false;
  mnv2::Precision requested = mnv2::Precision::fp32;  // each report's config.precision is what it ran
  std::vector<mnv2::RunReport> reports;               // diffs (compare) sit in reports[i].diff for i >= 1
  std::optional<mnv2::Ceilings> ceilings;             // when asked for: the first backend's device
  QString ceilingsNote;                               // why there are none, or a cache warning
};

struct DiffRequest {
  QString backend;
  QString reference;
  // Asked for; the compare rule (mnv2::resolve_compare) decides what the backend and the reference run.
  mnv2::Precision precision = mnv2::Precision::fp32;
  mnv2::CudaOptions cuda;
  int device = 0;      // the GPU backends' CUDA ordinal (PrepareConfig::device)
  mnv2::Tensor input;  // one image; empty: the random input (seed 1) the profiler uses
  QString inputName;
  int height = 224;
  int width = 224;
  mnv2::CudnnOptions cudnn;  // the cudnn backend's options (PrepareConfig::cudnn)
};

struct DiffResult {
  JobId id = 0;
  mnv2::DiffReport diff;
  QString inputName;
  mnv2::Precision precision = mnv2::Precision::fp32;           // what the backend under test ran
  mnv2::Precision referencePrecision = mnv2::Precision::fp32;  // what the reference ran
};

// A sweep: end-to-end benchmarks over backends x input sizes x batch sizes (engine run_sweep).
struct SweepRequest {
  mnv2::SweepConfig config;
};

struct SweepResult {
  JobId id = 0;
  std::vector<mnv2::BenchResult> results;  // in run order: backend, then size, then batch
};

// Accuracy evaluation over a labelled image set (engine evaluate()), with the app's own image decoder.
struct EvalRequest {
  QString set;        // a folder with one sub-folder per class, or a list file of "FILENAME LABEL" lines
  QString imagesDir;  // a list file's images; empty: the list file's folder
  mnv2::EvalConfig config;
  ImageDecoder decoder = ImageDecoder::Auto;
};

struct EvalOutcome {
  JobId id = 0;
  EvalRecord record;  // the set, the decoder ("QImage" or "OpenCV imgcodecs") and the engine's result
};

// What a remote target has (mnv2::remote::Session::probe), or the engine's error when it could not be asked.
struct TargetProbe {
  JobId id = 0;
  QString target;  // the target's name
  bool ok = false;
  mnv2::remote::ProbeResult result;  // when ok
  QString error;                     // when not: the engine's words
  QString progress;                  // while waiting: "connect gpu-login", "pending: job 12: Priority"
};

enum class JobKind { Environment, Model, Classify, Profile, Diff, Eval };

struct JobFailure {
  JobId id = 0;
  JobKind kind = JobKind::Profile;
  QString message;
};

}  // namespace mnv2::ui

Q_DECLARE_METATYPE(mnv2::ui::EnvironmentInfo)
Q_DECLARE_METATYPE(mnv2::ui::ModelInfo)
Q_DECLARE_METATYPE(mnv2::ui::ClassifyResult)
Q_DECLARE_METATYPE(mnv2::ui::RunProgress)
Q_DECLARE_METATYPE(mnv2::ui::ProfileResult)
Q_DECLARE_METATYPE(mnv2::ui::DiffResult)
Q_DECLARE_METATYPE(mnv2::ui::JobFailure)
Q_DECLARE_METATYPE(mnv2::ui::SweepResult)
Q_DECLARE_METATYPE(mnv2::ui::EvalOutcome)
Q_DECLARE_METATYPE(mnv2::ui::TargetProbe)
