// External tensor data (see onnx_external_data.h). A location is checked by its form, then opened beneath the
// model folder's descriptor in one operation (mnv2/contained_open.h: openat2 RESOLVE_BENEATH, or the O_NOFOLLOW
// walk): the check and the open cannot be come between, a step out of the folder is refused before anything
// outside is looked at (so a refusal never reveals whether something outside exists), and only regular files
// are opened.
#include "model/onnx_external_data.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "mnv2/contained_open.h"
#include "mnv2/error.h"
#include "mnv2/input_files.h"
#include "util/sha256.h"

namespace mnv2::detail {

namespace {

// A location longer than this is not a file name an exporter writes.
constexpr size_t kMaxLocationChars = 4096;
[[noreturn]] void refuse(const std::string& why) { throw ExternalDataRefusal(why); }

uint64_t parse_bytes(const std::string& key, const std::string& value) {
  uint64_t v = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || p != end)
    refuse("external data " + key + " '" + value + "' is not a whole number of bytes");
  return v;
}

}  // namespace

ExternalRef parse_external_ref(const onnx::TensorProto& t) {
  ExternalRef ref;
  bool has_location = false, has_offset = false, has_length = false;
  for (const onnx::StringStringEntryProto& e : t.external_data()) {
    const std::string& key = e.key();
    bool* seen = key == "location" ? &has_location
                 : key == "offset" ? &has_offset
                 : key == "length" ? &has_length
                                   : nullptr;
    if (!seen) continue;  // "checksum" (SHA-1, not verified) and keys of future versions
    if (*seen) refuse("external data gives '" + key + "' twice");
    *seen = true;
    if (key == "location") {
      ref.location = e.value();
    } else if (key == "offset") {
      ref.offset = parse_bytes(key, e.value());
    } else {
      ref.length = parse_bytes(key, e.value());
    }
  }
  if (!has_location) refuse("is stored externally but its external data has no 'location'");
  return ref;
}

ExternalDataReader::ExternalDataReader(const std::string& folder, uint64_t max_total_bytes, ContainedMethod method)
    : max_total_(max_total_bytes), method_(method) {
  // The folder itself may be reached through links (it is the model's folder wherever it is named from); what is
  // beneath it is resolved from this descriptor only.
  const std::string name = folder.empty() ? "." : folder;
  dir_fd_ = ::open(name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) refuse("the model's folder '" + folder + "' cannot be opened (" + std::strerror(errno) + ")");
}

ExternalDataReader::~ExternalDataReader() {
  for (auto& [id, f] : files_)
    if (f.fd >= 0) ::close(f.fd);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

const ExternalDataReader::OpenFile& ExternalDataReader::open(const std::string& location) {
  if (auto known = opened_.find(location); known != opened_.end()) return files_.at(known->second);
  const std::string where = "external data location '" + location + "'";
  // The location's own form first: nothing is looked up for these.
  if (location.empty()) refuse("external data location is empty");
  if (location.size() > kMaxLocationChars)
    refuse("external data location is longer than " + std::to_string(kMaxLocationChars) + " characters");
  if (location.find('\0') != std::string::npos) refuse("external data location contains a NUL character");
  if (location.front() == '/')
    refuse(where + " is an absolute path; external data must be named relative to the model's folder");
  bool names_a_file = false;
  for (size_t start = 0; start <= location.size();) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    const std::string part = location.substr(start, end - start);
    if (part == "..") refuse(where + " contains '..'; external data must lie inside the model's folder");
    if (!part.empty() && part != ".") names_a_file = true;
    start = end + 1;
  }
  if (!names_a_file) refuse(where + " names the model's folder, not a file");
  if (location.back() == '/') refuse(where + " ends in '/': a folder's name, not a file's");

  // O_NONBLOCK inside: a FIFO is refused, never waited on.
  const ContainedFile c = open_beneath(dir_fd_, location, ContainedLinks::beneath, method_);
  if (!c.ok()) {
    switch (c.error) {
      case EXDEV:
        refuse(where + " goes through a symbolic link that leads outside the model's folder");
      case ENOENT:
        refuse(where + ": no such file in the model's folder");
      case EISDIR:
      case ENODEV:
      case ELOOP:
        refuse(where + " " + c.why);
      default:
        refuse(where + ": " + c.why);
    }
  }
  struct stat st {};
  if (::fstat(c.fd, &st) != 0) {
    const int err = errno;
    ::close(c.fd);
    refuse(where + ": cannot open (" + std::strerror(err) + ")");
  }
  const FileId id{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  if (files_.count(id) != 0) {  // another name of a file already open (a link inside, "./w.bin")
    ::close(c.fd);
    opened_[location] = id;
    return files_.at(id);
  }
  // Each file is read whole for its checksum, so the files' sizes count against the same bound as the tensors'
  // bytes: a small tensor in a huge file is not a way past it.
  const uint64_t size = c.size;
  if (size > max_total_ - hashed_) {
    ::close(c.fd);
    refuse("external data files together exceed the limit of " + std::to_string(max_total_) + " bytes ('" + location +
           "' holds " + std::to_string(size) + "; each file is read whole for its checksum)");
  }
  std::string checksum;
  try {
    checksum = "sha256:" + sha256_fd_hex(c.fd, "'" + location + "'");
  } catch (const Error& e) {
    ::close(c.fd);
    refuse(std::string("external data ") + e.what());
  }
  hashed_ += size;
  OpenFile f;
  f.fd = c.fd;
  f.size = size;
  opened_[location] = id;
  read_.push_back({location, checksum});
  return files_[id] = f;
}

std::string ExternalDataReader::read(const ExternalRef& ref, uint64_t expected_bytes) {
  const OpenFile& f = open(ref.location);
  const std::string file = "'" + ref.location + "' (" + std::to_string(f.size) + " bytes)";
  if (ref.offset > f.size)
    refuse("external data offset " + std::to_string(ref.offset) + " is beyond the end of " + file);
  const uint64_t available = f.size - ref.offset;
  // Compared by subtraction, so a huge offset + length cannot wrap around.
  if (ref.length && *ref.length > available)
    refuse("external data offset " + std::to_string(ref.offset) + " + length " + std::to_string(*ref.length) +
           " goes beyond the end of " + file);
  const uint64_t length = ref.length.value_or(available);
  if (length != expected_bytes)
    refuse("external data holds " + std::to_string(length) + " bytes (offset " + std::to_string(ref.offset) +
           (ref.length ? ", length " : ", to the end of ") + (ref.length ? std::to_string(length) : file) +
           ") but the tensor's shape and type need " + std::to_string(expected_bytes) + " bytes");
  if (length > max_total_ - total_)
    refuse("external data of all tensors together exceed the limit of " + std::to_string(max_total_) + " bytes");

  std::string bytes(static_cast<size_t>(length), '\0');
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(f.fd, bytes.data() + done, static_cast<size_t>(length - done), static_cast<off_t>(ref.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) refuse("external data in " + file + " cannot be read (" + std::strerror(errno) + ")");
    if (n == 0) refuse("external data in " + file + " ended early (the file shrank while being read)");
    done += static_cast<uint64_t>(n);
  }
  total_ += length;
  return bytes;
}

}  // namespace mnv2::detail
