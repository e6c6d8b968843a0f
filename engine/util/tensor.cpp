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

Tensor read_tensor_file(const std::string& path, Shape expected) {
  const int64_t image_bytes = expected.per_image() * 4;
  if (image_bytes <= 0) throw UsageError(path + ": expected tensor shape " + expected.str() + " is empty");
  const OpenedInput in = open_input_file(path, inputs::kTensor);  // a regular file within its budget
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in.fd};
  const uint64_t size = in.size;
  if (size == 0 || size % static_cast<uint64_t>(image_bytes) != 0) {
    throw Error(path + ": " + std::to_string(size) + " bytes is not a whole number of float32 tensors of " +
                std::to_string(expected.c) + "x" + std::to_string(expected.h) + "x" + std::to_string(expected.w) +
                " (" + std::to_string(image_bytes) + " bytes each)");
  }
  Shape shape = expected;
  shape.n = static_cast<int64_t>(size / static_cast<uint64_t>(image_bytes));
  // The largest batch any command takes; a bigger file is not an input but a mistake (or a sparse file).
  constexpr int64_t kMaxImages = 65536;
  if (shape.n > kMaxImages)
    throw Error(path + ": holds " + std::to_string(shape.n) + " images of " + std::to_string(expected.c) + "x" +
                std::to_string(expected.h) + "x" + std::to_string(expected.w) + "; at most " +
                std::to_string(kMaxImages) + " (the largest batch) can be read");
  Tensor t;
  try {
    t = Tensor(shape);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": not enough memory to read " + std::to_string(size) + " bytes of tensor data");
  }
  char* dst = reinterpret_cast<char*>(t.data.data());
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = ::read(in.fd, dst + done, static_cast<size_t>(std::min<uint64_t>(size - done, 1u << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(path + ": read failed" +
                  (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : " (the file shrank)"));
    done += static_cast<uint64_t>(n);
  }
  for (float v : t.data)
    if (!std::isfinite(v)) throw Error(path + ": tensor holds NaN or Inf values");
  return t;
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
