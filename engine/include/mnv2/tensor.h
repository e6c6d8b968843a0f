// Host tensors: dense float32 in NCHW order, owned by a std::vector.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnv2 {

struct Shape {
  int64_t n = 0;  // batch
  int64_t c = 0;  // channels (features for Linear outputs)
  int64_t h = 1;  // height (1 for vectors)
  int64_t w = 1;  // width (1 for vectors)

  int64_t numel() const { return n * c * h * w; }
  int64_t per_image() const { return c * h * w; }
  bool operator==(const Shape&) const = default;
  std::string str() const;  // "1x32x112x112"
};

struct Tensor {
  Shape shape;
  std::vector<float> data;  // shape.numel() values, NCHW

  Tensor() = default;
  explicit Tensor(Shape s) : shape(s), data(static_cast<size_t>(s.numel()), 0.0f) {}
  bool empty() const { return data.empty(); }
};

// Reads a raw little-endian float32 NCHW file of exactly `expected.numel()` values; a file whose size is a
// whole number of images of expected.per_image() values gives that batch instead (expected.n is ignored
// then). Throws Error naming the file and both sizes on a mismatch.
Tensor read_tensor_file(const std::string& path, Shape expected);

// The same file read a few images at a time (classify of a large tensor file streams it in bounded batches): the
// constructor opens it and makes read_tensor_file()'s checks; read() takes images [first, first + count) from the
// descriptor opened then. Throws Error naming the file.
class TensorFileReader {
 public:
  TensorFileReader(const std::string& path, Shape image);  // image.n is ignored
  ~TensorFileReader();
  TensorFileReader(const TensorFileReader&) = delete;
  TensorFileReader& operator=(const TensorFileReader&) = delete;
  int64_t images() const { return images_; }
  Tensor read(int64_t first, int64_t count) const;

 private:
  std::string path_;
  Shape image_;
  int fd_ = -1;
  int64_t images_ = 0;
};

// Writes raw little-endian float32 atomically (temporary file, then rename).
void write_tensor_file(const std::string& path, const Tensor& t);

// Comparison figures between an output and a reference of the same size.
struct ErrorStats {
  double max_abs = 0.0;
  double rel_l2 = 0.0;  // ||a - ref|| / ||ref||
  double cosine = 0.0;  // <a, ref> / (||a|| ||ref||)
  bool finite = true;   // false if `a` holds a NaN or Inf
};
ErrorStats compare(const float* a, const float* ref, int64_t count);

}  // namespace mnv2
