// The engine graph's arithmetic: shape inference, parameter/MAC/byte counts per layer, the one-line
// layer descriptions shown in tables, the FNV-1a hash of input tensors and how two checksums compare.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/flops.h"
#include "mnv2/model.h"

namespace mnv2 {

const char* to_string(LayerKind kind) {
  switch (kind) {
    case LayerKind::Conv2d:
      return "Conv2d";
    case LayerKind::ReLU6:
      return "ReLU6";
    case LayerKind::ReLU:
      return "ReLU";
    case LayerKind::ResidualAdd:
      return "ResidualAdd";
    case LayerKind::GlobalAveragePool:
      return "GlobalAveragePool";
    case LayerKind::Linear:
      return "Linear";
  }
  return "Unknown";
}

const char* to_string(AutoPad mode) {
  switch (mode) {
    case AutoPad::NotSet:
      return "NOTSET";
    case AutoPad::Valid:
      return "VALID";
    case AutoPad::SameUpper:
      return "SAME_UPPER";
    case AutoPad::SameLower:
      return "SAME_LOWER";
  }
  return "?";
}

std::array<int64_t, 4> resolve_same_pads(const ConvParams& p, int64_t h, int64_t w) {
  std::array<int64_t, 4> pads{};
  const int64_t in[2] = {h, w};
  const int64_t kernel[2] = {p.kernel_h, p.kernel_w};
  const int64_t stride[2] = {p.stride_h, p.stride_w};
  const int64_t dilation[2] = {p.dilation_h, p.dilation_w};
  for (int a = 0; a < 2; ++a) {
    // ONNX: output = ceil(in / stride); total padding is what that output needs beyond the input.
    const int64_t out = (in[a] + stride[a] - 1) / stride[a];
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride[a] + (kernel[a] - 1) * dilation[a] + 1 - in[a]);
    const int64_t small = total / 2, large = total - small;
    pads[static_cast<size_t>(a)] = p.auto_pad == AutoPad::SameLower ? large : small;
    pads[static_cast<size_t>(a) + 2] = p.auto_pad == AutoPad::SameLower ? small : large;
  }
  return pads;
}

namespace {

// A side or batch beyond this is a typo or a hostile value, not a workload; it also keeps every product
// below comfortably inside int64.
constexpr int64_t kMaxSide = 65536;
constexpr int64_t kFloatBytes = 4;

std::string layer_label(const Layer& layer, size_t i) {
  std::string s = "layer " + std::to_string(i);
  if (!layer.name.empty()) s += " '" + layer.name + "'";
  return s + " (" + to_string(layer.kind) + ")";
}

// Products of file-controlled numbers: overflow is reported, never wrapped.
int64_t mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw Error(what + ": size overflows 64-bit arithmetic");
  return r;
}
int64_t mul(std::initializer_list<int64_t> xs, const std::string& what) {
  int64_t r = 1;
  for (int64_t x : xs) r = mul(r, x, what);
  return r;
}
int64_t add(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw Error(what + ": size overflows 64-bit arithmetic");
  return r;
}

// Output extent of a convolution along one axis; <= 0 means the map vanished.
int64_t conv_extent(int64_t in, int pad_a, int pad_b, int kernel, int stride, int dilation) {
  const int64_t span = static_cast<int64_t>(dilation) * (kernel - 1) + 1;
  const int64_t padded = in + pad_a + pad_b;
  if (padded < span) return 0;
  return (padded - span) / stride + 1;
}

std::string fmt_float(float v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

std::string pads_str(const std::array<int64_t, 4>& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(p[i]);
  }
  return s + "]";
}

std::string fmt_pair(int a, int b) { return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b); }

}  // namespace

std::vector<LayerStats> analyse(const Model& model, int batch, int height, int width) {
  if (batch <= 0 || batch > kMaxSide)
    throw UsageError("batch " + std::to_string(batch) + " is out of range (1.." + std::to_string(kMaxSide) + ")");
  if (height <= 0 || width <= 0 || height > kMaxSide || width > kMaxSide)
    throw UsageError("input size " + std::to_string(height) + "x" + std::to_string(width) + " is out of range (1.." +
                     std::to_string(kMaxSide) + " per side)");
  if (model.input_channels <= 0 || model.input_channels > kMaxSide)
    throw Error("model declares " + std::to_string(model.input_channels) + " input channels");

  const Shape input{batch, model.input_channels, height, width};
  const std::string at = "input " + input.str() + ": ";
  std::vector<LayerStats> stats(model.layers.size());

  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& L = model.layers[i];
    const std::string where = at + layer_label(L, i);
    const size_t want_inputs = L.kind == LayerKind::ResidualAdd ? 2 : 1;
    if (L.inputs.size() != want_inputs)
      throw Error(where + ": has " + std::to_string(L.inputs.size()) + " inputs, expected " +
                  std::to_string(want_inputs));
    std::vector<Shape> in;
    for (int src : L.inputs) {
      if (src == kNetworkInput) {
        in.push_back(input);
      } else if (src >= 0 && static_cast<size_t>(src) < i) {
        in.push_back(stats[static_cast<size_t>(src)].output);
      } else {
        throw Error(where + ": input " + std::to_string(src) + " is not an earlier layer");
      }
    }
    const Shape& x = in[0];
    LayerStats& s = stats[i];
    int64_t weights = 0;  // float values of weights + bias read by the layer

    switch (L.kind) {
      case LayerKind::Conv2d: {
        const ConvParams& p = L.conv;
        if (p.in_channels <= 0 || p.out_channels <= 0 || p.groups <= 0 || p.in_channels % p.groups != 0 ||
            p.out_channels % p.groups != 0 || p.kernel_h <= 0 || p.kernel_w <= 0 || p.stride_h <= 0 ||
            p.stride_w <= 0 || p.dilation_h <= 0 || p.dilation_w <= 0 || p.pad_top < 0 || p.pad_left < 0 ||
            p.pad_bottom < 0 || p.pad_right < 0)
          throw Error(where + ": invalid convolution parameters " + describe(L));
        if (x.c != p.in_channels)
          throw Error(where + ": expects " + std::to_string(p.in_channels) + " input channels, gets " + x.str());
        if (p.auto_pad == AutoPad::SameUpper || p.auto_pad == AutoPad::SameLower) {
          const std::array<int64_t, 4> have{p.pad_top, p.pad_left, p.pad_bottom, p.pad_right};
          const std::array<int64_t, 4> want = resolve_same_pads(p, x.h, x.w);
          if (have != want)
            throw Error(where + ": auto_pad " + to_string(p.auto_pad) + " was resolved to pads " + pads_str(have) +
                        " at the model's declared input size, but ONNX pads this " + std::to_string(x.h) + "x" +
                        std::to_string(x.w) + " map " + pads_str(want) +
                        "; run the model at its declared input size (or export it with explicit pads)");
        }
        const int64_t oh = conv_extent(x.h, p.pad_top, p.pad_bottom, p.kernel_h, p.stride_h, p.dilation_h);
        const int64_t ow = conv_extent(x.w, p.pad_left, p.pad_right, p.kernel_w, p.stride_w, p.dilation_w);
        if (oh <= 0 || ow <= 0)
          throw Error(where + ": the " + std::to_string(x.h) + "x" + std::to_string(x.w) + " map is too small for " +
                      describe(L) + " (output would be empty)");
        s.output = Shape{x.n, p.out_channels, oh, ow};
        const int64_t per_out = mul({p.in_channels / p.groups, p.kernel_h, p.kernel_w}, where);
        weights = add(mul(p.out_channels, per_out, where), L.bias.empty() ? 0 : p.out_channels, where);
        s.params = weights;
        s.macs = mul(mul(x.n, mul({p.out_channels, oh, ow}, where), where), per_out, where);
        break;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        s.output = x;
        break;
      case LayerKind::ResidualAdd:
        if (!(in[0] == in[1]))
          throw Error(where + ": adds tensors of different shapes " + in[0].str() + " and " + in[1].str());
        s.output = x;
        s.macs = x.numel();
        break;
      case LayerKind::GlobalAveragePool:
        if ((L.pool_kernel_h != 0 || L.pool_kernel_w != 0) && (L.pool_kernel_h != x.h || L.pool_kernel_w != x.w))
          throw Error(where + ": AveragePool kernel " + std::to_string(L.pool_kernel_h) + "x" +
                      std::to_string(L.pool_kernel_w) + " does not cover the whole " + std::to_string(x.h) + "x" +
                      std::to_string(x.w) + " map; only a global average pool is supported");
        s.output = Shape{x.n, x.c, 1, 1};
        s.macs = x.numel();
        break;
      case LayerKind::Linear:
        if (L.in_features <= 0 || L.out_features <= 0) throw Error(where + ": invalid features " + describe(L));
        if (x.per_image() != L.in_features)
          throw Error(where + ": expects " + std::to_string(L.in_features) + " input features, gets " + x.str() + " (" +
                      std::to_string(x.per_image()) + " per image)");
        s.output = Shape{x.n, L.out_features, 1, 1};
        weights = add(mul(L.out_features, L.in_features, where), L.bias.empty() ? 0 : L.out_features, where);
        s.params = weights;
        s.macs = mul({x.n, L.in_features, L.out_features}, where);
        break;
    }

    s.activation_bytes = mul(s.output.numel(), kFloatBytes, where);
    int64_t read = 0;
    for (const Shape& sh : in) read = add(read, sh.numel(), where);
    s.bytes = mul(add(add(read, weights, where), s.output.numel(), where), kFloatBytes, where);
  }
  return stats;
}

double step_bytes(const std::vector<Layer>& topology, const std::vector<LayerStats>& stats,
                  const std::vector<int>& layers, double storage_bytes) {
  auto inside = [&layers](int l) { return std::find(layers.begin(), layers.end(), l) != layers.end(); };
  std::vector<int> outside_read;  // inputs from outside the step already counted by an earlier layer
  double bytes = 0, network_input = 0;
  for (int l : layers) {
    const Layer& layer = topology.at(static_cast<size_t>(l));
    const LayerStats& st = stats.at(static_cast<size_t>(l));
    const double weights = 4.0 * static_cast<double>(st.params);
    // The layer's own figure is inputs + weights + output; keep the inputs that come from outside the step,
    // once each across the step's layers (the network input is counted per reader).
    double read = static_cast<double>(st.bytes) - static_cast<double>(st.activation_bytes) - weights;
    // What is left of `read` after the other inputs is the network input's share (float32 whatever the storage).
    double others = 0;
    for (int in : layer.inputs)
      if (in != kNetworkInput) others += static_cast<double>(stats.at(static_cast<size_t>(in)).activation_bytes);
    if (std::find(layer.inputs.begin(), layer.inputs.end(), kNetworkInput) != layer.inputs.end())
      network_input += read - others;
    std::vector<int> seen_here;
    for (int in : layer.inputs) {
      if (in == kNetworkInput) continue;
      const double size = static_cast<double>(stats.at(static_cast<size_t>(in)).activation_bytes);
      if (inside(in)) {
        read -= size;
      } else if (std::find(outside_read.begin(), outside_read.end(), in) != outside_read.end()) {
        read -= size;
      } else {
        seen_here.push_back(in);
      }
    }
    outside_read.insert(outside_read.end(), seen_here.begin(), seen_here.end());
    bytes += read + weights + (l == layers.back() ? static_cast<double>(st.activation_bytes) : 0.0);
  }
  return (bytes - network_input) * storage_bytes / 4.0 + network_input;
}

double layer_flops(const Layer& layer, const LayerStats& stats) {
  switch (layer.kind) {
    case LayerKind::Conv2d:
    case LayerKind::Linear:
      return 2.0 * static_cast<double>(stats.macs);
    case LayerKind::ReLU6:
    case LayerKind::ReLU:
      return 2.0 * static_cast<double>(stats.output.numel());
    default:
      return static_cast<double>(stats.macs);
  }
}

int64_t activation_floor_bytes(const Model& model, const Shape& input, const std::vector<LayerStats>& stats,
                               int element_bytes) {
  // In long double: hostile shapes may pass int64 when summed (each one alone fits, analyse() checked it).
  auto elements = [](const Shape& s) {
    return static_cast<long double>(s.n) * s.c * static_cast<long double>(s.h) * static_cast<long double>(s.w);
  };
  const long double in = elements(input);
  long double largest = 0;
  for (size_t i = 0; i < model.layers.size() && i < stats.size(); ++i) {
    long double live = elements(stats[i].output);
    for (int src : model.layers[i].inputs)
      live += src == kNetworkInput                                  ? in
              : src >= 0 && static_cast<size_t>(src) < stats.size() ? elements(stats[static_cast<size_t>(src)].output)
                                                                    : 0;
    largest = std::max(largest, live);
  }
  const long double logits = stats.empty() ? 0 : elements(stats.back().output);
  const long double bytes = (in + logits + largest) * element_bytes;
  constexpr auto kMax = std::numeric_limits<int64_t>::max();
  return bytes >= static_cast<long double>(kMax) ? kMax : static_cast<int64_t>(bytes);
}

std::string describe(const Layer& layer) {
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      const ConvParams& p = layer.conv;
      std::string pads;
      if (p.pad_top == p.pad_left && p.pad_top == p.pad_bottom && p.pad_top == p.pad_right) {
        pads = std::to_string(p.pad_top);
      } else {
        // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "[" + std::to_string(...).
        pads = "[";
        for (int v : {p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}) {
          if (pads.size() > 1) pads += ", ";
          pads += std::to_string(v);
        }
        pads += "]";
      }
      std::string s = "Conv2d(" + std::to_string(p.in_channels) + ", " + std::to_string(p.out_channels) + ", " +
                      fmt_pair(p.kernel_h, p.kernel_w) + ", " + fmt_pair(p.stride_h, p.stride_w) + ", " + pads + ", " +
                      std::to_string(p.groups);
      if (p.dilation_h != 1 || p.dilation_w != 1) s += ", dilation=" + fmt_pair(p.dilation_h, p.dilation_w);
      return s + ")";
    }
    case LayerKind::ReLU6:
    case LayerKind::ReLU: {
      const float inf = std::numeric_limits<float>::infinity();
      if (layer.clip_min == 0.0f && layer.clip_max == 6.0f) return "ReLU6()";
      if (layer.clip_min == 0.0f && layer.clip_max == inf) return "ReLU()";
      return "Clip(" + fmt_float(layer.clip_min) + ", " + fmt_float(layer.clip_max) + ")";
    }
    case LayerKind::ResidualAdd: {
      std::string s = "ResidualAdd(";
      for (size_t i = 0; i < layer.inputs.size(); ++i) {
        if (i) s += ", ";
        s += layer.inputs[i] == kNetworkInput ? std::string("input") : std::to_string(layer.inputs[i]);
      }
      return s + ")";
    }
    case LayerKind::GlobalAveragePool:
      if (layer.pool_kernel_h == 0 && layer.pool_kernel_w == 0) return "GlobalAveragePool()";
      return "GlobalAveragePool(kernel=" + std::to_string(layer.pool_kernel_h) + "x" +
             std::to_string(layer.pool_kernel_w) + ")";
    case LayerKind::Linear:
      return "Linear(" + std::to_string(layer.in_features) + ", " + std::to_string(layer.out_features) + ")";
  }
  return "Unknown()";
}

int count_layers(const Model& model, LayerKind kind) {
  int n = 0;
  for (const Layer& l : model.layers) n += l.kind == kind ? 1 : 0;
  return n;
}

ChecksumMatch match_checksums(const std::string& a, const std::string& b) {
  const size_t ca = a.find(':'), cb = b.find(':');
  if (ca == std::string::npos || cb == std::string::npos || a.compare(0, ca, b, 0, cb) != 0)
    return ChecksumMatch::unknown;
  return a == b ? ChecksumMatch::same : ChecksumMatch::different;
}

uint64_t fnv1a64_update(uint64_t state, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    state ^= p[i];
    state *= 0x100000001b3ull;  // FNV-1a 64-bit prime
  }
  return state;
}

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string fnv1a64_hex(const void* data, size_t size) { return hex64(fnv1a64_update(kFnv1a64Basis, data, size)); }

}  // namespace mnv2
