// The normalisation half of preprocessing (mnv2/image.h): 8-bit pixels -> the network's float input through
// a per-channel table. No OpenCV here: it is in the engine, where every backend's run_u8 reaches it.
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "mnv2/error.h"
#include "mnv2/image.h"

namespace mnv2 {

namespace {

void validate_normalisation(const Preprocess& p) {
  if (p.color != "RGB" && p.color != "BGR") {
    throw Error("preprocess: the model's color must be RGB or BGR, got '" + p.color + "'");
  }
  for (int c = 0; c < 3; ++c) {
    // Bounds of mnv2/model.h: the normalised input stays finite. Written so that NaN fails too.
    if (!(std::fabs(p.mean[c]) <= kMaxAbsPreprocessMean) ||
        !(p.std[c] >= kMinPreprocessStd && p.std[c] <= kMaxPreprocessStd)) {
      throw Error("preprocess: the model's mean must be finite within +-1e6 and its std within 1e-6..1e6 (channel " +
                  std::to_string(c) + ": mean " + std::to_string(p.mean[c]) + ", std " + std::to_string(p.std[c]) +
                  ")");
    }
  }
}

}  // namespace

InputNormaliser make_input_normaliser(const Preprocess& p) {
  validate_normalisation(p);
  const bool bgr = p.color == "BGR";
  // Computed in double and rounded once to float, as the reference does; float32 arithmetic throughout is off by
  // an ulp on half the values.
  InputNormaliser n;
  for (int c = 0; c < 3; ++c) {
    const int rgb_c = bgr ? 2 - c : c;  // mean/std are given in RGB order
    n.source[static_cast<size_t>(c)] = rgb_c;
    for (int v = 0; v < 256; ++v) {
      n.value[static_cast<size_t>(c)][static_cast<size_t>(v)] =
          static_cast<float>((v / 255.0 - static_cast<double>(p.mean[rgb_c])) / p.std[rgb_c]);
    }
  }
  return n;
}

void normalise_u8(const uint8_t* hwc, int64_t images, int height, int width, const InputNormaliser& n, float* nchw) {
  const int64_t plane = static_cast<int64_t>(height) * width;
  for (int64_t i = 0; i < images; ++i) {
    const uint8_t* src = hwc + i * plane * 3;
    float* dst = nchw + i * plane * 3;
    for (int c = 0; c < 3; ++c) {
      const std::array<float, 256>& table = n.value[static_cast<size_t>(c)];
      const int sc = n.source[static_cast<size_t>(c)];
      float* out = dst + c * plane;
      for (int64_t px = 0; px < plane; ++px) out[px] = table[src[3 * px + sc]];
    }
  }
}

}  // namespace mnv2
