// Helpers shared by the GPU backend tests (the contract every GPU backend and variant keeps,
// test_gpu_backend_contract.cpp; what only one backend does, test_cuda_backend.cpp and test_cudnn_backend.cpp): fresh
// seeds, the models (the two MobileNetV2 exports, single convolutions, small networks of every op and of layers no
// fusion takes), error figures, top-5 and the reduced-precision class check, a golden file's run, the steps' cover
// of the layers, the test process's own cudnn plan cache, and an observer that writes down every call.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {

// "" where the TF32 tensor-core kernels run on device 0, else why not: they exist only in code compiled for
// compute_80 or newer (a compute_75 PTX build JIT-compiled on a Hopper GPU runs the half kernels alone).
inline std::string tf32_kernels_missing() {
  std::string why;
  const int arch = kernel_code_arch(0, &why);
  if (arch < 0) return why;
  return arch >= 80 ? std::string()
                    : "the kernels run as compute_" + std::to_string(arch) + " code (TF32 needs compute_80)";
}

// MNV2_TEST_SEED reproduces a failing run; otherwise every run draws new data.
inline uint64_t fresh_seed() {
  if (const char* env = std::getenv("MNV2_TEST_SEED"); env && *env) return std::stoull(env);
  return std::random_device{}();
}

inline const Model& main_model() {
  static const Model model = load_onnx(main_model_path());
  return model;
}
inline const Model& torchvision_model() {
  static const Model model = load_onnx(torchvision_model_path());
  return model;
}

// Relative L2 error; INFINITY for a size mismatch or a non-finite value (an element never written).
inline double rel_l2_of(const Tensor& got, const Tensor& ref) {
  if (got.data.size() != ref.data.size()) return INFINITY;
  const ErrorStats e = compare(got.data.data(), ref.data.data(), static_cast<int64_t>(ref.data.size()));
  return e.finite ? e.rel_l2 : INFINITY;
}

// Indices of the five largest values, ties by lower index.
inline std::vector<int> top5_of(const float* values, int count) {
  std::vector<int> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  const int k = std::min(5, count);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return values[a] > values[b] || (values[a] == values[b] && a < b); });
  order.resize(static_cast<size_t>(k));
  return order;
}

inline std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The class check of the reduced-precision modes against a reference: the same top-1 and the reference's
// top-3 inside the mode's top-5 (classes 4 and 5 of a confident prediction differ by far less than fp16
// rounding).
inline void expect_top_agrees(const std::vector<int>& got, const std::vector<int>& ref) {
  ASSERT_FALSE(got.empty());
  ASSERT_GE(ref.size(), 3u);
  EXPECT_EQ(got.front(), ref.front()) << "top-1; top-5 " << join(got) << " vs " << join(ref);
  for (size_t k = 0; k < 3; ++k)
    EXPECT_NE(std::find(got.begin(), got.end(), ref[k]), got.end())
        << "reference class " << ref[k] << " (rank " << k + 1 << ") not in top-5 " << join(got);
}

// One golden file through a network prepared at batch 1, 224x224: the logits' rel L2 against the float64
// reference and their top-5, printed under `tag` (the variant or mode) beside `bound`; the checks stay with
// the caller. A logits size other than the reference's fails the test and gives an infinite error.
struct GoldenRun {
  Golden golden;
  double rel_l2 = 0;
  std::vector<int> top5;
};
inline GoldenRun run_golden(PreparedNet& net, const std::string& name, const std::string& tag, double bound) {
  GoldenRun r{read_golden(name)};
  Tensor input(Shape{1, 3, 224, 224});
  input.data = r.golden.input;
  const Tensor logits = net.run(input);
  EXPECT_EQ(logits.data.size(), r.golden.logits.size()) << name;
  r.rel_l2 = logits.data.size() == r.golden.logits.size() ? rel_l2(logits.data, r.golden.logits) : INFINITY;
  r.top5 = top5_of(logits.data.data(), static_cast<int>(logits.data.size()));
  std::printf("%-8s golden %-18s rel L2 %.3g (bound %.0e)  top-5 %s (reference %s)\n", tag.c_str(), name.c_str(),
              r.rel_l2, bound, join(r.top5).c_str(), join(r.golden.top5).c_str());
  return r;
}

inline std::vector<float> random_floats(std::mt19937_64& gen, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

struct ConvCase {
  int in_channels, out_channels, kernel_h, kernel_w, stride_h, stride_w;
  int pad_top, pad_left, pad_bottom, pad_right;
  int groups, height, width;
  bool bias;
};

inline std::string describe_case(const ConvCase& c) {
  std::ostringstream s;
  s << "in " << c.in_channels << " out " << c.out_channels << " kernel " << c.kernel_h << "x" << c.kernel_w
    << " stride " << c.stride_h << "x" << c.stride_w << " pads [" << c.pad_top << "," << c.pad_left << ","
    << c.pad_bottom << "," << c.pad_right << "] groups " << c.groups << " map " << c.height << "x" << c.width
    << (c.bias ? " bias" : " no bias");
  return s.str();
}

// A model of one convolution reading the network input, random weights in [-1, 1].
inline Model single_conv_model(const ConvCase& c, std::mt19937_64& gen) {
  Model m;
  m.input_channels = c.in_channels;
  m.input_height = c.height;
  m.input_width = c.width;
  m.num_classes = c.out_channels;
  Layer l;
  l.index = 0;
  l.kind = LayerKind::Conv2d;
  l.name = "conv";
  l.inputs = {kNetworkInput};
  ConvParams& p = l.conv;
  p.in_channels = c.in_channels;
  p.out_channels = c.out_channels;
  p.kernel_h = c.kernel_h;
  p.kernel_w = c.kernel_w;
  p.stride_h = c.stride_h;
  p.stride_w = c.stride_w;
  p.pad_top = c.pad_top;
  p.pad_left = c.pad_left;
  p.pad_bottom = c.pad_bottom;
  p.pad_right = c.pad_right;
  p.groups = c.groups;
  l.weight = random_floats(
      gen, static_cast<size_t>(c.out_channels) * (c.in_channels / c.groups) * c.kernel_h * c.kernel_w, -1.0f, 1.0f);
  if (c.bias) l.bias = random_floats(gen, static_cast<size_t>(c.out_channels), -1.0f, 1.0f);
  m.layers.push_back(l);
  return m;
}

inline Layer& add_layer(Model& m, LayerKind kind, std::vector<int> inputs) {
  Layer l;
  l.index = static_cast<int>(m.layers.size());
  l.kind = kind;
  l.name = "l" + std::to_string(l.index);
  l.inputs = std::move(inputs);
  m.layers.push_back(l);
  return m.layers.back();
}

// Every op kind, fused the way MobileNetV2 is (ReLU without an upper bound, a clip other than 6, a residual
// add whose other operand is an earlier step's output).
inline Model every_op_model(std::mt19937_64& gen) {
  Model m = single_conv_model({3, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 10, 12, true}, gen);
  Layer& relu = add_layer(m, LayerKind::ReLU, {0});
  relu.clip_min = 0.0f;
  relu.clip_max = std::numeric_limits<float>::infinity();
  Layer& pw = add_layer(m, LayerKind::Conv2d, {1});
  pw.conv.in_channels = pw.conv.out_channels = 8;
  pw.weight = random_floats(gen, 64, -1.0f, 1.0f);
  pw.bias = random_floats(gen, 8, -1.0f, 1.0f);
  Layer& clip = add_layer(m, LayerKind::ReLU, {2});
  clip.clip_min = 0.0f;
  clip.clip_max = 3.5f;
  add_layer(m, LayerKind::ResidualAdd, {1, 3});
  add_layer(m, LayerKind::GlobalAveragePool, {4});
  Layer& fc = add_layer(m, LayerKind::Linear, {5});
  fc.in_features = 8;
  fc.out_features = 5;
  fc.weight = random_floats(gen, 40, -1.0f, 1.0f);
  fc.bias = random_floats(gen, 5, -1.0f, 1.0f);
  m.num_classes = 5;
  return m;
}

// Layers a fusing plan cannot fuse: a clip and an add reading the network input, a clip whose input has a second
// reader, an add of two non-convolution outputs, a stride-2 depthwise with asymmetric pads feeding a Linear over a
// 3x4 map (an NHWC plan reads it in another order than the weights are given in). Input 4 channels, 7x8.
inline Model unfusable_model(std::mt19937_64& gen) {
  Model m;
  m.input_channels = 4;
  m.input_height = 7;
  m.input_width = 8;
  Layer& in_clip = add_layer(m, LayerKind::ReLU6, {kNetworkInput});  // 0
  in_clip.clip_min = 0.0f;
  in_clip.clip_max = 6.0f;
  add_layer(m, LayerKind::ResidualAdd, {0, kNetworkInput});  // 1
  Layer& pw = add_layer(m, LayerKind::Conv2d, {1});          // 2: pointwise 4 -> 4, two readers
  pw.conv.in_channels = pw.conv.out_channels = 4;
  pw.weight = random_floats(gen, 16, -1.0f, 1.0f);
  Layer& clip = add_layer(m, LayerKind::ReLU6, {2});  // 3: not fused (2 has another reader)
  clip.clip_min = 0.0f;
  clip.clip_max = 6.0f;
  add_layer(m, LayerKind::ResidualAdd, {2, 3});      // 4
  Layer& dw = add_layer(m, LayerKind::Conv2d, {4});  // 5: depthwise 3x3 s2, pads [0,0,1,1]
  dw.conv.in_channels = dw.conv.out_channels = dw.conv.groups = 4;
  dw.conv.kernel_h = dw.conv.kernel_w = 3;
  dw.conv.stride_h = dw.conv.stride_w = 2;
  dw.conv.pad_bottom = dw.conv.pad_right = 1;
  dw.weight = random_floats(gen, 36, -1.0f, 1.0f);
  dw.bias = random_floats(gen, 4, -1.0f, 1.0f);
  Layer& fc = add_layer(m, LayerKind::Linear, {5});  // 6: over the 4-channel 3x4 map
  fc.in_features = 4 * 3 * 4;
  fc.out_features = 6;
  fc.weight = random_floats(gen, 6 * 48, -1.0f, 1.0f);
  fc.bias = random_floats(gen, 6, -1.0f, 1.0f);
  m.num_classes = 6;
  return m;
}

// Every step covers consecutive layers, each layer exactly once; a fused step's name lists them all.
inline void expect_steps_cover_layers(const std::vector<ExecStep>& steps, size_t layers) {
  std::vector<int> seen(layers, 0);
  int next = 0;
  for (const ExecStep& s : steps) {
    ASSERT_FALSE(s.layers.empty()) << s.name;
    for (int l : s.layers) {
      ASSERT_EQ(l, next) << "step '" << s.name << "' does not continue at layer " << next;
      ++seen[static_cast<size_t>(l)];
      ++next;
      EXPECT_NE(s.name.find(" " + std::to_string(l)), std::string::npos) << s.name << " does not name layer " << l;
    }
    EXPECT_FALSE(s.variant.empty()) << s.name;
  }
  for (size_t l = 0; l < layers; ++l) EXPECT_EQ(seen[l], 1) << "layer " << l;
}

// The cudnn backend's plan cache of this test process: a file of its own (never the user's), the same for the whole
// process, set on first use.
inline std::string test_cache_file() {
  static const std::string path = [] {
    const std::string p =
        (std::filesystem::temp_directory_path() / ("mnv2-test-cudnn-plans-" + std::to_string(fresh_seed()) + ".json"))
            .string();
    synced_setenv("MNV2_CUDNN_PLAN_CACHE", p.c_str(), 1);
    return p;
  }();
  return path;
}

// A StepObserver that writes down every call.
class RecordingObserver final : public StepObserver {
 public:
  struct Call {
    char what;  // 'B' run_begin, 'E' run_end, 's' step_begin, 'e' step_end
    int step;
    void* stream;
  };
  void run_begin(void* stream) override { calls.push_back({'B', -1, stream}); }
  void run_end(void* stream) override { calls.push_back({'E', -1, stream}); }
  void step_begin(int step, void* stream) override { calls.push_back({'s', step, stream}); }
  void step_end(int step, void* stream) override { calls.push_back({'e', step, stream}); }
  std::vector<Call> calls;
};

// Claims to see inside graph replays, for the refusals that come before any replay (the backend checks first).
class GraphClaimingObserver final : public StepObserver {
 public:
  void step_begin(int, void*) override {}
  void step_end(int, void*) override {}
  uint64_t graph_observer_id() const override { return 12345; }
};

}  // namespace mnv2::test
