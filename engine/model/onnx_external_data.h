// External data of ONNX tensors (TensorProto.external_data: location, offset, length, checksum): each
// location is resolved strictly inside one folder, and every way a hostile file can point elsewhere is
// refused before anything outside that folder is looked at. Internal to engine/model.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/contained_open.h"
#include "mnv2/model.h"

namespace onnx {
class TensorProto;
}

namespace mnv2::detail {

// Why a tensor's external data cannot be read; the importer adds the file and the tensor's name.
class ExternalDataRefusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The external_data entries of one tensor.
struct ExternalRef {
  std::string location;            // relative to the folder, '/'-separated
  uint64_t offset = 0;             // bytes into the file
  std::optional<uint64_t> length;  // bytes; absent: to the end of the file
};

// Parses `t`'s external_data (location required; offset and length decimal; checksum accepted and not
// verified; other keys ignored, as the ONNX library does). Throws ExternalDataRefusal.
ExternalRef parse_external_ref(const onnx::TensorProto& t);

// Reads external data below one folder. Each file is opened once (kept open for the reader's life, so a
// file replaced midway cannot mix two versions) and hashed whole (SHA-256, in chunks) when opened. The bytes
// read over all tensors are bounded, and so are the files' sizes together (each is read whole for its hash).
class ExternalDataReader {
 public:
  // `folder` must exist; it is opened once, and every location is opened beneath that descriptor
  // (mnv2/contained_open.h; `method` forces the component walk in tests). No location may lead out of it.
  ExternalDataReader(const std::string& folder, uint64_t max_total_bytes,
                     ContainedMethod method = ContainedMethod::automatic);
  ~ExternalDataReader();
  ExternalDataReader(const ExternalDataReader&) = delete;
  ExternalDataReader& operator=(const ExternalDataReader&) = delete;

  // The `expected_bytes` the tensor's shape and type need, from ref's file; throws ExternalDataRefusal
  // when the location, the file or the byte range is unusable.
  std::string read(const ExternalRef& ref, uint64_t expected_bytes);

  uint64_t total_bytes() const { return total_; }
  // The files read from, in the order first used, with their checksums.
  const std::vector<ExternalDataFile>& files() const { return read_; }

 private:
  struct OpenFile {
    int fd = -1;
    uint64_t size = 0;
  };
  using FileId = std::pair<uint64_t, uint64_t>;  // st_dev, st_ino: one file under several names is one file
  const OpenFile& open(const std::string& location);

  int dir_fd_ = -1;  // the model's folder (O_PATH)
  uint64_t max_total_;
  ContainedMethod method_;
  uint64_t total_ = 0;   // tensor bytes read
  uint64_t hashed_ = 0;  // file bytes hashed
  std::map<FileId, OpenFile> files_;
  std::map<std::string, FileId> opened_;  // location -> its file
  std::vector<ExternalDataFile> read_;
};

}  // namespace mnv2::detail
