// Opening a file beneath a trusted folder's descriptor (see mnv2/contained_open.h).
#include "mnv2/contained_open.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "mnv2/input_files.h"

namespace mnv2 {

namespace {

// The kernel answers EAGAIN when a rename raced the lookup; a few tries, then the walk (which needs none).
constexpr int kOpenat2Tries = 16;
// Symbolic links followed in one walk: the kernel's own limit.
constexpr int kMaxLinks = 40;
constexpr int kFileFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;  // O_NONBLOCK: a FIFO never blocks

ContainedFile refused(int error, std::string why, bool walked) {
  ContainedFile f;
  f.error = error;
  f.why = std::move(why);
  f.walked = walked;
  return f;
}

std::deque<std::string> split(const std::string& s) {
  std::deque<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('/', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string phrase(int err) {
  switch (err) {
    case ENOENT:
      return "no such file";
    case EXDEV:
      return "leads outside the folder";
    case ELOOP:
      return "goes through a symbolic link";
    case ENOTDIR:
      return "goes through something that is not a folder";
    default:
      return std::string("cannot be opened (") + std::strerror(err) + ")";
  }
}

// The descriptor `fd` just opened: a regular file (its size taken, O_NONBLOCK cleared) or refused and closed.
ContainedFile finish(int fd, bool walked) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return refused(err, phrase(err), walked);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return refused(S_ISDIR(st.st_mode) ? EISDIR : ENODEV,
                   std::string("is ") + file_kind(st.st_mode) + ", not a regular file", walked);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  ContainedFile f;
  f.fd = fd;
  f.size = static_cast<uint64_t>(st.st_size);
  f.walked = walked;
  return f;
}

// Folders held open below the top one; closed on every path.
class FolderStack {
 public:
  explicit FolderStack(int top) : top_(top) {}
  ~FolderStack() {
    for (int fd : held_) ::close(fd);
  }
  FolderStack(const FolderStack&) = delete;
  FolderStack& operator=(const FolderStack&) = delete;
  int current() const { return held_.empty() ? top_ : held_.back(); }
  bool at_top() const { return held_.empty(); }
  void push(int fd) { held_.push_back(fd); }
  void pop() {
    ::close(held_.back());
    held_.pop_back();
  }

 private:
  int top_;
  std::vector<int> held_;
};

ContainedFile walk(int dir_fd, const std::string& relative, ContainedLinks links) {
  std::deque<std::string> todo = split(relative);
  FolderStack folders(dir_fd);
  int followed = 0;
  while (!todo.empty()) {
    const std::string part = todo.front();
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (folders.at_top()) return refused(EXDEV, phrase(EXDEV), true);
      folders.pop();
      continue;
    }
    const bool last = todo.empty();
    int fd = -1;
    if (last) {
      fd = ::openat(folders.current(), part.c_str(), kFileFlags | O_NOFOLLOW);
      if (fd >= 0) return finish(fd, true);
      const int err = errno;
      if (err == ENXIO) return refused(ENODEV, "is a socket or a device without a driver, not a regular file", true);
      if (err != ELOOP) return refused(err, phrase(err), true);
      // A symbolic link (O_NOFOLLOW's ELOOP): read below as any other.
    }
    // O_PATH | O_NOFOLLOW: the entry itself (a link stays a link), without needing read permission.
    fd = ::openat(folders.current(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      return refused(err, phrase(err), true);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return refused(err, phrase(err), true);
    }
    if (S_ISDIR(st.st_mode) && !last) {
      folders.push(fd);
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      ::close(fd);
      // The last part as anything else was opened above: here it changed under us; a middle part is no folder.
      if (last) return refused(EAGAIN, "changed while being opened", true);
      return refused(ENOTDIR, "'" + part + "' is not a folder", true);
    }
    if (links == ContainedLinks::refuse) {
      ::close(fd);
      return refused(ELOOP, "goes through a symbolic link ('" + part + "')", true);
    }
    if (++followed > kMaxLinks) {
      ::close(fd);
      return refused(ELOOP, "goes through too many symbolic links", true);
    }
    std::string target(4096, '\0');
    const ssize_t n = ::readlinkat(fd, "", target.data(), target.size());
    ::close(fd);
    if (n <= 0 || static_cast<size_t>(n) >= target.size())
      return refused(ELOOP, "goes through a symbolic link that cannot be read", true);
    target.resize(static_cast<size_t>(n));
    if (target.front() == '/') return refused(EXDEV, phrase(EXDEV), true);  // RESOLVE_BENEATH refuses these too
    const std::deque<std::string> parts = split(target);
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  return refused(EISDIR, "names the folder itself, not a file", true);
}

long openat2_call(int dir_fd, const char* path, const open_how& how) {
  return ::syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
}

}  // namespace

bool openat2_available() {
  static const bool available = [] {
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH;
    const long fd = openat2_call(AT_FDCWD, ".", how);
    if (fd < 0) return false;
    ::close(static_cast<int>(fd));
    return true;
  }();
  return available;
}

ContainedFile open_beneath(int dir_fd, const std::string& relative, ContainedLinks links, ContainedMethod method) {
  // The name's form first: nothing is looked up for these.
  if (relative.empty()) return refused(EINVAL, "is empty", false);
  if (relative.find('\0') != std::string::npos) return refused(EINVAL, "contains a NUL character", false);
  if (relative.front() == '/') return refused(EINVAL, "is an absolute path", false);
  if (relative.back() == '/') return refused(EINVAL, "ends in '/' (a folder's name, not a file's)", false);

  if (method == ContainedMethod::automatic) {
    open_how how{};
    how.flags = kFileFlags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    if (links == ContainedLinks::refuse) how.resolve |= RESOLVE_NO_SYMLINKS;
    long fd = -1;
    int err = 0;
    for (int attempt = 0; attempt < kOpenat2Tries; ++attempt) {
      fd = openat2_call(dir_fd, relative.c_str(), how);
      err = fd < 0 ? errno : 0;
      if (!(fd < 0 && err == EAGAIN)) break;
    }
    if (fd >= 0) return finish(static_cast<int>(fd), false);
    // ENOSYS (no openat2), EPERM (a seccomp filter), EINVAL (flags this kernel does not know), EAGAIN (renames
    // kept racing): the walk. Every other error is the answer, as the walk would give it; the walk is asked only
    // to say which part (a refusal's wording, not its verdict).
    if (err != ENOSYS && err != EPERM && err != EINVAL && err != EAGAIN) {
      if (err == ENXIO) return refused(ENODEV, "is a socket or a device without a driver, not a regular file", false);
      if (err == ENOTDIR || err == ELOOP) {
        ContainedFile diagnosis = walk(dir_fd, relative, links);
        if (diagnosis.fd >= 0) ::close(diagnosis.fd);  // a rename in between: the kernel's refusal stands
        if (diagnosis.error == err) return refused(err, diagnosis.why, false);
      }
      return refused(err, phrase(err), false);
    }
  }
  return walk(dir_fd, relative, links);
}

}  // namespace mnv2
