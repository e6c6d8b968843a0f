// Tensor files (raw little-endian float32) and output comparison figures.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "mnv2/error.h"
#include "mnv2/input_files.h"
#include "mnv2/output_files.h"
#include "mnv2/tensor.h"

namespace mnv2 {

static_assert(std::endian::native == std::endian::little, "tensor files are little-endian float32");

std::string Shape::str() const {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

TensorFileReader::TensorFileReader(const std::string& path, Shape image) : path_(path), image_(image) {
  image_.n = 1;
  const int64_t image_bytes = image_.per_image() * 4;
  if (image_bytes <= 0) throw UsageError(path + ": expected tensor shape " + image_.str() + " is empty");
  const OpenedInput in = open_input_file(path, inputs::kTensor);  // a regular file within its budget
  fd_ = in.fd;
  const uint64_t size = in.size;
  if (size == 0 || size % static_cast<uint64_t>(image_bytes) != 0) {
    ::close(fd_);
    throw Error(path + ": " + std::to_string(size) + " bytes is not a whole number of float32 tensors of " +
                std::to_string(image.c) + "x" + std::to_string(image.h) + "x" + std::to_string(image.w) + " (" +
                std::to_string(image_bytes) + " bytes each)");
  }
  images_ = static_cast<int64_t>(size / static_cast<uint64_t>(image_bytes));
  // The largest batch any command takes; a bigger file is not an input but a mistake (or a sparse file).
  constexpr int64_t kMaxImages = 65536;
  if (images_ > kMaxImages) {
    ::close(fd_);
    throw Error(path + ": holds " + std::to_string(images_) + " images of " + std::to_string(image.c) + "x" +
                std::to_string(image.h) + "x" + std::to_string(image.w) + "; at most " + std::to_string(kMaxImages) +
                " (the largest batch) can be read");
  }
}

TensorFileReader::~TensorFileReader() { ::close(fd_); }

Tensor TensorFileReader::read(int64_t first, int64_t count) const {
  if (first < 0 || count < 1 || first > images_ || count > images_ - first)
    throw UsageError(path_ + ": images " + std::to_string(first) + ".." + std::to_string(first + count - 1) +
                     " asked for; the file holds " + std::to_string(images_));
  Shape shape = image_;
  shape.n = count;
  Tensor t;
  try {
    t = Tensor(shape);
  } catch (const std::bad_alloc&) {
    throw Error(path_ + ": not enough memory to read " + std::to_string(shape.numel() * 4) + " bytes of tensor data");
  }
  const uint64_t size = static_cast<uint64_t>(shape.numel()) * 4;
  const uint64_t offset = static_cast<uint64_t>(first) * static_cast<uint64_t>(image_.per_image()) * 4;
  char* dst = reinterpret_cast<char*>(t.data.data());
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd_, dst + done, static_cast<size_t>(std::min<uint64_t>(size - done, 1u << 30)),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(path_ + ": read failed" +
                  (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : " (the file shrank)"));
    done += static_cast<uint64_t>(n);
  }
  for (float v : t.data)
    if (!std::isfinite(v)) throw Error(path_ + ": tensor holds NaN or Inf values");
  return t;
}

Tensor read_tensor_file(const std::string& path, Shape expected) {
  const TensorFileReader reader(path, expected);
  return reader.read(0, reader.images());
}

void write_tensor_file(const std::string& path, const Tensor& t) {
  write_output_file(path, std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4));
}

ErrorStats compare(const float* a, const float* ref, int64_t count) {
  ErrorStats s;
  double diff2 = 0, ref2 = 0, a2 = 0, dot = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double x = a[i], r = ref[i];
    if (!std::isfinite(x)) s.finite = false;
    const double d = x - r;
    s.max_abs = std::max(s.max_abs, std::fabs(d));
    diff2 += d * d;
    ref2 += r * r;
    a2 += x * x;
    dot += x * r;
  }
  s.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  s.cosine = (a2 > 0 && ref2 > 0) ? dot / std::sqrt(a2 * ref2) : (a2 == ref2 ? 1.0 : 0.0);
  if (!s.finite) {
    s.max_abs = s.rel_l2 = INFINITY;
    s.cosine = NAN;
  }
  return s;
}

}  // namespace mnv2
