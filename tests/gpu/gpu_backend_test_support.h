// Helpers shared by the GPU backend tests (test_cudnn_backend.cpp, test_cuda_backend.cpp): fresh seeds, the
// two models, error figures, top-5 and the reduced-precision class check, a golden file's run,
// single-convolution models, and an observer that writes down every call.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
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

}  // namespace mnv2::test
