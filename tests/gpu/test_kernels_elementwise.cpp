// Elementwise clip and add (kernels/elementwise.cu) against the cpu backend's: lengths with and without
// float4 alignment, misaligned pointers (scalar code), in place, NaN propagation, an unbounded ReLU.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <limits>

#include "backends/cpu/cpu_ops.h"
#include "kernels/elementwise.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

TEST(KernelElementwise, ClipAndAddMatchCpu) {
  MNV2_SKIP_WITHOUT_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{4096}, int64_t{1000003}, int64_t{32 * 112 * 112 * 2}}) {
    for (int offset : {0, 1}) {  // 1: every pointer 4 bytes past 16-byte alignment
      const uint64_t seed = kernel_test_seed();
      std::mt19937_64 gen(seed);
      SCOPED_TRACE("count " + std::to_string(count) + " offset " + std::to_string(offset) +
                   " MNV2_TEST_SEED=" + std::to_string(seed));
      std::vector<float> a = random_vector(gen, static_cast<size_t>(count), -8.0f, 8.0f);
      const std::vector<float> b = random_vector(gen, static_cast<size_t>(count), -8.0f, 8.0f);
      if (count > 3) a[2] = std::numeric_limits<float>::quiet_NaN();  // must stay NaN through the clip
      std::vector<float> padded_a(static_cast<size_t>(count + offset)), padded_b(padded_a.size());
      std::copy(a.begin(), a.end(), padded_a.begin() + offset);
      std::copy(b.begin(), b.end(), padded_b.begin() + offset);
      DeviceArray da(padded_a), db(padded_b), dy(padded_a.size());
      for (float hi : {6.0f, inf}) {
        std::vector<float> ref(a.size());
        cpu::clip(a.data(), ref.data(), count, 0.0f, hi, 2);
        dy.poison();
        k::launch_clip(k::ClipParams{count, da.get() + offset, dy.get() + offset, k::Clip{true, 0.0f, hi}}, nullptr);
        std::vector<float> got = dy.download();
        got.erase(got.begin(), got.begin() + offset);
        if (count > 3) {
          EXPECT_TRUE(std::isnan(got[2])) << "NaN was clipped to " << got[2];
          got[2] = ref[2] = 0.0f;
        }
        const Agreement agree = agreement(got, ref);
        EXPECT_TRUE(agree.ok() && agree.rel_l2 == 0.0) << "clip hi " << hi << ": " << agree.str();
      }
      if (count > 3) a[2] = 1.0f;
      std::copy(a.begin(), a.end(), padded_a.begin() + offset);
      da.upload(padded_a);
      std::vector<float> ref(a.size());
      cpu::add(a.data(), b.data(), ref.data(), count, 2);
      dy.poison();
      k::launch_add(k::AddParams{count, da.get() + offset, db.get() + offset, dy.get() + offset}, nullptr);
      std::vector<float> got = dy.download();
      got.erase(got.begin(), got.begin() + offset);
      const Agreement agree = agreement(got, ref);
      EXPECT_TRUE(agree.ok() && agree.rel_l2 == 0.0) << "add: " << agree.str();
      // In place: the output is the first operand.
      k::launch_add(k::AddParams{count, da.get() + offset, db.get() + offset, da.get() + offset}, nullptr);
      got = da.download();
      got.erase(got.begin(), got.begin() + offset);
      EXPECT_EQ(agreement(got, ref).rel_l2, 0.0) << "add in place";
    }
  }
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelElementwise, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
