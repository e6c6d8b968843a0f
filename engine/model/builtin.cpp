// The MobileNetV2 1.0/224 topology built in code, with deterministic synthetic weights: lets the profiler
// time every backend when no model file is at hand. It mirrors shared/weights/mobilenet_v2_1.0_224.onnx
// layer for layer (TensorFlow-style asymmetric pads on stride-2 convolutions, 1001 classes).
#include <cmath>
#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "mnv2/model.h"
#include "util/sha256.h"

namespace mnv2 {

namespace {

// xorshift64*: tiny, fast and identical on every platform, which is all synthetic weights need.
class Xorshift {
 public:
  explicit Xorshift(uint64_t seed) {
    // splitmix64 spreads small seeds (0, 1, 2...) over the whole state; xorshift must not start at 0.
    uint64_t z = seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    state_ = (z ^ (z >> 31)) | 1;
  }
  // Uniform in [-1, 1).
  float uniform() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    const uint64_t r = state_ * 0x2545f4914f6cdd1dull;
    return static_cast<float>(static_cast<double>(r >> 40) * (2.0 / 16777216.0) - 1.0);
  }

 private:
  uint64_t state_;
};

struct Builder {
  Model model;
  Xorshift rng;

  explicit Builder(uint64_t seed) : rng(seed) {}

  int push(Layer l, const std::string& source) {
    l.index = static_cast<int>(model.layers.size());
    l.source_name = source;
    model.layers.push_back(std::move(l));
    return model.layers.back().index;
  }

  // He-uniform for convolutions feeding ReLU6 (variance 2/fan_in), LeCun-uniform for the linear projections
  // and the classifier (variance 1/fan_in): activations keep an O(1) scale through all 99 layers.
  void fill(Layer& l, int64_t count, int64_t fan_in, int64_t outputs, bool before_relu) {
    const float bound = static_cast<float>(std::sqrt((before_relu ? 6.0 : 3.0) / static_cast<double>(fan_in)));
    l.weight.resize(static_cast<size_t>(count));
    for (float& w : l.weight) w = bound * rng.uniform();
    l.bias.resize(static_cast<size_t>(outputs));
    for (float& b : l.bias) b = 0.05f * rng.uniform();
  }

  int conv(int input, int cin, int cout, int kernel, int stride, int groups, bool relu6, int& counter) {
    Layer l;
    l.kind = LayerKind::Conv2d;
    l.inputs = {input};
    ConvParams& p = l.conv;
    p.in_channels = cin;
    p.out_channels = cout;
    p.kernel_h = p.kernel_w = kernel;
    p.stride_h = p.stride_w = stride;
    p.groups = groups;
    if (kernel == 3) {
      // TensorFlow SAME at an even size: stride 2 pads only bottom/right.
      p.pad_top = p.pad_left = stride == 2 ? 0 : 1;
      p.pad_bottom = p.pad_right = 1;
    }
    const int64_t fan_in = static_cast<int64_t>(cin / groups) * kernel * kernel;
    fill(l, fan_in * cout, fan_in, cout, relu6);
    const std::string name = "conv" + std::to_string(counter++);
    int idx = push(std::move(l), name);
    if (relu6) {
      Layer a;
      a.kind = LayerKind::ReLU6;
      a.clip_min = 0.0f;
      a.clip_max = 6.0f;
      a.inputs = {idx};
      idx = push(std::move(a), name + "_relu6");
    }
    return idx;
  }
};

}  // namespace

Model builtin_mobilenet_v2(uint64_t seed) {
  Builder b(seed);
  int counter = 0;
  int x = b.conv(kNetworkInput, 3, 32, 3, 2, 1, true, counter);
  int channels = 32;

  // (expansion t, output channels c, repeats n, first stride s): the MobileNetV2 paper's table 2.
  struct Stage {
    int t, c, n, s;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int adds = 0;
  for (const Stage& st : stages) {
    for (int r = 0; r < st.n; ++r) {
      const int stride = r == 0 ? st.s : 1;
      const int hidden = channels * st.t;
      const int block_in = x;
      int y = x;
      if (st.t != 1) y = b.conv(y, channels, hidden, 1, 1, 1, true, counter);
      y = b.conv(y, hidden, hidden, 3, stride, hidden, true, counter);
      y = b.conv(y, hidden, st.c, 1, 1, 1, false, counter);
      if (stride == 1 && channels == st.c) {
        Layer add;
        add.kind = LayerKind::ResidualAdd;
        add.inputs = {y, block_in};
        y = b.push(std::move(add), "add" + std::to_string(adds++));
      }
      x = y;
      channels = st.c;
    }
  }
  x = b.conv(x, channels, 1280, 1, 1, 1, true, counter);

  Layer pool;
  pool.kind = LayerKind::GlobalAveragePool;
  pool.inputs = {x};
  x = b.push(std::move(pool), "pool");

  Layer fc;
  fc.kind = LayerKind::Linear;
  fc.inputs = {x};
  fc.in_features = 1280;
  fc.out_features = 1001;
  b.fill(fc, int64_t{1280} * 1001, 1280, 1001, false);
  b.push(std::move(fc), "logits");

  Model& m = b.model;
  m.input_channels = 3;
  m.input_height = m.input_width = 224;
  m.num_classes = 1001;
  m.synthetic = true;
  m.source = "builtin:mobilenet_v2_1.0 (synthetic weights)";
  m.warnings.push_back(
      "no model file: built-in MobileNetV2 topology with synthetic weights — predictions are meaningless");
  // The main model's preprocessing (Inception-style [-1, 1] inputs), so images flow the same way.
  m.preprocess.color = "RGB";
  m.preprocess.resize = 256;
  m.preprocess.crop = 224;
  m.preprocess.mean = {0.5f, 0.5f, 0.5f};
  m.preprocess.std = {0.5f, 0.5f, 0.5f};

  std::vector<std::byte> bytes;  // the weights and biases as float32, layer by layer: what the checksum covers
  for (const Layer& l : m.layers) {
    for (const std::vector<float>* v : {&l.weight, &l.bias}) {
      const size_t at = bytes.size();
      bytes.resize(at + v->size() * sizeof(float));
      if (!v->empty()) std::memcpy(bytes.data() + at, v->data(), v->size() * sizeof(float));
    }
  }
  m.checksum = "sha256:" + sha256_hex(std::span<const std::byte>(bytes));
  assign_blocks_and_names(m);
  return std::move(b.model);
}

}  // namespace mnv2
