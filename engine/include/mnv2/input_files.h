// Every file mnv2 reads, in one place: what it must be and how much of it may be read. A file is opened
// without blocking and checked with fstat on the open descriptor (no race between the check and the read):
// only a regular file is read where a file is meant; a FIFO, a device, a socket or a folder is refused at
// once (so nothing hangs on a FIFO and nothing reads /dev/zero for ever). Sizes are checked before reading
// and again while reading (a file that grows is cut off at its budget, not followed). Every error, an
// allocation failure included, names the file.
//
// JSON inputs are scanned first (a SAX pass that builds nothing) and refused when the parsed document would
// need more memory than `max_parsed_bytes`, or holds a string longer than `max_string_bytes`: the memory a
// read may take is bounded before it is taken, whatever the shape of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mnv2 {

struct InputBudget {
  const char* what;               // "labels file", named in errors
  uint64_t max_bytes;             // the file's size
  uint64_t max_parsed_bytes = 0;  // JSON: estimated memory of the parsed document (0: no JSON)
  uint64_t max_string_bytes = 0;  // JSON: the longest string; text: the longest line (0: no bound)
  uint64_t max_lines = 0;         // text: lines (0: no bound)
  const char* hint = nullptr;     // added to the message of a file over max_bytes
};

namespace inputs {
inline constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

// One class name per line. A model has at most 2^20 classes (the importer's channel bound); a name of 4 KiB
// is far beyond any real one.
inline constexpr InputBudget kLabels{"labels file", 64 * kMiB, 0, 4 * kKiB, uint64_t{1} << 20};
// "FILENAME LABEL" per line: ImageNet's validation list is 50 000 lines and 2 MiB; 64 MiB and ten million
// lines bound a set far larger, each line at most PATH_MAX and a label.
inline constexpr InputBudget kEvalList{"evaluation list", 64 * kMiB, 0, 4 * kKiB + 16, 10'000'000};
// One entry (about 300 bytes) per device, backend and precision; a few hundred entries at most.
inline constexpr InputBudget kRooflineCache{"roofline cache", 1 * kMiB, 16 * kMiB, 4 * kKiB};
// mnv2.report: the largest legal report is a compare of four backends on a model of the importer's largest
// size (4096 layers); docs/LIMITS.md gives its measured size and memory. Strings are names, kernel names,
// paths and warnings: 64 KiB bounds them with room to spare.
inline constexpr InputBudget kReport{"report", 64 * kMiB, 256 * kMiB, 64 * kKiB};
// Any other JSON document (golden files, files a test or tool reads back).
inline constexpr InputBudget kJsonDocument{"JSON document", 64 * kMiB, 1 * kGiB, 1 * kMiB};
// protobuf parses at most 2 GiB; larger models keep their weights in external data files.
inline constexpr InputBudget kModel{
    "ONNX model", 2 * kGiB - 1, 0, 0, 0, "ONNX files larger than 2 GiB keep their weights in external data files"};
inline constexpr InputBudget kImage{"image file", 2 * kGiB - 1};
// Raw float32 NCHW tensors: the largest batch (65536) of 3x224x224 is 37 GiB. read_tensor_file also bounds
// the image count (65536) before it allocates anything.
inline constexpr InputBudget kTensor{"tensor file", 64 * kGiB};
}  // namespace inputs

// The whole of a regular file within `budget.max_bytes`; throws Error "PATH: ..." (not a regular file, too
// large, unreadable, out of memory).
std::string read_input_file(const std::string& path, const InputBudget& budget);
std::vector<uint8_t> read_input_bytes(const std::string& path, const InputBudget& budget);

// Opens `path` for reading as a regular file (refusing FIFOs, devices, sockets and folders without blocking)
// and returns its descriptor and size; throws Error naming the file. The caller closes the descriptor.
struct OpenedInput {
  int fd = -1;
  uint64_t size = 0;
};
OpenedInput open_input_file(const std::string& path, const InputBudget& budget);

// The whole of a regular file already open (a contained open, mnv2/contained_open.h) within the budget, as
// read_input_file does; `in.fd` is closed whatever happens. `path` names the file in errors.
std::string read_opened_input(const OpenedInput& in, const std::string& path, const InputBudget& budget);

// What a file that is not a regular one is, from its st_mode: "a directory", "a FIFO (named pipe)", "a
// character device", "a block device", "a socket", else "not a regular file". Every refusal says it so.
const char* file_kind(uint32_t st_mode);

}  // namespace mnv2
