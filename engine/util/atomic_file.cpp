// Atomic file replacement (see atomic_file.h).
#include "mnv2/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "mnv2/error.h"

namespace mnv2 {

void write_file_atomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError("empty output file name");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory");
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw Error(path + ": cannot create a file in " + dir.string() + " (" + std::strerror(errno) + ")");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      throw Error(path + ": write failed (" + std::strerror(err) + ")");
    }
    done += static_cast<size_t>(n);
  }
  // Make a fresh report readable like any file the user creates (mkstemp gives 0600).
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw Error(path + ": cannot flush to disk");
  }
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    throw Error(path + ": cannot replace (" + std::strerror(err) + ")");
  }
}

}  // namespace mnv2
