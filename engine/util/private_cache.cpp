// The private cache folder (see mnv2/private_cache.h).
#include "mnv2/private_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "mnv2/contained_open.h"
#include "mnv2/error.h"
#include "mnv2/model_lookup.h"
#include "mnv2/output_files.h"

namespace mnv2 {

namespace fs = std::filesystem;

namespace {

std::string octal(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

// Creates `dir` and its missing parents, each 0700 (the XDG specification's mode for the folders it names).
// Errors are left to the open that follows, which says what it found.
void create_private(const fs::path& dir) {
  fs::path at;
  for (const fs::path& part : dir) {
    at /= part;
    if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) return;
  }
}

}  // namespace

std::string why_not_private(const std::string& what, unsigned mode, unsigned owner) {
  if (!S_ISDIR(mode)) return what + " is " + file_kind(mode) + ", not a folder";
  if (owner != ::geteuid())
    return what + " is owned by user " + std::to_string(owner) + ", not by this user (" + std::to_string(::geteuid()) +
           "); a cache must be private";
  if ((mode & 077u) != 0)
    return what + " is open to other users (mode " + octal(mode) + "); a cache must be private (0700)";
  return "";
}

PrivateCache PrivateCache::open_default(bool create) {
  const std::string dir = cache_dir();
  if (dir.empty()) {
    PrivateCache c;
    c.note_ =
        "no cache folder: neither XDG_CACHE_HOME nor HOME is an absolute path (the cache-dir option, "
        "$MNV2_CACHE_DIR, names one); the cache is not used";
    return c;
  }
  return open(dir, create);
}

PrivateCache PrivateCache::open(const std::string& path, bool create) {
  PrivateCache c;
  c.path_ = path;
  // "cache/" would resolve a link named cache despite O_NOFOLLOW (a trailing '/' makes the kernel follow it).
  while (c.path_.size() > 1 && c.path_.back() == '/') c.path_.pop_back();
  const std::string what = "the cache folder " + path;
  if (path.empty()) {
    c.note_ = "no cache folder named; the cache is not used";
    return c;
  }
  if (create) create_private(fs::path(c.path_));
  // O_NOFOLLOW: the folder itself is never a link (a planted one would lead our writes elsewhere).
  const int fd = ::open(c.path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (err == ELOOP || err == ENOTDIR) {
      const bool link = ::lstat(c.path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
      c.note_ = what + (link ? " is a symbolic link" : " is not a folder") + "; the cache is not used";
    } else {
      c.note_ = what + " cannot be opened (" + std::strerror(err) + "); the cache is not used";
    }
    return c;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    c.note_ = what + " cannot be examined (" + std::strerror(errno) + "); the cache is not used";
    ::close(fd);
    return c;
  }
  if (std::string why = why_not_private(what, st.st_mode, st.st_uid); !why.empty()) {
    c.note_ = why + ": not used";
    ::close(fd);
    return c;
  }
  c.fd_ = fd;
  return c;
}

PrivateCache::~PrivateCache() {
  if (fd_ >= 0) ::close(fd_);
}

PrivateCache::PrivateCache(PrivateCache&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), note_(std::move(other.note_)) {
  other.fd_ = -1;
}

PrivateCache& PrivateCache::operator=(PrivateCache&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    note_ = std::move(other.note_);
    other.fd_ = -1;
  }
  return *this;
}

std::string PrivateCache::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

std::optional<std::string> PrivateCache::read(const std::string& name, const InputBudget& budget) const {
  if (!usable()) return std::nullopt;
  struct stat held {};  // still private (a chmod since it was opened counts)
  if (::fstat(fd_, &held) != 0)
    throw Error(file(name) + ": cannot examine the cache folder (" + std::strerror(errno) + ")");
  if (std::string why = why_not_private("the cache folder " + path_, held.st_mode, held.st_uid); !why.empty())
    throw Error(why);
  const ContainedFile f = open_beneath(fd_, name, ContainedLinks::refuse);
  if (!f.ok()) {
    if (f.error == ENOENT) return std::nullopt;
    throw Error(file(name) + ": " + budget.what + " " + f.why);
  }
  return read_opened_input(OpenedInput{f.fd, f.size}, file(name), budget);
}

void PrivateCache::check_again() const {
  const std::string what = "the cache folder " + path_;
  if (!usable()) throw Error(note_);
  struct stat held {
  }, named{};
  if (::fstat(fd_, &held) != 0) throw Error(what + " cannot be examined (" + std::strerror(errno) + ")");
  if (std::string why = why_not_private(what, held.st_mode, held.st_uid); !why.empty()) throw Error(why);
  // The path is what the writer uses: it must still name the folder checked, not a link or another folder.
  if (::lstat(path_.c_str(), &named) != 0 || named.st_dev != held.st_dev || named.st_ino != held.st_ino)
    throw Error(what + " was replaced while in use");
}

void PrivateCache::write(const std::string& name, const std::string& bytes) const {
  check_again();
  if (name.empty() || name.find('/') != std::string::npos) throw Error("not a cache entry name: '" + name + "'");
  struct stat st {};
  if (::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) throw Error(file(name) + " is a symbolic link; not written through");
    if (!S_ISREG(st.st_mode)) throw Error(file(name) + " is " + file_kind(st.st_mode) + ", not a regular file");
  }
  write_output_file(file(name), bytes);
}

PrivateCache::Lock::~Lock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

namespace {

int locked(int fd, const std::string& lock_path) {
  if (fd < 0) throw Error(lock_path + ": cannot open the lock (" + std::strerror(errno) + ")");
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    throw Error(lock_path + ": cannot lock (" + std::strerror(err) + ")");
  }
  return fd;
}

constexpr int kLockFlags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

}  // namespace

PrivateCache::Lock PrivateCache::lock(const std::string& name) const {
  check_again();
  const std::string lock_name = name + ".lock";
  return Lock(locked(::openat(fd_, lock_name.c_str(), kLockFlags, 0600), file(lock_name)));
}

PrivateCache::Lock PrivateCache::Lock::beside(const std::string& file) {
  const std::filesystem::path p(file);
  const std::string lock_path = (p.parent_path() / ("." + p.filename().string() + ".lock")).string();
  return Lock(locked(::open(lock_path.c_str(), kLockFlags, 0600), lock_path));
}

}  // namespace mnv2
