// libFuzzer target: the ONNX importer (load_onnx, then analyse and a cpu run of small models). Anything but
// success or an mnv2::Error escapes and aborts, and libFuzzer saves the input (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)mnv2::fuzz::onnx_import(data, size);
  return 0;
}
