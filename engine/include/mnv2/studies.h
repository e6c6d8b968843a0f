// The studies both front ends run: each is a config struct in, a result struct out, and a progress callback
// that returns false to cancel (the study then throws Error "cancelled"). The CLI (`mnv2 <command>`) parses,
// calls one and prints or writes the result; the app's worker thread calls the same function and turns the
// progress into signals. Neither front end orchestrates backends itself.
//
//   classify   Classifier::classify()          mnv2 classify     the app's photograph panel
//   profile    profile()         (profiler.h)  mnv2 profile      Timings page
//   compare    run_compare()                   mnv2 compare      Timings, Diffs pages (several backends)
//   diff       run_diff()                      -                 Diffs page (one backend against a reference)
//   bench      run_sweep()       (sweep.h)     mnv2 bench        Sweep page
//   eval       evaluate()        (eval.h)      mnv2 eval         Accuracy page
//   memory     memory_study()    (memory.h)    mnv2 memory       Memory page
//   roofline   roofline_study()                mnv2 roofline     run controller (ceilings), Roofline page
//   ncu        ncu_command()                   mnv2 profile --ncu-command   Roofline page (its command line)
//   deep dive  deep_dive()       (deep_dive.h) mnv2 deep-dive   Deep dive page (Nsight Compute on one step)
//   alignment  align_runs()                    -                 run comparison (two reports, fused steps)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/labels.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/roofline.h"
#include "mnv2/tensor.h"

namespace mnv2 {

// ---- compare: the precision rule -------------------------------------------------------------------------

// The one rule for the precision of a comparison (CLI and app alike), given the backends (the first is the
// reference every other is judged against) and the precision asked for:
//  - The reference runs the precision asked for if it has that mode, else fp32: the cpu backends are the
//    float32 reference of the reduced GPU modes (reference_precision()). That fall-back is the only one, and
//    the result says so in a note.
//  - Every other backend runs exactly the precision asked for; one without that mode is a UsageError naming
//    it (a comparison that silently ran fp32 would claim an fp16 figure it never measured).
//  - Every diff is judged in the precision asked for: its layer threshold and logits bound are that mode's
//    (precision_layer_threshold, precision_logits_bound), the backend under test is prepared in it and the
//    reference at reference_precision().
struct CompareRule {
  Precision requested = Precision::fp32;
  std::vector<Precision> run;  // per backend, in the order given
  Precision judged = Precision::fp32;
  std::vector<std::string> notes;  // "cpu-ref runs fp32 as the reference (it has no fp16 mode)"
};
// Whether a backend runs a precision: by default the backend's own answer (Backend::supports); a front end
// that holds the backends' answers already (the app's backend list) may pass them.
using SupportsPrecision = std::function<bool(const std::string& backend, Precision precision)>;

// Throws UsageError for fewer than one backend, unknown or repeated names, or a non-reference backend
// without the mode (availability is not checked here: an unavailable backend fails when it is prepared).
CompareRule resolve_compare(const std::vector<std::string>& backends, Precision requested,
                            const SupportsPrecision& supports = {});

// A compare of every backend of `available` (in order; the first is the reference) in `requested`, as the app's
// Compare runs it: the backends resolve_compare accepts, each later backend without the mode left out with a
// note saying so. `rule` is resolve_compare's for `backends`, its notes followed by those of the left-out ones.
struct CompareSelection {
  std::vector<std::string> backends;
  std::vector<std::string> left_out;
  CompareRule rule;
};
CompareSelection select_compare(const std::vector<std::string>& available, Precision requested,
                                const SupportsPrecision& supports = {});

// (backend index, backend, phase, done, total); phases: "end-to-end", "per-layer" (profile()), "diff".
using CompareProgress =
    std::function<bool(int index, const std::string& backend, const std::string& phase, int done, int total)>;

struct CompareConfig {
  std::vector<std::string> backends;  // the first is the reference
  ProfileConfig base;                 // backend and precision are set per backend by the rule
  bool diffs = true;                  // every other backend's layer outputs against the reference's
};

struct CompareResult {
  CompareRule rule;
  std::vector<RunReport> reports;  // one per backend; reports[i].diff for i > 0 when diffs were asked for
};

// Profiles every backend (each at the rule's precision), then diffs each against the first on the first
// image of the batch (the given input, else the deterministic random image of seed 1).
CompareResult run_compare(const Model& model, const CompareConfig& config, const CompareProgress& progress = {});

// ---- diff: one backend against a reference ---------------------------------------------------------------

struct DiffConfig {
  std::string backend;
  std::string reference = "cpu-ref";
  Precision precision = Precision::fp32;  // asked for; the compare rule decides what each runs
  CudaOptions cuda;
  Tensor input;  // one image; empty: the random image of seed 1 at height x width
  int height = 224;
  int width = 224;
  CudnnOptions cudnn;  // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;      // the GPU backends' CUDA ordinal (PrepareConfig::device)
};
struct DiffResult {
  CompareRule rule;  // rule.run[0] is the reference's precision, rule.run[1] the backend's
  DiffReport diff;
};
DiffResult run_diff(const Model& model, const DiffConfig& config);

// ---- roofline: a run under its device's ceilings -----------------------------------------------------------

// The one rule for the ceilings a profiled run is placed under (CLI and app alike): those of the device it ran on
// (its config.device for the GPU backends; the host at its thread count for the cpu backends), measured in the
// precision it ran (a GPU's compute roof depends on it: fp16 and tf32 tensor cores), read from the cache
// (device_ceilings, mnv2/roofline.h) unless `recalibrate`.
struct RooflineConfig {
  bool recalibrate = false;  // measure the ceilings again instead of reading the cache
};
struct RooflineResult {
  Ceilings ceilings;
  std::string warning;                // the cache could not be read or written (the ceilings stand)
  std::vector<RooflinePoint> points;  // every timed step of the run under them
};
// Throws Error where the device cannot be calibrated (no GPU, another GPU's run, too little memory).
RooflineResult roofline_study(const RunReport& run, const RooflineConfig& config = {});

// ---- ncu-command: one layer under Nsight Compute --------------------------------------------------------------

// What a layer's `ncu` command line (mnv2/ncu.h) repeats: a run's configuration, and where its files are.
struct NcuCommandConfig {
  std::string mnv2_path;   // absolute path of the mnv2 program ncu starts
  std::string model_path;  // absolute; empty: the run finds the model as mnv2 does (synthetic when none)
  // The run: backend, batch, size, precision, the backends' options, device and the option values (what the
  // profiled run must repeat to plan the same steps); counts and timer are ncu's own.
  ProfileConfig run;
  std::string image, tensor;  // the run's input file (absolute), or both empty: the random input
  std::string layer;          // an index or a name (resolve_layer)
};
struct NcuCommand {
  int layer = 0;                  // the layer resolved
  std::string nvtx_range;         // the name of the step that runs it: ncu profiles that range's kernels only
  std::vector<int> step_layers;   // the topology layers that step covers (the layer alone where it is assumed)
  std::vector<std::string> argv;  // ncu_argv(): starts with "ncu"; shell_join() makes the line
  // Non-empty where the backend cannot run here (no GPU on this machine): the range is then assumed to be the
  // layer's own step's (default_step_name) and this says so, since a fusing backend names it after the fused step.
  std::string warning;
};
// The backend is prepared (on config.run.device) to learn its step names. Throws UsageError for a cpu backend (it
// launches no GPU kernels) or a layer that does not exist.
NcuCommand ncu_command(const Model& model, const NcuCommandConfig& config);
// The command of `layer` of a finished run, everything from its report: its options, its model file (unless the
// model was synthetic), its input file where that was one and still exists, and the range from its own steps.
NcuCommand ncu_command(const RunReport& run, int layer, const std::string& mnv2_path);

// ---- classify --------------------------------------------------------------------------------------------

// Why `model` cannot rank classes at this input size (its output is a map, not one score per class: a
// feature extractor, a segmentation net), or empty when it can.
std::string classifier_head_problem(const Model& model, int height, int width);

// Classify of many inputs streams them through one prepared network in batches of at most the batch option (its
// default for classify is this), the last one padded, so its memory does not grow with the number of files: 6,000
// files once took one batch of 6,000.
inline constexpr int kClassifyBatch = 32;
// The batch a classify of `inputs` images runs at: min(inputs, most), at least 1.
int classify_batch(int64_t inputs, int most);

struct ClassifyConfig {
  std::string backend = "cpu";
  Precision precision = Precision::fp32;
  CudaOptions cuda;
  int top = 5;
  CudnnOptions cudnn;  // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;      // the GPU backends' CUDA ordinal (PrepareConfig::device)
};
struct Classification {
  std::vector<Prediction> top;  // the `top` most probable, most probable first
  std::vector<float> logits;    // every class
};
struct ClassifyResult {
  std::string backend_description;
  std::vector<Classification> images;  // one per image of the batch
  // Said on every output next to the predictions: nonfinite_origin()'s warning when the logits hold NaN/Inf.
  std::vector<std::string> warnings;
};

// Where non-finite outputs come from, for every study that shows a network's outputs: "" when `outputs`
// are all finite; otherwise "outputs contain NaN/Inf; first produced by layer N (name)", found by running
// `input` once more through `net` (the network that produced them) with every layer output kept, and
// taking the first layer in topology order whose output holds a NaN or an Inf. A non-finite input is said
// to be the input's doing; a backend that keeps no layer output where it happens (fused away) gets a
// warning that says the layer could not be told.
std::string nonfinite_origin(const Model& model, PreparedNet& net, const Tensor& input, const Tensor& outputs);

// Keeps the prepared network between calls of the same backend, precision and input shape (the app
// classifies photograph after photograph); a change of any of them prepares anew.
class Classifier {
 public:
  Classifier();
  ~Classifier();
  Classifier(const Classifier&) = delete;
  Classifier& operator=(const Classifier&) = delete;
  // input: [N, channels, H, W]. Throws Error for an unavailable backend or a model without a classifier head,
  // UsageError for a label list of the wrong length.
  ClassifyResult classify(const Model& model, const std::vector<std::string>& labels, const ClassifyConfig& config,
                          const Tensor& input);
  // Prepares (or keeps) the network classify() runs on inputs of `input` shape, without running it: a front end
  // that streams many files calls it before it decodes any, so a model or a batch that cannot run is refused
  // before the first image is read. Throws as classify() does.
  void prepare(const Model& model, const ClassifyConfig& config, const Shape& input);
  void release();  // frees the prepared network (its GPU memory) until the next classify()

 private:
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

// ---- alignment of two runs --------------------------------------------------------------------------------

// A stretch of layers that two reports both time as a whole (the union of fused steps on either side): one
// row of a comparison of two runs whose backends fused different layers.
struct AlignedSegment {
  int first_layer = 0;
  std::vector<int> layers;  // ascending
  // Sums over the steps of each report that lie in the segment (ns); p10/p90 of a multi-step segment are sums
  // of the steps' p10/p90, an approximation of the percentiles of the sum.
  double median_a = 0, p10_a = 0, p90_a = 0;
  double median_b = 0, p10_b = 0, p90_b = 0;
  int steps_a = 0, steps_b = 0;
};
// Aligns by layer index; only the first min(layers) layers are compared when the topologies differ in length.
// Segments come out in layer order.
std::vector<AlignedSegment> align_runs(const RunReport& a, const RunReport& b);

// Where B's time differs from A's, in one sentence for a person (mnv2 runs, the app's comparison): the block with
// the largest difference and its ratio, and the kind of layer (expand, dw, project, a fused block, ...) that
// accounts for most of the whole difference: "B is 1.31x A's layer time (+61.2 us); block5 differs most: 1.52x
// (+9.8 us); expand layers account for 64% of the difference". Runs within 1% of each other say so.
std::string difference_headline(const RunReport& a, const RunReport& b, const std::vector<AlignedSegment>& segments);

// ---- what two runs have in common --------------------------------------------------------------------------

// One setting in which two runs differ, and what that does to a comparison of their figures.
struct SettingDifference {
  enum class Weight {
    note,    // worth knowing; the figures compare as they are (backend, iterations, versions, commit)
    warn,    // the figures compare only with the stated correction or caveat (batch, input size, GPU, clocks)
    refuse,  // a layer-by-layer comparison would pair unrelated layers (different topologies)
  };
  std::string setting;  // "batch", "input size", "precision", "device", "SM clock", "model", ...
  std::string a, b;     // the two values as shown ("2", "224×224", "H200 @ 1980 MHz")
  Weight weight = Weight::note;
  std::string consequence;  // why it matters for this comparison, one sentence
};
const char* to_string(SettingDifference::Weight weight);  // "note", "warn", "refuse"

struct RunComparability {
  std::vector<SettingDifference> differences;  // in the order: refusals, warnings, notes
  // Images per run of B over A (batch_b / batch_a): a time ratio divided by this is a per-image ratio.
  double images_ratio = 1;
  bool refused() const;
  bool warned() const;  // any warning (or refusal)
  // The first refusal's consequence, empty when the comparison may go ahead.
  std::string refusal() const;
};

// Every recorded setting of two runs compared: batch, input size, precision, backend, device, SM clocks (at
// the start and end of each run, and between runs), model checksum and topology, timer, per-layer execution,
// input, iterations and warm-up, driver, CUDA runtime, cuDNN and commit. The same rule for both front ends.
RunComparability compare_settings(const RunReport& a, const RunReport& b);

}  // namespace mnv2
