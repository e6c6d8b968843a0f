// What the measured-table tests share (test_gemm_tile_rules.cpp, test_block_split_rules.cpp): the docs/bench file a
// table's measurement text names, in the source tree.
#pragma once

#include <string>

namespace mnv2::test {

// "... (docs/bench/.../file.json)" -> that file under the source tree; "" where the text names none.
inline std::string bench_file_named_in(const std::string& measurement) {
  const size_t at = measurement.find("docs/bench/");
  const size_t end = measurement.find(')', at);
  if (at == std::string::npos || end == std::string::npos) return {};
  return std::string(MNV2_TEST_DATA_DIR) + "/../../" + measurement.substr(at, end - at);
}

}  // namespace mnv2::test
