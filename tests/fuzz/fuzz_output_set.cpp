// libFuzzer target: the output writer (OutputSet over a scratch folder laid out by the bytes). A temporary
// left behind or a failed commit that changed a file throws std::logic_error and aborts (a finding).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)mnv2::fuzz::output_set(data, size);
  return 0;
}
