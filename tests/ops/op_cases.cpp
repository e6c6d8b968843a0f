// The case table of the op harness and the models it builds (see op_cases.h).
#include "op_cases.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace mnv2::ops {

const char* to_string(Pattern p) {
  switch (p) {
    case Pattern::conv:
      return "conv";
    case Pattern::clip:
      return "clip";
    case Pattern::add:
      return "add";
    case Pattern::gap:
      return "gap";
    case Pattern::linear:
      return "linear";
    case Pattern::conv_clip:
      return "conv+clip";
    case Pattern::conv_add:
      return "conv+add";
    case Pattern::expand_dw:
      return "expand+clip+dw+clip";
    case Pattern::block:
      return "block";
    case Pattern::stem_block:
      return "stem+block";
  }
  return "?";
}

namespace {

constexpr std::array<int, 4> kNoPads{0, 0, 0, 0};
constexpr std::array<int, 4> kSame{1, 1, 1, 1};
// TensorFlow's "SAME" at stride 2 on an even map: the odd pixel at the end (the shared ONNX model's stride-2 pads).
constexpr std::array<int, 4> kSameUpper{0, 0, 1, 1};

std::string pads_str(const std::array<int, 4>& p) {
  return "pads[" + std::to_string(p[0]) + "," + std::to_string(p[1]) + "," + std::to_string(p[2]) + "," +
         std::to_string(p[3]) + "]";
}

std::string map_str(int c, int h, int w) {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

// "conv3x3s2", "dw3x3s1", "conv1x1".
std::string conv_str(const OpSpec& s) {
  if (s.kernel == 1 && !s.depthwise) return "conv1x1";
  return std::string(s.depthwise ? "dw" : "conv") + std::to_string(s.kernel) + "x" + std::to_string(s.kernel) + "s" +
         std::to_string(s.stride);
}

std::vector<float> uniform(std::mt19937_64& gen, size_t n, float bound) {
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

int extent(int in, int pad_a, int pad_b, int kernel, int stride) { return (in + pad_a + pad_b - kernel) / stride + 1; }

// Appends a layer to `m` and returns its index.
int append(Model& m, Layer l) {
  l.index = static_cast<int>(m.layers.size());
  l.name = std::string(to_string(l.kind)) + std::to_string(l.index);
  m.layers.push_back(std::move(l));
  return static_cast<int>(m.layers.size()) - 1;
}

int conv(Model& m, std::mt19937_64& gen, int input, int in_c, int out_c, int kernel, int stride,
         const std::array<int, 4>& pads, bool depthwise, bool bias) {
  Layer l;
  l.kind = LayerKind::Conv2d;
  l.inputs = {input};
  ConvParams& p = l.conv;
  p.in_channels = in_c;
  p.out_channels = out_c;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  p.groups = depthwise ? in_c : 1;
  const int fan_in = in_c / p.groups * kernel * kernel;
  l.weight = uniform(gen, static_cast<size_t>(out_c) * fan_in, 1.0f / std::sqrt(static_cast<float>(fan_in)));
  if (bias) l.bias = uniform(gen, static_cast<size_t>(out_c), 0.5f);
  return append(m, std::move(l));
}

int clip(Model& m, int input, float lo = 0.0f, float hi = 6.0f) {
  Layer l;
  l.kind = lo == 0.0f && hi == 6.0f ? LayerKind::ReLU6 : LayerKind::ReLU;
  l.inputs = {input};
  l.clip_min = lo;
  l.clip_max = hi;
  return append(m, std::move(l));
}

int add(Model& m, int a, int b) {
  Layer l;
  l.kind = LayerKind::ResidualAdd;
  l.inputs = {a, b};
  return append(m, std::move(l));
}

// ---- the table -----------------------------------------------------------------------------------------------

OpSpec conv_spec(int n, int c, int h, int w, int out, int kernel, int stride, std::array<int, 4> pads, bool dw,
                 bool bias, Pattern pattern = Pattern::conv) {
  OpSpec s;
  s.pattern = pattern;
  s.batch = n;
  s.channels = c;
  s.height = h;
  s.width = w;
  s.out = dw ? c : out;
  s.kernel = kernel;
  s.stride = stride;
  s.pads = pads;
  s.depthwise = dw;
  s.bias = bias;
  return s;
}

OpSpec map_spec(Pattern pattern, int n, int c, int h, int w) {
  OpSpec s;
  s.pattern = pattern;
  s.batch = n;
  s.channels = c;
  s.height = h;
  s.width = w;
  return s;
}

OpSpec expand_spec(Pattern pattern, int n, int c, int h, int w, int mid, int stride, std::array<int, 4> pads,
                   int project = 0) {
  OpSpec s = map_spec(pattern, n, c, h, w);
  s.out = mid;
  s.kernel = 3;
  s.stride = stride;
  s.pads = pads;
  s.project = project;
  return s;
}

// MobileNetV2 1.0 at 224x224 (the shared model's stride-2 pads [0,0,1,1]), every distinct layer shape.
void mnv2_specs(std::vector<OpSpec>& out, int n) {
  std::vector<OpSpec> v;
  v.push_back(conv_spec(n, 3, 224, 224, 32, 3, 2, kSameUpper, false, true));  // the stem
  for (auto [c, hw] : {std::pair{32, 112}, {144, 56}, {192, 28}, {384, 14}, {576, 14}, {960, 7}})
    v.push_back(conv_spec(n, c, hw, hw, c, 3, 1, kSame, true, true));
  for (auto [c, hw] : {std::pair{96, 112}, {144, 56}, {192, 28}, {576, 14}})
    v.push_back(conv_spec(n, c, hw, hw, c, 3, 2, kSameUpper, true, true));
  const std::array<std::array<int, 3>, 19> pointwise{{{32, 16, 112},
                                                      {16, 96, 112},
                                                      {96, 24, 56},
                                                      {24, 144, 56},
                                                      {144, 24, 56},
                                                      {144, 32, 28},
                                                      {32, 192, 28},
                                                      {192, 32, 28},
                                                      {192, 64, 14},
                                                      {64, 384, 14},
                                                      {384, 64, 14},
                                                      {384, 96, 14},
                                                      {96, 576, 14},
                                                      {576, 96, 14},
                                                      {576, 160, 7},
                                                      {160, 960, 7},
                                                      {960, 160, 7},
                                                      {960, 320, 7},
                                                      {320, 1280, 7}}};
  for (const auto& [c, o, hw] : pointwise) v.push_back(conv_spec(n, c, hw, hw, o, 1, 1, kNoPads, false, true));
  v.push_back(map_spec(Pattern::clip, n, 96, 112, 112));
  v.push_back(map_spec(Pattern::clip, n, 1280, 7, 7));
  for (auto [c, hw] : {std::pair{24, 56}, {32, 28}, {64, 14}, {96, 14}, {160, 7}})
    v.push_back(map_spec(Pattern::add, n, c, hw, hw));
  v.push_back(map_spec(Pattern::gap, n, 1280, 7, 7));
  OpSpec fc = map_spec(Pattern::linear, n, 1280, 1, 1);
  fc.out = 1001;
  v.push_back(fc);
  v.push_back(conv_spec(n, 3, 224, 224, 32, 3, 2, kSameUpper, false, true, Pattern::conv_clip));
  v.push_back(conv_spec(n, 24, 56, 56, 24, 1, 1, kNoPads, false, true, Pattern::conv_add));
  v.push_back(expand_spec(Pattern::expand_dw, n, 16, 112, 112, 96, 2, kSameUpper));
  v.push_back(expand_spec(Pattern::expand_dw, n, 160, 7, 7, 960, 1, kSame));
  v.push_back(expand_spec(Pattern::block, n, 24, 56, 56, 144, 1, kSame, 24));
  v.push_back(expand_spec(Pattern::block, n, 96, 14, 14, 576, 2, kSameUpper, 160));
  v.push_back(expand_spec(Pattern::block, n, 160, 7, 7, 960, 1, kSame, 160));
  v.push_back(expand_spec(Pattern::stem_block, n, 3, 224, 224, 32, 2, kSameUpper, 16));
  for (OpSpec& s : v) s.mnv2 = true;
  out.insert(out.end(), v.begin(), v.end());
}

// Odd sizes (7x9, 1x1, 2x2), channel counts that are not multiples of 8, batch 1 to 4, no bias.
void odd_specs(std::vector<OpSpec>& v) {
  // full 3x3, stride 1 and 2, symmetric and "SAME" pads
  v.push_back(conv_spec(2, 5, 7, 9, 13, 3, 1, kSame, false, true));
  v.push_back(conv_spec(1, 3, 1, 1, 8, 3, 1, kSame, false, false));
  v.push_back(conv_spec(4, 8, 9, 7, 16, 3, 1, kSame, false, false));
  v.push_back(conv_spec(1, 3, 29, 31, 8, 3, 2, kSameUpper, false, true));
  v.push_back(conv_spec(3, 3, 17, 17, 8, 3, 2, kSame, false, false));
  v.push_back(conv_spec(2, 7, 7, 9, 19, 3, 2, kSame, false, true));
  // depthwise 3x3, stride 1 and 2
  v.push_back(conv_spec(2, 12, 15, 19, 12, 3, 1, kSame, true, true));
  v.push_back(conv_spec(1, 13, 7, 9, 13, 3, 1, kSame, true, false));
  v.push_back(conv_spec(3, 5, 1, 1, 5, 3, 1, kSame, true, true));
  v.push_back(conv_spec(4, 27, 9, 7, 27, 3, 1, kSame, true, true));
  v.push_back(conv_spec(1, 19, 2, 2, 19, 3, 1, kSame, true, false));
  v.push_back(conv_spec(1, 7, 14, 14, 7, 3, 2, kSameUpper, true, false));
  v.push_back(conv_spec(3, 5, 9, 11, 5, 3, 2, kSame, true, true));
  v.push_back(conv_spec(2, 13, 7, 9, 13, 3, 2, kSameUpper, true, true));
  v.push_back(conv_spec(4, 21, 1, 1, 21, 3, 2, kSame, true, true));
  // pointwise
  v.push_back(conv_spec(2, 16, 7, 9, 24, 1, 1, kNoPads, false, true));
  v.push_back(conv_spec(1, 5, 13, 11, 3, 1, 1, kNoPads, false, false));
  v.push_back(conv_spec(3, 32, 3, 5, 67, 1, 1, kNoPads, false, true));
  v.push_back(conv_spec(4, 13, 1, 1, 19, 1, 1, kNoPads, false, false));
  v.push_back(conv_spec(1, 27, 7, 9, 5, 1, 1, kNoPads, false, true));
  v.push_back(conv_spec(2, 1, 4, 4, 7, 1, 1, kNoPads, false, true));
  // clip: ReLU6, another Clip, ReLU without an upper bound
  v.push_back(map_spec(Pattern::clip, 2, 5, 7, 9));
  OpSpec c = map_spec(Pattern::clip, 3, 13, 1, 1);
  c.clip_min = -1.0f;
  c.clip_max = 2.0f;
  v.push_back(c);
  c = map_spec(Pattern::clip, 1, 7, 9, 7);
  c.clip_max = std::numeric_limits<float>::infinity();
  v.push_back(c);
  // add, pool, Linear (also over a 4x3x4 map, flattened)
  v.push_back(map_spec(Pattern::add, 4, 13, 7, 9));
  v.push_back(map_spec(Pattern::add, 1, 5, 1, 1));
  v.push_back(map_spec(Pattern::add, 2, 19, 9, 7));
  v.push_back(map_spec(Pattern::gap, 2, 13, 7, 9));
  v.push_back(map_spec(Pattern::gap, 3, 5, 1, 1));
  v.push_back(map_spec(Pattern::gap, 4, 27, 3, 5));
  for (auto [n, c_, h, w, o, bias] : {std::tuple{1, 13, 1, 1, 7, true},
                                      {3, 27, 1, 1, 11, false},
                                      {4, 4, 3, 4, 6, true},
                                      {2, 1280, 1, 1, 1000, true}}) {
    OpSpec fc = map_spec(Pattern::linear, n, c_, h, w);
    fc.out = o;
    fc.bias = bias;
    v.push_back(fc);
  }
  // fused patterns
  v.push_back(conv_spec(2, 5, 7, 9, 13, 3, 1, kSame, false, true, Pattern::conv_clip));
  v.push_back(conv_spec(3, 13, 7, 9, 19, 1, 1, kNoPads, false, true, Pattern::conv_clip));
  v.push_back(conv_spec(1, 7, 7, 9, 7, 3, 2, kSameUpper, true, false, Pattern::conv_clip));
  v.push_back(conv_spec(2, 13, 7, 9, 13, 1, 1, kNoPads, false, true, Pattern::conv_add));
  v.push_back(conv_spec(3, 19, 9, 7, 19, 3, 1, kSame, true, true, Pattern::conv_add));
  v.push_back(expand_spec(Pattern::expand_dw, 2, 5, 7, 9, 30, 1, kSame));
  v.push_back(expand_spec(Pattern::expand_dw, 3, 13, 9, 7, 78, 2, kSameUpper));
  v.push_back(expand_spec(Pattern::expand_dw, 1, 8, 1, 1, 48, 1, kSame));
  v.push_back(expand_spec(Pattern::expand_dw, 4, 7, 5, 5, 42, 2, kSame));
  v.push_back(expand_spec(Pattern::block, 2, 13, 7, 9, 78, 1, kSame, 13));
  v.push_back(expand_spec(Pattern::block, 3, 5, 9, 7, 30, 2, kSame, 11));
  v.push_back(expand_spec(Pattern::block, 1, 16, 1, 1, 96, 1, kSame, 16));
  v.push_back(expand_spec(Pattern::block, 4, 24, 7, 9, 144, 1, kSame, 24));
  v.push_back(expand_spec(Pattern::stem_block, 2, 3, 29, 31, 8, 2, kSameUpper, 5));
  v.push_back(expand_spec(Pattern::stem_block, 3, 3, 17, 17, 16, 2, kSame, 8));
  v.push_back(expand_spec(Pattern::stem_block, 1, 4, 7, 9, 13, 1, kSame, 7));
}

}  // namespace

std::string case_name(const OpSpec& s) {
  std::ostringstream o;
  const std::string in = map_str(s.channels, s.height, s.width);
  switch (s.pattern) {
    case Pattern::conv:
    case Pattern::conv_clip:
    case Pattern::conv_add:
      o << conv_str(s)
        << (s.pattern == Pattern::conv_clip  ? "+clip"
            : s.pattern == Pattern::conv_add ? "+add"
                                             : "")
        << " " << in << "->" << s.out;
      if (s.kernel > 1) o << " " << pads_str(s.pads);
      o << " g" << (s.depthwise ? s.channels : 1) << (s.bias ? " bias" : " nobias");
      break;
    case Pattern::clip:
      o << "clip[" << s.clip_min << "," << s.clip_max << "] " << in;
      break;
    case Pattern::add:
    case Pattern::gap:
      o << to_string(s.pattern) << " " << in;
      break;
    case Pattern::linear:
      o << "linear " << in << "->" << s.out << (s.bias ? " bias" : " nobias");
      break;
    case Pattern::expand_dw:
    case Pattern::block:
    case Pattern::stem_block:
      o << (s.pattern == Pattern::expand_dw ? "expand+dw" : to_string(s.pattern)) << " " << in << "->" << s.out;
      if (s.pattern != Pattern::expand_dw) o << "->" << s.project;
      o << " s" << s.stride << " " << pads_str(s.pads);
      break;
  }
  o << " n" << s.batch;
  if (s.mnv2) o << " mnv2";
  return o.str();
}

std::vector<OpSpec> op_specs() {
  std::vector<OpSpec> v;
  mnv2_specs(v, 1);
  mnv2_specs(v, 3);
  odd_specs(v);
  return v;
}

Model build_model(const OpSpec& s, std::mt19937_64& gen) {
  Model m;
  m.input_channels = s.channels;
  m.input_height = s.height;
  m.input_width = s.width;
  m.source = "op harness: " + case_name(s);
  const int in = kNetworkInput;
  switch (s.pattern) {
    case Pattern::conv:
      conv(m, gen, in, s.channels, s.out, s.kernel, s.stride, s.pads, s.depthwise, s.bias);
      break;
    case Pattern::conv_clip:
      clip(m, conv(m, gen, in, s.channels, s.out, s.kernel, s.stride, s.pads, s.depthwise, s.bias));
      break;
    case Pattern::conv_add: {
      const int residual = clip(m, conv(m, gen, in, s.channels, s.channels, 1, 1, kNoPads, false, true));
      add(m, residual, conv(m, gen, residual, s.channels, s.channels, s.kernel, 1, s.pads, s.depthwise, s.bias));
      break;
    }
    case Pattern::clip:
      clip(m, in, s.clip_min, s.clip_max);
      break;
    case Pattern::add:
      add(m, clip(m, in), in);
      break;
    case Pattern::gap: {
      Layer l;
      l.kind = LayerKind::GlobalAveragePool;
      l.inputs = {in};
      append(m, std::move(l));
      break;
    }
    case Pattern::linear: {
      Layer l;
      l.kind = LayerKind::Linear;
      l.inputs = {in};
      l.in_features = s.channels * s.height * s.width;
      l.out_features = s.out;
      l.weight =
          uniform(gen, static_cast<size_t>(l.in_features) * s.out, 1.0f / std::sqrt(static_cast<float>(l.in_features)));
      if (s.bias) l.bias = uniform(gen, static_cast<size_t>(s.out), 0.5f);
      append(m, std::move(l));
      break;
    }
    case Pattern::expand_dw:
    case Pattern::block: {
      const int x = conv(m, gen, in, s.channels, s.channels, 1, 1, kNoPads, false, true);
      const int e = clip(m, conv(m, gen, x, s.channels, s.out, 1, 1, kNoPads, false, true));
      const int d = clip(m, conv(m, gen, e, s.out, s.out, 3, s.stride, s.pads, true, true));
      if (s.pattern == Pattern::expand_dw) break;
      const int p = conv(m, gen, d, s.out, s.project, 1, 1, kNoPads, false, true);
      const bool same_map = extent(s.height, s.pads[0], s.pads[2], 3, s.stride) == s.height &&
                            extent(s.width, s.pads[1], s.pads[3], 3, s.stride) == s.width;
      if (same_map && s.project == s.channels) add(m, x, p);
      break;
    }
    case Pattern::stem_block: {
      const int stem = clip(m, conv(m, gen, in, s.channels, s.out, 3, s.stride, s.pads, false, true));
      const int d = clip(m, conv(m, gen, stem, s.out, s.out, 3, 1, kSame, true, true));
      conv(m, gen, d, s.out, s.project, 1, 1, kNoPads, false, true);
      break;
    }
  }
  m.num_classes = static_cast<int>(analyse(m, s.batch, s.height, s.width).back().output.per_image());
  return m;
}

Tensor build_input(const OpSpec& s, std::mt19937_64& gen) {
  Tensor t(Shape{s.batch, s.channels, s.height, s.width});
  t.data = uniform(gen, t.data.size(), 1.0f);
  return t;
}

}  // namespace mnv2::ops
