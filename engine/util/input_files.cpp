// Reading input files within their budgets (see mnv2/input_files.h).
#include "mnv2/input_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "mnv2/error.h"

namespace mnv2 {

namespace {

std::string size_text(uint64_t bytes) {
  if (bytes >= inputs::kGiB && bytes % inputs::kGiB == 0) return std::to_string(bytes / inputs::kGiB) + " GiB";
  if (bytes >= inputs::kMiB && bytes % inputs::kMiB == 0) return std::to_string(bytes / inputs::kMiB) + " MiB";
  if (bytes >= inputs::kKiB && bytes % inputs::kKiB == 0) return std::to_string(bytes / inputs::kKiB) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

const char* file_kind(uint32_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

OpenedInput open_input_file(const std::string& path, const InputBudget& budget) {
  const std::string what = budget.what;
  if (path.empty()) throw Error("no " + what + " named (empty path)");
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked on the descriptor itself.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))  // a socket cannot even be opened
      throw Error(path + ": cannot read " + what + " (it is " + file_kind(st.st_mode) + ", not a regular file)");
    throw Error(path + ": cannot open " + what + " (" +
                (err == ENOENT ? std::string("no such file") : std::string(std::strerror(err))) + ")");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path + ": cannot open " + what + " (" + std::strerror(err) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": cannot read " + what + " (it is " + file_kind(st.st_mode) + ", not a regular file)");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > budget.max_bytes) {
    ::close(fd);
    throw Error(path + ": " + what + " of " + std::to_string(size) + " bytes is over its limit of " +
                size_text(budget.max_bytes) + (budget.hint ? std::string("; ") + budget.hint : std::string()));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return {fd, size};
}

namespace {

template <class Bytes>
Bytes read_opened(const OpenedInput& in, const std::string& path, const InputBudget& budget) {
  if (in.size > budget.max_bytes) {
    ::close(in.fd);
    throw Error(path + ": " + budget.what + " of " + std::to_string(in.size) + " bytes is over its limit of " +
                size_text(budget.max_bytes) + (budget.hint ? std::string("; ") + budget.hint : std::string()));
  }
  Bytes bytes;
  try {
    bytes.resize(static_cast<size_t>(in.size));
    size_t done = 0;
    for (;;) {
      if (done == bytes.size()) {
        // At the size fstat gave: a file that grew since is followed up to its budget, not past it.
        if (bytes.size() >= budget.max_bytes) {
          char probe = 0;
          const ssize_t n = ::read(in.fd, &probe, 1);
          if (n < 0 && errno == EINTR) continue;
          if (n > 0)
            throw Error(path + ": grew past the " + size_text(budget.max_bytes) + " a " + budget.what +
                        " can be while it was read");
          break;
        }
        bytes.resize(std::min<uint64_t>(budget.max_bytes, bytes.size() + 64 * inputs::kKiB));
      }
      const ssize_t n = ::read(in.fd, reinterpret_cast<char*>(bytes.data()) + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(path + ": cannot read " + budget.what + " (" + std::strerror(errno) + ")");
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  } catch (const std::bad_alloc&) {
    ::close(in.fd);
    throw Error(path + ": not enough memory to read the " + std::to_string(in.size) + "-byte " + budget.what);
  } catch (...) {
    ::close(in.fd);
    throw;
  }
  ::close(in.fd);
  return bytes;
}

template <class Bytes>
Bytes read_all(const std::string& path, const InputBudget& budget) {
  return read_opened<Bytes>(open_input_file(path, budget), path, budget);
}

}  // namespace

std::string read_opened_input(const OpenedInput& in, const std::string& path, const InputBudget& budget) {
  return read_opened<std::string>(in, path, budget);
}

std::string read_input_file(const std::string& path, const InputBudget& budget) {
  return read_all<std::string>(path, budget);
}

std::vector<uint8_t> read_input_bytes(const std::string& path, const InputBudget& budget) {
  return read_all<std::vector<uint8_t>>(path, budget);
}

}  // namespace mnv2
