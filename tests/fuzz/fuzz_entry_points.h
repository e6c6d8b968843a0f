// What the fuzzers and their regression test feed hostile bytes through: each entry point hands the bytes
// to the engine exactly as a user's file would reach it (by path), then uses whatever the engine accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mnv2::fuzz {

enum class Outcome {
  accepted,  // the engine took the bytes and everything built from them held together
  refused,   // the engine threw mnv2::Error (a clear refusal: the expected answer to hostile input)
};

// Any other exception escapes, and an inconsistent result throws std::logic_error: both are findings.
// load_onnx(), then analyse() at the declared size and, for small models, a cpu prepare + run; a model whose
// declared sizes need more memory than the host has (activation_floor_bytes) must be refused by the cpu prepare
// before it allocates anything. External
// data is resolved in a scratch folder of this process only (scratch_dir()), never next to the memfd.
Outcome onnx_import(const uint8_t* data, size_t size);

// The scratch folder a fuzzed model's external data locations resolve in: a fresh temporary folder,
// removed at exit, holding one file kScratchDataFile of kScratchDataBytes (float32 values 0, 1/1024,
// 2/1024, ...), so that the fuzzer reaches the external-data code and can read nothing else.
inline constexpr const char* kScratchDataFile = "weights.bin";
inline constexpr size_t kScratchDataBytes = 4096;
const std::string& scratch_dir();
// decode_image_file(), then preprocess() with the ImageNet defaults.
Outcome image_decode(const uint8_t* data, size_t size);
// read_reports_file(), then every writer (JSON, CSV, trace) over what was read; bytes it refuses go to
// read_bench_file() (mnv2.bench/1), whose results are written and read back.
Outcome report_reader(const uint8_t* data, size_t size);

// An OutputSet (mnv2/output_files.h) over a scratch folder the bytes lay out (files, links, folders, FIFOs,
// hard links), with a rename that fails part-way when the bytes say so: never a temporary left, and a
// failed commit changes no file.
Outcome output_set(const uint8_t* data, size_t size);

// read_eval_list() over the bytes as a list file for a 1000-class model, its images folder the scratch folder: every
// name accepted lies beneath that folder (no absolute name, no '..'), every label is in range, every refusal names
// the file on one line.
Outcome eval_list(const uint8_t* data, size_t size);

// The file the bytes were last written to (a memfd, so nothing touches the disk); errors must name it.
std::string input_path();

}  // namespace mnv2::fuzz
