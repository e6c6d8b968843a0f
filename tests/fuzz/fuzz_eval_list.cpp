// libFuzzer target: the evaluation list reader (read_eval_list). Anything but success or an mnv2::Error escapes
// and aborts, and libFuzzer saves the input (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)mnv2::fuzz::eval_list(data, size);
  return 0;
}
