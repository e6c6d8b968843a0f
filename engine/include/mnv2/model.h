// The engine's own graph of MobileNetV2: an ordered list of layers (the 99-layer topology), with
// shapes, parameter counts, MACs and bytes derived for a given batch and input size.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mnv2/tensor.h"

namespace mnv2 {

enum class LayerKind {
  Conv2d,             // any kernel, stride, pads, groups; bias optional
  ReLU6,              // clamp(x, 0, 6)
  ReLU,               // clamp(x, 0, +inf); other Clip bounds also land here with their own min/max
  ResidualAdd,        // elementwise sum of two layer outputs of the same shape
  GlobalAveragePool,  // mean over H and W
  Linear,             // y = x W^T + b on the flattened input
};
const char* to_string(LayerKind kind);

// Index used in Layer::inputs for the network's input tensor.
inline constexpr int kNetworkInput = -1;

// ONNX Conv auto_pad. SAME_* pads depend on the input map's size (through size mod stride); the importer
// resolves them at the model's declared input size into the explicit pads below, and analyse() refuses an
// input size at which ONNX would pad differently.
enum class AutoPad : uint8_t { NotSet, Valid, SameUpper, SameLower };
const char* to_string(AutoPad mode);

struct ConvParams {
  int in_channels = 0;
  int out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;  // ONNX pads [t, l, b, r]
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;                      // groups == in_channels == out_channels: depthwise
  AutoPad auto_pad = AutoPad::NotSet;  // how the file gave the pads (the pads above are what runs)

  bool depthwise() const { return groups > 1 && groups == in_channels && groups == out_channels; }
  bool pointwise() const { return kernel_h == 1 && kernel_w == 1 && groups == 1; }
  bool symmetric_pads() const { return pad_top == pad_bottom && pad_left == pad_right; }
};

struct Layer {
  int index = 0;
  LayerKind kind = LayerKind::Conv2d;
  std::string name;         // structural name, e.g. "block3.expand", "block3.dw", "head.conv", "classifier"
  std::string source_name;  // the ONNX node name (or output name when the node has none)
  std::vector<int> inputs;  // producing layer indices; kNetworkInput for the network input

  ConvParams conv;        // Conv2d only
  int in_features = 0;    // Linear only
  int out_features = 0;   // Linear only
  float clip_min = 0.0f;  // ReLU6 / ReLU
  float clip_max = 6.0f;  // ReLU6 / ReLU (+inf for ReLU)
  int pool_kernel_h = 0;  // GlobalAveragePool from an AveragePool: its kernel, which must cover
  int pool_kernel_w = 0;  //   the whole input map; 0 = truly global

  // Conv2d: [out_channels, in_channels / groups, kernel_h, kernel_w]; Linear: [out_features, in_features].
  std::vector<float> weight;
  std::vector<float> bias;  // [out_channels] or [out_features]; empty = no bias

  int block = 0;           // 0 = stem, 1..num_blocks = bottlenecks, num_blocks + 1 = head
  std::string block_name;  // "stem", "block1".."block17", "head"

  int64_t param_count() const { return static_cast<int64_t>(weight.size() + bias.size()); }
};

// How images become the network's input (see shared/weights/README.md); ImageNet defaults.
struct Preprocess {
  std::string color = "RGB";                          // channel order fed to the network: "RGB" or "BGR"
  int resize = 256;                                   // shorter side after resize, pixels
  int crop = 224;                                     // centred square crop, pixels
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // [0,1] units, RGB order
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};   // [0,1] units, RGB order
};

// Bounds on mean and std (in the [0,1] units above), checked where a model's metadata is read and again by
// preprocess(). A network input is (pixel/255 - mean) / std: within these bounds it stays below about 1e12
// in magnitude, 26 orders of magnitude short of float32's 3.4e38, so preprocessing alone never makes an Inf
// (mean 1e38 with std 1e-38 gave every class "nan%"). Real models use a mean in [0,1] and a std near 0.2-0.5;
// even one written in 0..255 units by mistake (mean 124, std 58) stays inside and loads.
inline constexpr float kMaxAbsPreprocessMean = 1e6f;
inline constexpr float kMinPreprocessStd = 1e-6f;
inline constexpr float kMaxPreprocessStd = 1e6f;

// One external data file a model read its weights from.
struct ExternalDataFile {
  std::string location;  // as the model file gives it, relative to the model's folder
  std::string checksum;  // "sha256:<64 hex>" of the whole file: what `sha256sum` prints for it
  bool operator==(const ExternalDataFile&) const = default;
};

// Facts about the file a model came from, for `mnv2 info` and the app's Topology header.
struct ModelFileInfo {
  int64_t ir_version = 0;        // ONNX IR version; 0 for the built-in model
  int64_t opset = 0;             // the default (ai.onnx) operator set
  std::string producer_name;     // e.g. "pytorch"
  std::string producer_version;  // e.g. "2.11.0+cu130"
  std::string input_name;        // the graph's image input
  // Its declared shape: a number, a symbolic dimension's name (e.g. "batch"), or "?" when the file leaves
  // the dimension unnamed and open.
  std::vector<std::string> input_dims;
  bool checker_ran = false;                      // the ONNX library's checker validated the file
  std::string checker_note;                      // in words: "passed (ONNX 1.12.0 library)", or why it was skipped
  std::vector<ExternalDataFile> external_files;  // external data files read, in the order first used
  int64_t external_bytes = 0;                    // bytes read from them
};

struct Model {
  std::vector<Layer> layers;  // topological order; the last layer's output is the logits
  int input_channels = 3;
  int input_height = 224;  // the input size the file declares (or 224); any size the net accepts runs
  int input_width = 224;
  int num_classes = 0;
  int num_blocks = 0;        // bottleneck blocks found (17 for MobileNetV2)
  bool synthetic = false;    // true: built-in topology with deterministic synthetic weights
  bool has_softmax = false;  // the file ended in Softmax; the engine returns the logits before it
  Preprocess preprocess;
  std::string source;  // file path, or "builtin:mobilenet_v2_1.0 (synthetic weights)"
  // "sha256:<64 hex>" of the .onnx file's bytes, what `sha256sum` prints for it (external data files have
  // their own, in file.external_files); of the built-in model, of its synthetic weights and biases (float32,
  // layer order).
  std::string checksum;
  ModelFileInfo file;                           // what the ONNX file declared (empty for the built-in model)
  std::map<std::string, std::string> metadata;  // ONNX metadata_props
  std::vector<std::string> warnings;            // shown on every output (e.g. synthetic weights)
};

// The pads [top, left, bottom, right] ONNX gives a convolution with auto_pad SAME_UPPER or SAME_LOWER over
// an h x w input map (kernel, stride and dilation from `p`); SAME_UPPER puts the odd pixel at the end.
std::array<int64_t, 4> resolve_same_pads(const ConvParams& p, int64_t h, int64_t w);

// Per-layer figures for one batch size and input size.
struct LayerStats {
  Shape output;
  int64_t params = 0;
  int64_t macs = 0;              // multiply-accumulates for the whole batch (adds count for ResidualAdd/pool)
  int64_t activation_bytes = 0;  // output tensor bytes
  int64_t bytes = 0;             // fewest bytes moved: inputs read + weights read + output written
};

// Shapes and figures of every layer; throws Error if the network cannot take this input (a map shrinks
// to nothing, an AveragePool that is not global, a Linear whose features do not match, a SAME-padded
// convolution whose pads at this size differ from the ones resolved at the declared size, ...).
std::vector<LayerStats> analyse(const Model& model, int batch, int height, int width);

// The fewest bytes of activations any backend holds to run `model` on `input` (batch, channels, height, width) with
// `stats` analysed for it (analyse()), at `element_bytes` per value: the input and the logits, and, at the layer that
// needs most, its inputs and its output at once. From the graph's shapes only (microseconds), so every backend checks
// it against its memory before it builds any primitive or buffer: a 65,536-pixel input or a convolution padded by
// millions is refused at once, not after a minute of primitive creation. Saturates at INT64_MAX.
int64_t activation_floor_bytes(const Model& model, const Shape& input, const std::vector<LayerStats>& stats,
                               int element_bytes);

// "Conv2d(3, 32, 3, 2, 1, 1)" (in, out, kernel, stride, padding, groups), asymmetric pads as
// "[t, l, b, r]"; "ReLU6()", "ResidualAdd(5, 9)", "GlobalAveragePool()", "Linear(1280, 1001)".
std::string describe(const Layer& layer);

// Counts layers of one kind.
int count_layers(const Model& model, LayerKind kind);

// Assigns block / block_name: the stem is the first convolution and its activation; a bottleneck ends
// at a convolution with no activation after it (the linear projection) and its residual add; the rest
// is the head. Also names layers structurally (stem.conv, blockN.expand/dw/project/add, head.conv, ...).
void assign_blocks_and_names(Model& model);

struct OnnxLoadOptions {
  // The folder external data locations are resolved in (and may not leave); empty: the model file's own
  // folder. The fuzzers point it at a scratch folder, since their model "file" is a memfd.
  std::string external_data_dir;
  // Upper bound on the bytes read from external data files, all tensors together; the files' sizes together
  // are bounded by it too (each is read whole for its SHA-256).
  int64_t max_external_bytes = int64_t{1} << 30;
};

// Loads an ONNX file (IR 3..11, ai.onnx opset 7..23) with the ONNX library into the engine's graph.
// The library's checker runs unless the file is newer than the library knows (then Model::warnings says
// so and the importer's own per-node checks stand alone). BatchNormalization is folded into the preceding
// Conv; Flatten/Reshape/Squeeze/Softmax/Dropout/Identity/Cast are not layers; weights in external files
// are read from inside the model's folder only. Throws Error "FILE: node 'NAME' (OP): reason" (or
// "FILE: initializer 'NAME': reason") for anything it cannot take.
Model load_onnx(const std::string& path, const OnnxLoadOptions& options = {});

// The MobileNetV2 1.0 topology (99 layers, 1001 classes) with deterministic synthetic weights, for timing
// without a model file. Predictions from it are meaningless, and its warnings say so.
Model builtin_mobilenet_v2(uint64_t seed = 2024);

// Whether two checksums ("ALGORITHM:HEX", as Model::checksum and the reports write them) name the same bytes.
// Two of different algorithms (a report written while model checksums were "fnv1a64:" against a "sha256:"
// one), or without an algorithm, tell nothing either way: unknown, not different.
enum class ChecksumMatch { same, different, unknown };
ChecksumMatch match_checksums(const std::string& a, const std::string& b);

// 64-bit FNV-1a of a byte range, as 16 lower-case hex digits (the input tensor's checksum).
std::string fnv1a64_hex(const void* data, size_t size);
// The same hash fed in pieces: start from kFnv1a64Basis, pass each range with the previous result.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ull;
uint64_t fnv1a64_update(uint64_t state, const void* data, size_t size);
std::string hex64(uint64_t value);

}  // namespace mnv2
