// External tensor data (see onnx_external_data.h). A location is walked one component at a time from
// the canonical folder: each step is checked to stay inside the folder (by its form, then by the canonical
// prefix of any symbolic link's target) before it is looked at, so a refusal never depends on, and so
// never reveals, whether something outside the folder exists. Only regular files are opened.
#include "model/onnx_external_data.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <filesystem>

#include "mnv2/error.h"
#include "mnv2/input_files.h"
#include "util/sha256.h"

namespace mnv2::detail {

namespace {

// A location longer than this is not a file name an exporter writes.
constexpr size_t kMaxLocationChars = 4096;
// Symbolic links followed while resolving one location (the kernel's own limit is 40).
constexpr int kMaxLinks = 40;

[[noreturn]] void refuse(const std::string& why) { throw ExternalDataRefusal(why); }

std::vector<std::string> split_path(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('/', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string join(const std::string& dir, const std::string& name) { return dir == "/" ? "/" + name : dir + "/" + name; }

// Lexical normal form of an absolute path ("." and ".." folded, no trailing '/'): no file-system access.
std::string normalise_absolute(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& p : split_path(path)) {
    if (p == ".") continue;
    if (p == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.push_back(p);
  }
  std::string s;
  for (const std::string& p : out) s += "/" + p;
  return s.empty() ? "/" : s;
}

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

ExternalDataReader::ExternalDataReader(const std::string& folder, uint64_t max_total_bytes)
    : max_total_(max_total_bytes) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(folder.empty() ? "." : folder, ec);
  if (ec) refuse("the model's folder '" + folder + "' cannot be resolved (" + ec.message() + ")");
  root_ = canonical.string();
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

ExternalDataReader::~ExternalDataReader() {
  for (auto& [path, f] : files_)
    if (f.fd >= 0) ::close(f.fd);
}

std::string ExternalDataReader::resolve(const std::string& location) const {
  const std::string where = "external data location '" + location + "'";
  // The location's own form first: nothing is looked up for these.
  if (location.empty()) refuse("external data location is empty");
  if (location.size() > kMaxLocationChars)
    refuse("external data location is longer than " + std::to_string(kMaxLocationChars) + " characters");
  if (location.find('\0') != std::string::npos) refuse("external data location contains a NUL character");
  if (location.front() == '/')
    refuse(where + " is an absolute path; external data must be named relative to the model's folder");
  std::deque<std::string> todo;
  for (const std::string& part : split_path(location)) {
    if (part == "..") refuse(where + " contains '..'; external data must lie inside the model's folder");
    if (part != ".") todo.push_back(part);
  }
  if (todo.empty()) refuse(where + " names the model's folder, not a file");

  const std::string inside = root_ == "/" ? "/" : root_ + "/";
  const std::string outside_link = where + " goes through a symbolic link that leads outside the model's folder";
  std::string current = root_;
  struct stat st {};
  int links = 0;
  while (!todo.empty()) {
    const std::string part = todo.front();
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {  // only from a link's target; `current` is a real folder inside the root here
      if (current == root_) refuse(outside_link);
      const size_t slash = current.rfind('/');
      current.resize(slash == 0 ? 1 : slash);  // "/a" -> "/"
      continue;
    }
    const std::string next = join(current, part);  // inside the root: checked before it is looked at
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) refuse(where + ": no such file in the model's folder");
      refuse(where + ": cannot be read (" + std::strerror(errno) + ")");
    }
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) refuse(where + " goes through too many symbolic links");
      std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1, '\0');
      const ssize_t n = ::readlink(next.c_str(), target.data(), target.size());
      if (n <= 0 || static_cast<size_t>(n) >= target.size())
        refuse(where + ": a symbolic link on the way cannot be read");
      target.resize(static_cast<size_t>(n));
      std::vector<std::string> parts;
      if (target.front() == '/') {
        const std::string norm = normalise_absolute(target);
        if (norm != root_ && norm.compare(0, inside.size(), inside) != 0) refuse(outside_link);
        current = root_;
        parts = split_path(norm.substr(root_.size()));
      } else {
        parts = split_path(target);
      }
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    if (!todo.empty() && !S_ISDIR(st.st_mode)) refuse(where + ": '" + part + "' is not a folder");
    current = next;
  }
  if (current == root_) refuse(where + " names the model's folder, not a file");
  if (!S_ISREG(st.st_mode)) refuse(where + " is " + file_kind(st.st_mode) + ", not a regular file");
  return current;
}

const ExternalDataReader::OpenFile& ExternalDataReader::open(const std::string& location) {
  auto known = resolved_.find(location);
  const std::string path = known != resolved_.end() ? known->second : resolve(location);
  if (auto it = files_.find(path); it != files_.end()) return it->second;

  const std::string where = "external data location '" + location + "'";
  struct stat before {};
  if (::lstat(path.c_str(), &before) != 0 || !S_ISREG(before.st_mode)) refuse(where + " changed while being opened");
  // O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO after the check neither escapes nor hangs.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) refuse(where + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != before.st_dev || st.st_ino != before.st_ino) {
    ::close(fd);
    refuse(where + " changed while being opened");
  }
  // Each file is read whole for its checksum, so the files' sizes count against the same bound as the tensors'
  // bytes: a small tensor in a huge file is not a way past it.
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_total_ - hashed_) {
    ::close(fd);
    refuse("external data files together exceed the limit of " + std::to_string(max_total_) + " bytes ('" + location +
           "' holds " + std::to_string(size) + "; each file is read whole for its checksum)");
  }
  std::string checksum;
  try {
    checksum = "sha256:" + sha256_fd_hex(fd, "'" + location + "'");
  } catch (const Error& e) {
    ::close(fd);
    refuse(std::string("external data ") + e.what());
  }
  hashed_ += size;
  OpenFile f;
  f.fd = fd;
  f.size = size;
  resolved_[location] = path;
  read_.push_back({location, checksum});
  return files_[path] = f;
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
