// MNV2_CHECK_LOG (engine/gpu/check.h) after a fault that breaks the CUDA context: the first failure is printed with
// a note, the repeats are counted, not printed, until a checked call succeeds again; other errors are always
// printed. Needs no GPU: the statuses are given, not provoked.
#include <gtest/gtest.h>

#if defined(MNV2_HAVE_KERNELS)  // a CUDA build: the GPU plugin's headers and the CUDA runtime are here
#include <string>

#include "gpu/check.h"

namespace mnv2::test {
namespace {

int warnings_in(const std::string& text) {
  int n = 0;
  for (size_t at = text.find("mnv2: warning:"); at != std::string::npos; at = text.find("mnv2: warning:", at + 1)) ++n;
  return n;
}

TEST(CheckLog, ABrokenContextIsReportedOnceUntilACallSucceeds) {
  gpu::BrokenContextLog& log = gpu::broken_context_log();
  EXPECT_TRUE(MNV2_CHECK_LOG(cudaSuccess));  // whatever ran before, a success starts afresh
  const long long before = log.suppressed.load();
  testing::internal::CaptureStderr();
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(MNV2_CHECK_LOG(cudaErrorIllegalAddress));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings_in(err), 1) << err;
  EXPECT_NE(err.find("cudaErrorIllegalAddress"), std::string::npos) << err;
  EXPECT_NE(err.find("the CUDA context is broken"), std::string::npos) << err;
  EXPECT_EQ(log.suppressed.load() - before, 4);

  // Another sticky fault of the same broken context is a repeat too.
  testing::internal::CaptureStderr();
  EXPECT_FALSE(MNV2_CHECK_LOG(cudaErrorLaunchFailure));
  EXPECT_EQ(warnings_in(testing::internal::GetCapturedStderr()), 0);

  // A call that succeeds (the context was reset) ends it: the next fault is printed again.
  EXPECT_TRUE(MNV2_CHECK_LOG(cudaSuccess));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(MNV2_CHECK_LOG(cudaErrorMisalignedAddress));
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings_in(err), 1) << err;

  // Errors that leave the context usable are never held back.
  EXPECT_TRUE(MNV2_CHECK_LOG(cudaSuccess));
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(MNV2_CHECK_LOG(cudaErrorInvalidValue));
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings_in(err), 3) << err;
  EXPECT_EQ(err.find("context is broken"), std::string::npos) << err;
}

}  // namespace
}  // namespace mnv2::test
#endif  // MNV2_HAVE_KERNELS
