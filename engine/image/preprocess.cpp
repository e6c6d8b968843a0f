// Decoded pixels to the network's input tensor, step for step as shared/weights/README.md describes, with
// OpenCV's 8-bit bilinear resize so that the golden inputs come out bit for bit.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "mnv2/error.h"
#include "mnv2/image.h"

namespace mnv2 {

namespace {

// Above this many resized pixels (48 MiB of RGB) only the crop window of the resized image is computed,
// with crop_linear_8u below, instead of resizing the whole image and throwing most of it away. Only long
// thin images get here (3000x10 resizes to 76800x256; a 16384x1 strip would need 3 GiB).
constexpr int64_t kMaxResizedPixels = int64_t{1} << 24;

// OpenCV's 8-bit bilinear weights are 11-bit fixed point (INTER_RESIZE_COEF_BITS).
constexpr int kCoefScale = 2048;

// The reference computes the new size with Python's round(), which rounds halves to even (a 512x929 image
// gives 464.5 -> 464). nearbyint does the same under the default rounding mode.
int64_t round_half_even(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

void validate(const Image8& image, const Preprocess& p) {
  if (image.width <= 0 || image.height <= 0) {
    throw Error("preprocess: empty image (" + std::to_string(image.width) + "x" + std::to_string(image.height) + ")");
  }
  const uint64_t expected = static_cast<uint64_t>(image.width) * static_cast<uint64_t>(image.height) * 3;
  if (image.rgb.size() != expected) {
    throw Error("preprocess: a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                " RGB image needs " + std::to_string(expected) + " bytes, got " + std::to_string(image.rgb.size()));
  }
  // The parameters come from the model (its metadata, checked when it was read), so a bad one here is the
  // model's fault, an Error, not a UsageError.
  if (p.resize <= 0 || p.resize > kMaxImageSide) {
    throw Error("preprocess: the model's resize must be 1.." + std::to_string(kMaxImageSide) + " pixels, got " +
                std::to_string(p.resize));
  }
  if (p.crop <= 0 || p.crop > p.resize) {
    throw Error("preprocess: the model's crop must be 1..resize (" + std::to_string(p.resize) + ") pixels, got " +
                std::to_string(p.crop));
  }
  (void)make_input_normaliser(p);  // mean, std and color
}

// Where one destination pixel of a cv::resize(INTER_LINEAR) of an 8-bit image reads from, along one axis,
// and with what weights. OpenCV computes the position in float from a double scale, rounds each weight to
// fixed point on its own (so they need not sum to 2048), and handles the two axes differently at the
// borders: columns past an edge are clamped with weight (2048, 0), rows keep their weights and read the
// edge row twice.
struct Tap {
  int64_t i0 = 0, i1 = 0;  // source indices
  int w0 = 0, w1 = 0;      // weights, sum near kCoefScale
};

int fixed_weight(float w) { return static_cast<int>(std::nearbyint(w * kCoefScale)); }

Tap column_tap(int64_t d, double scale, int64_t src_len) {
  float f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
  int64_t s = static_cast<int64_t>(std::floor(f));
  f -= static_cast<float>(s);
  if (s < 0) f = 0.0f, s = 0;
  if (s >= src_len - 1) f = 0.0f, s = src_len - 1;
  return {s, std::min(s + 1, src_len - 1), fixed_weight(1.0f - f), fixed_weight(f)};
}

Tap row_tap(int64_t d, double scale, int64_t src_len) {
  float f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
  const int64_t s = static_cast<int64_t>(std::floor(f));
  f -= static_cast<float>(s);
  return {std::clamp<int64_t>(s, 0, src_len - 1), std::clamp<int64_t>(s + 1, 0, src_len - 1), fixed_weight(1.0f - f),
          fixed_weight(f)};
}

// The crop x crop window at (x0, y0) of cv::resize(src, new_w x new_h, INTER_LINEAR), bit for bit, without
// the rest of the resized image. Identity and exact halving (which OpenCV routes to a copy and to its
// 2x2 area average) give the same numbers through these formulas.
cv::Mat crop_linear_8u(const cv::Mat& src, int64_t new_w, int64_t new_h, int64_t x0, int64_t y0, int crop) {
  // cv::resize derives the scale as 1 / (dst / src); the division order matters for the last bits.
  const double scale_x = 1.0 / (static_cast<double>(new_w) / src.cols);
  const double scale_y = 1.0 / (static_cast<double>(new_h) / src.rows);
  std::vector<Tap> cols(static_cast<size_t>(crop));
  for (int j = 0; j < crop; ++j) cols[j] = column_tap(x0 + j, scale_x, src.cols);

  cv::Mat out(crop, crop, CV_8UC3);
  std::vector<int> h0(static_cast<size_t>(crop) * 3), h1(static_cast<size_t>(crop) * 3);
  auto horizontal = [&](const uint8_t* row, std::vector<int>& h) {
    for (int j = 0; j < crop; ++j) {
      const uint8_t* a = row + cols[j].i0 * 3;
      const uint8_t* b = row + cols[j].i1 * 3;
      for (int c = 0; c < 3; ++c) h[j * 3 + c] = a[c] * cols[j].w0 + b[c] * cols[j].w1;
    }
  };
  for (int i = 0; i < crop; ++i) {
    const Tap t = row_tap(y0 + i, scale_y, src.rows);
    horizontal(src.ptr<uint8_t>(static_cast<int>(t.i0)), h0);
    horizontal(src.ptr<uint8_t>(static_cast<int>(t.i1)), h1);
    uint8_t* dst = out.ptr<uint8_t>(i);
    // OpenCV's vertical pass for 8 bits: drop 4 bits, multiply, keep the high 16 bits of each product,
    // then round off the last 2. The cast wraps like OpenCV's does in the (theoretical) 256 case.
    for (int k = 0; k < crop * 3; ++k) {
      dst[k] = static_cast<uint8_t>((((t.w0 * (h0[k] >> 4)) >> 16) + ((t.w1 * (h1[k] >> 4)) >> 16) + 2) >> 2);
    }
  }
  return out;
}

// Resizes so the shorter side is p.resize and returns the centred p.crop square (8-bit RGB).
cv::Mat resize_and_crop(const Image8& image, const Preprocess& p) {
  const int w = image.width, h = image.height;
  const cv::Mat src(h, w, CV_8UC3, const_cast<uint8_t*>(image.rgb.data()));
  const double s = static_cast<double>(p.resize) / std::min(w, h);
  const int64_t new_w = std::max<int64_t>(p.crop, round_half_even(w * s));
  const int64_t new_h = std::max<int64_t>(p.crop, round_half_even(h * s));
  const int64_t x0 = (new_w - p.crop) / 2;
  const int64_t y0 = (new_h - p.crop) / 2;
  if (new_w * new_h > kMaxResizedPixels) return crop_linear_8u(src, new_w, new_h, x0, y0, p.crop);

  cv::Mat resized;
  cv::resize(src, resized, cv::Size(static_cast<int>(new_w), static_cast<int>(new_h)), 0, 0, cv::INTER_LINEAR);
  return resized(cv::Rect(static_cast<int>(x0), static_cast<int>(y0), p.crop, p.crop));
}

}  // namespace

Image8 resize_crop(const Image8& image, const Preprocess& p) {
  validate(image, p);
  cv::Mat crop;
  try {
    crop = resize_and_crop(image, p);
  } catch (const cv::Exception& e) {
    throw Error(std::string("preprocess: OpenCV failed to resize the image: ") + e.what());
  }
  const int n = p.crop;
  Image8 out;
  out.width = n;
  out.height = n;
  out.rgb.resize(static_cast<size_t>(n) * n * 3);
  for (int y = 0; y < n; ++y) {
    std::copy_n(crop.ptr<uint8_t>(y), static_cast<size_t>(n) * 3, out.rgb.data() + static_cast<size_t>(y) * n * 3);
  }
  return out;
}

Tensor preprocess(const Image8& image, const Preprocess& p, Image8* crop_out) {
  Image8 crop = resize_crop(image, p);
  const InputNormaliser n = make_input_normaliser(p);
  Tensor t(Shape{1, 3, p.crop, p.crop});
  normalise_u8(crop.rgb.data(), 1, p.crop, p.crop, n, t.data.data());
  if (crop_out) *crop_out = std::move(crop);
  return t;
}

Tensor stack_batch(const std::vector<Tensor>& images) {
  if (images.empty()) throw Error("stack_batch: no images to stack");
  const Shape& first = images.front().shape;
  Shape batch = first;
  batch.n = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const Shape& s = images[i].shape;
    if (s.n <= 0) throw Error("stack_batch: image " + std::to_string(i) + " has shape " + s.str() + ", no images");
    if (s.c != first.c || s.h != first.h || s.w != first.w) {
      throw Error("stack_batch: image " + std::to_string(i) + " has shape " + s.str() + ", image 0 has " + first.str() +
                  "; all must share channels, height and width");
    }
    if (static_cast<int64_t>(images[i].data.size()) != s.numel()) {
      throw Error("stack_batch: image " + std::to_string(i) + " holds " + std::to_string(images[i].data.size()) +
                  " values, its shape " + s.str() + " needs " + std::to_string(s.numel()));
    }
    batch.n += s.n;
  }
  Tensor out(batch);
  auto dst = out.data.begin();
  for (const Tensor& t : images) dst = std::copy(t.data.begin(), t.data.end(), dst);
  return out;
}

}  // namespace mnv2
