// Images to input tensors. Preprocessing works on decoded 8-bit pixels (no file I/O); decoding a file is
// a separate, small piece (decode_image_file) so builds without an image codec library still preprocess.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mnv2/model.h"
#include "mnv2/tensor.h"

namespace mnv2 {

// Decoded pixels: 8-bit RGB, interleaved, rows top to bottom, no padding.
struct Image8 {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3
};

// Largest image side accepted before decoding (checked from the file header where possible).
inline constexpr int kMaxImageSide = 16384;

// Decodes an image file (BMP, JPEG, PNG, ...). Grayscale, alpha and 16-bit images are converted to
// 8-bit RGB. Throws Error naming the file for empty, truncated, unreadable or oversized files, and when
// this build has no image decoder.
Image8 decode_image_file(const std::string& path);
bool image_decoding_available();

// Resize (shorter side to p.resize, bilinear on 8-bit), centre crop to p.crop, scale to [0,1], normalise
// with mean/std, reorder channels as p.color, lay out as 1 x 3 x crop x crop. Reproduces the golden inputs
// (shared/golden) exactly as OpenCV 4.x does. Also returns the 8-bit crop when `crop_out` is given.
Tensor preprocess(const Image8& image, const Preprocess& p, Image8* crop_out = nullptr);

// The two halves of preprocess(), for the end-to-end input path (PreparedNet::run_u8): the host decodes,
// resizes and crops to the network's size as 8-bit RGB, interleaved (HWC); the backend converts and normalises
// (on the GPU for the cuda backend), bit for bit as preprocess() does.
//
// resize_crop: the p.crop x p.crop 8-bit RGB crop preprocess() starts from.
Image8 resize_crop(const Image8& image, const Preprocess& p);

// 8-bit pixel -> normalised float, per output channel: value[c][v] = float((v / 255.0 - mean) / std) computed in
// double and rounded once (as the reference does), read from byte `source[c]` of each RGB pixel (2 - c for a
// BGR model). A lookup, so every backend reproduces the golden inputs exactly.
struct InputNormaliser {
  std::array<std::array<float, 256>, 3> value{};
  std::array<int, 3> source{0, 1, 2};
  bool operator==(const InputNormaliser&) const = default;
};
InputNormaliser make_input_normaliser(const Preprocess& p);  // throws Error on a bad mean/std/color (as preprocess)

// `images` 8-bit RGB HWC images of height x width, back to back, into [images, 3, height, width] float32 at
// `nchw` (which holds images * 3 * height * width floats).
void normalise_u8(const uint8_t* hwc, int64_t images, int height, int width, const InputNormaliser& n, float* nchw);

// Stacks single-image tensors into one batch; all must have the same per-image shape.
Tensor stack_batch(const std::vector<Tensor>& images);

}  // namespace mnv2
