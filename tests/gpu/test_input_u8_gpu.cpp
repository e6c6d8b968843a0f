// The 8-bit input path on the GPU (issue 17 item 3): the conversion kernel (kernels/input_u8) against the
// host's normalise_u8 bit for bit and against the golden inputs (within 1e-6), and the cuda backend's
// run_u8 (pinned staging, copy stream, sub-batches) against run() on the host-normalised input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu_backend_test_support.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/image.h"

#ifdef MNV2_HAVE_KERNELS
#include "kernels/input_u8.cuh"
#include "test_kernels_support.h"
#endif

namespace mnv2::test {
namespace {

Preprocess main_preprocess() {
  Preprocess p;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.5f, 0.5f, 0.5f};
  return p;
}

std::vector<uint8_t> random_bytes(std::mt19937_64& gen, size_t n) {
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(gen() & 0xFF);
  return v;
}

#ifdef MNV2_HAVE_KERNELS
namespace k = kernels;

// Runs the kernel on `bytes` ([images, pixels, 3]) with `n`; returns [images, 3, pixels] (poisoned before).
std::vector<float> normalise_on_gpu(const std::vector<uint8_t>& bytes, int64_t images, int64_t pixels,
                                    const InputNormaliser& n) {
  gpu::DeviceBuffer in(std::max<size_t>(bytes.size(), 1));
  MNV2_CHECK_CUDA(cudaMemcpy(in.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  std::vector<float> table;
  for (const auto& row : n.value) table.insert(table.end(), row.begin(), row.end());
  DeviceArray dtable(table), out(static_cast<size_t>(images * 3 * pixels));
  out.poison();
  k::NormaliseU8Params p;
  p.images = images;
  p.pixels = pixels;
  p.input = static_cast<const uint8_t*>(in.get());
  p.table = dtable.get();
  for (size_t c = 0; c < 3; ++c) p.source[c] = n.source[c];
  p.output = out.get();
  k::launch_normalise_u8(p, nullptr);
  return out.download();
}

TEST(KernelNormaliseU8, MatchesTheHostBitForBit) {
  MNV2_SKIP_WITHOUT_GPU();
  Preprocess bgr = main_preprocess();
  bgr.color = "BGR";
  bgr.mean = {0.485f, 0.456f, 0.406f};
  bgr.std = {0.229f, 0.224f, 0.225f};
  struct Case {
    int images, h, w;
  };
  for (const Preprocess& pre : {main_preprocess(), bgr})
    for (const Case& c :
         {Case{1, 224, 224}, Case{3, 7, 9}, Case{2, 1, 1}, Case{5, 13, 4}, Case{2, 97, 131}, Case{1, 1, 1023}}) {
      const uint64_t seed = kernel_test_seed();
      std::mt19937_64 gen(seed);
      SCOPED_TRACE(pre.color + " " + std::to_string(c.images) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) +
                   " MNV2_TEST_SEED=" + std::to_string(seed));
      const InputNormaliser n = make_input_normaliser(pre);
      const int64_t pixels = int64_t{c.h} * c.w;
      const std::vector<uint8_t> bytes = random_bytes(gen, static_cast<size_t>(c.images * pixels * 3));
      std::vector<float> host(static_cast<size_t>(c.images * pixels * 3));
      normalise_u8(bytes.data(), c.images, c.h, c.w, n, host.data());
      EXPECT_EQ(normalise_on_gpu(bytes, c.images, pixels, n), host);
    }
}

TEST(KernelNormaliseU8, ReproducesTheGoldenInputs) {
  MNV2_SKIP_WITHOUT_GPU();
  const InputNormaliser n = make_input_normaliser(main_preprocess());
  for (const std::string& name : golden_image_names()) {
    SCOPED_TRACE(name);
    const Golden g = read_golden(name);
    const std::vector<uint8_t> bytes = bytes_of_normalised(g.input, 224, 224, n);
    const std::vector<float> got = normalise_on_gpu(bytes, 1, 224 * 224, n);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::isfinite(got[i]) ? std::fabs(double(got[i]) - g.input[i]) : INFINITY);
    std::printf("[ u8 gpu   ] %-13s golden input on the GPU from its bytes: max abs %.3g\n", name.c_str(), worst);
    EXPECT_LE(worst, 1e-6);
  }
}

TEST(KernelNormaliseU8, RefusesBadParameters) {
  MNV2_SKIP_WITHOUT_GPU();
  k::NormaliseU8Params p;
  p.images = 1;
  p.pixels = 4;
  EXPECT_THROW(k::launch_normalise_u8(p, nullptr), Error);  // null buffers
}
#endif

// run_u8 on the cuda backend: every sub-batch's logits bit for bit those of run() on the host-normalised
// input (the conversion is a table lookup, the network the same graph), in fp32 and fp16, over 3 sub-batches
// (so both staging slots are reused), the golden photographs among the images.
TEST(CudaU8Path, LogitsEqualRunOnTheHostNormalisedInput) {
  const CudaEnvironment& env = cuda_environment();
  if (env.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env.why_none << "): cuda backend tests skipped";
  auto backend = make_backend("cuda");
  if (!backend->availability().available) GTEST_SKIP() << "cuda: " << backend->availability().reason;
  const InputNormaliser n = make_input_normaliser(main_preprocess());
  const std::vector<std::string> names = golden_image_names();
  const size_t per_image = size_t{3} * 224 * 224;
  std::mt19937_64 gen(fresh_seed());
  std::vector<uint8_t> bytes;
  for (const std::string& name : names) {
    const std::vector<uint8_t> b = bytes_of_normalised(read_golden(name).input, 224, 224, n);
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  const std::vector<uint8_t> extra = random_bytes(gen, per_image);
  bytes.insert(bytes.end(), extra.begin(), extra.end());
  const int64_t images = static_cast<int64_t>(bytes.size() / per_image);  // 6: three sub-batches of 2
  ASSERT_EQ(images % 2, 0);
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    SCOPED_TRACE(to_string(precision));
    PrepareConfig pc;
    pc.batch = 2;
    pc.precision = precision;
    auto net = backend->prepare(main_model(), pc);
    EXPECT_EQ(net->u8_path().rfind("gpu", 0), 0u) << net->u8_path();
    const Tensor all = net->run_u8(bytes.data(), images, n);
    ASSERT_EQ(all.shape.n, images);
    const int64_t classes = all.shape.per_image();
    for (int64_t s = 0; s < images / 2; ++s) {
      Tensor sub(Shape{2, 3, 224, 224});
      normalise_u8(bytes.data() + static_cast<size_t>(s) * 2 * per_image, 2, 224, 224, n, sub.data.data());
      const Tensor ref = net->run(sub);
      const std::vector<float> got(all.data.begin() + s * 2 * classes, all.data.begin() + (s + 1) * 2 * classes);
      EXPECT_EQ(got, ref.data) << "sub-batch " << s;
    }
    // The golden photographs' top-1 through the 8-bit path.
    for (size_t i = 0; i < names.size(); ++i) {
      const Golden g = read_golden(names[i]);
      const std::vector<int> top =
          top5_of(all.data.data() + static_cast<int64_t>(i) * classes, static_cast<int>(classes));
      EXPECT_EQ(top.front(), g.top5.front()) << names[i];
    }
    EXPECT_THROW(net->run_u8(bytes.data(), 3, n), UsageError);
    // A run() after run_u8() still runs its own input.
    Tensor one(Shape{2, 3, 224, 224});
    normalise_u8(bytes.data(), 2, 224, 224, n, one.data.data());
    const Tensor a = net->run(one);
    const std::vector<float> first(all.data.begin(), all.data.begin() + 2 * classes);
    EXPECT_EQ(a.data, first);
  }
}

}  // namespace
}  // namespace mnv2::test
