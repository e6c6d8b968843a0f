// Safe writing of output files and report sets (see mnv2/output_files.h).
#include "mnv2/output_files.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <dirent.h>

#include "mnv2/error.h"

namespace mnv2 {

namespace {

using Target = OutputSet::Target;

constexpr int kMaxLinkHops = 40;               // as the kernel's own limit (ELOOP)
constexpr std::chrono::seconds kStaleAge{60};  // a temporary younger than this may belong to a live writer elsewhere

std::string reason(int err) { return std::strerror(err); }

int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "/dev/stdout", "/dev/fd/3", "/proc/self/fd/1", "/proc/<this pid>/fd/1": this process's descriptor, or -1.
int own_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  std::string rest;
  const std::string self = "/proc/" + std::to_string(getpid()) + "/fd/";
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"), self})
    if (path.starts_with(prefix)) rest = path.substr(prefix.size());
  if (rest.empty() || rest.size() > 9 || rest.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::atoi(rest.c_str());
}

bool is_descriptor_path(const std::string& path) {
  return path == "/dev/stdout" || path == "/dev/stderr" || path.starts_with("/dev/fd/") || path.starts_with("/proc/");
}

[[noreturn]] void refuse(const Target& t, const std::string& why) {
  throw UsageError((t.label.empty() ? "" : t.label + " ") + t.path + ": " + why);
}

std::string canonical_folder(const std::string& dir) {
  char buf[PATH_MAX];
  return ::realpath(dir.c_str(), buf) ? std::string(buf) : dir;
}

// What `t.path` is, following symbolic links by hand so each case gets its own answer.
void resolve(Target& t) {
  if (t.path.empty()) refuse(t, "empty output file name");
  if (t.path == "-") {
    t.kind = OutputSet::Kind::stream;
    t.fd = 1;
    t.real = "standard output";
    return;
  }
  std::string cur = t.path;
  struct stat st {};
  bool exists = false;
  for (int hop = 0;; ++hop) {
    if (is_descriptor_path(cur)) {
      const int fd = own_descriptor(cur);
      if (fd < 0)
        refuse(t, "only this process's own descriptors (/dev/fd/N, /proc/self/fd/N) can be written under /proc");
      if (::fcntl(fd, F_GETFL) < 0) refuse(t, "descriptor " + std::to_string(fd) + " is not open");
      t.kind = OutputSet::Kind::stream;
      t.fd = fd;
      t.real = cur;
      return;
    }
    if (::lstat(cur.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT) refuse(t, reason(err));
      if (hop > 0) refuse(t, "is a symbolic link to " + cur + ", which does not exist");
      break;
    }
    if (!S_ISLNK(st.st_mode)) {
      exists = true;
      break;
    }
    t.linked = true;
    if (hop == kMaxLinkHops) refuse(t, "too many levels of symbolic links (a loop?)");
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(cur.c_str(), target.data(), target.size());
    if (n < 0) refuse(t, "cannot read the symbolic link " + cur + " (" + reason(errno) + ")");
    target.resize(static_cast<size_t>(n));
    cur = target.starts_with('/') ? target : dir_of(cur) + "/" + target;
  }
  if (exists) {
    if (S_ISDIR(st.st_mode)) refuse(t, "is a directory");
    if (S_ISSOCK(st.st_mode)) refuse(t, "is a socket");
    t.dev = st.st_dev;
    t.ino = st.st_ino;
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      t.kind = OutputSet::Kind::stream;
      t.mode = st.st_mode;
      t.real = cur;
      return;
    }
    if (!S_ISREG(st.st_mode)) refuse(t, "is not a regular file");
    // Read-only is the mode's answer, not access(2)'s: root passes access() for any file.
    if ((st.st_mode & S_IWUSR) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      refuse(t, std::string("is read-only (mode ") + mode + "); make it writable (chmod u+w) to replace it");
    }
    if (::access(cur.c_str(), W_OK) != 0) refuse(t, "cannot be written (" + reason(errno) + ")");
    t.mtime_ns = mtime_ns_of(st);
    t.exists = true;
    t.mode = st.st_mode & 07777;
    t.uid = st.st_uid;
    t.gid = st.st_gid;
    t.links = st.st_nlink;
  } else {
    if (cur.ends_with('/')) refuse(t, "names a directory, not a file");
    const std::string name = name_of(cur);
    if (name == "." || name == "..") refuse(t, "names a directory, not a file");
    if (name.size() > NAME_MAX) refuse(t, "file name longer than " + std::to_string(NAME_MAX) + " bytes");
    const mode_t mask = ::umask(0);
    ::umask(mask);
    t.mode = 0666 & ~mask;
  }
  const std::string dir = dir_of(cur);
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0) refuse(t, "directory " + dir + " does not exist (" + reason(errno) + ")");
  if (!S_ISDIR(ds.st_mode)) refuse(t, dir + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    refuse(t, "cannot create files in " + dir + " (" + reason(errno) +
                  "); the file is written beside its target, then renamed");
  t.kind = OutputSet::Kind::file;
  t.real = canonical_folder(dir) + "/" + name_of(cur);
}

// ".NAME.TAG-PID-XXXXXX" in the target's folder, NAME shortened so the whole fits NAME_MAX.
std::string temp_template(const std::string& real, const char* tag) {
  const std::string suffix = std::string(".") + tag + "-" + std::to_string(getpid()) + "-XXXXXX";
  std::string name = name_of(real);
  const size_t room = NAME_MAX - 1 - suffix.size();
  if (name.size() > room) name.resize(room);
  return dir_of(real) + "/." + name + suffix;
}

// A temporary name in the pattern above that does not exist yet (for link()).
std::string fresh_name(const std::string& real, const char* tag) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device rd;
  std::string name = temp_template(real, tag);
  for (int i = 0; i < 6; ++i) name[name.size() - 6 + static_cast<size_t>(i)] = kChars[rd() % 62];
  return name;
}

void write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, std::min<size_t>(bytes.size() - done, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdout: wait until it drains
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) throw Error(reason(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
}

void fsync_folder(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // some file systems refuse to sync a folder (EINVAL); the rename itself is done
  ::close(fd);
}

// SIGINT, SIGTERM and SIGHUP recorded, not acted on, while an object lives; the last one recorded is raised
// again (with the handlers that were there before) when it ends. Handlers, not a signal mask: a mask is per
// thread, and a process-directed signal would go to another thread and end the process mid-rename.
volatile std::sig_atomic_t g_held_signal = 0;
extern "C" void record_signal(int sig) { g_held_signal = sig; }

class SignalHold {
 public:
  SignalHold() {
    g_held_signal = 0;
    struct sigaction hold {};
    hold.sa_handler = record_signal;
    sigemptyset(&hold.sa_mask);
    hold.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      ::sigaction(kSignals[i], nullptr, &old_[i]);
      installed_[i] = old_[i].sa_handler != SIG_IGN && ::sigaction(kSignals[i], &hold, nullptr) == 0;
    }
  }
  ~SignalHold() {
    for (size_t i = 0; i < std::size(kSignals); ++i)
      if (installed_[i]) ::sigaction(kSignals[i], &old_[i], nullptr);
    if (const int sig = g_held_signal) {
      g_held_signal = 0;
      ::raise(sig);
    }
  }
  SignalHold(const SignalHold&) = delete;
  SignalHold& operator=(const SignalHold&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3]{};
  bool installed_[3] = {};
};

std::mutex g_commit_mutex;  // one commit at a time per process: the signal handlers are process-wide

// SIGPIPE ignored while streams are written, so a reader that goes away is a write error, not a silent death.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    ::sigaction(SIGPIPE, &ign, &old_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old_, nullptr); }
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

 private:
  struct sigaction old_ {};
};

// Exclusive flock()s on the folders a commit renames into, taken in the order of their paths (so two sets
// over the same folders cannot deadlock) and released when the object ends. A folder whose file system has
// no flock (some network file systems) is written without one.
class FolderLocks {
 public:
  FolderLocks() = default;
  ~FolderLocks() {
    for (int fd : fds_) ::close(fd);  // closing releases the lock
  }
  FolderLocks(const FolderLocks&) = delete;
  FolderLocks& operator=(const FolderLocks&) = delete;

  // Throws Error when a folder stays locked for `wait`; returns the folders another process held first.
  std::vector<std::string> take(std::vector<std::string> folders, std::chrono::milliseconds wait) {
    std::sort(folders.begin(), folders.end());
    folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
    std::vector<std::string> waited;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (const std::string& f : folders) {
      const int fd = ::open(f.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;  // the rename into it fails and says why
      bool held = false;
      for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
          held = true;
          break;
        }
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) break;  // no flock here
        if (waited.empty() || waited.back() != f) waited.push_back(f);
        if (std::chrono::steady_clock::now() >= deadline) {
          ::close(fd);
          throw Error("another process kept " + f + " locked for " + std::to_string(wait.count()) +
                      " ms while writing its files there");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (held)
        fds_.push_back(fd);
      else
        ::close(fd);
    }
    return waited;
  }

 private:
  std::vector<int> fds_;
};

int open_stream(const Target& t, std::chrono::milliseconds wait) {
  if (t.fd >= 0) return t.fd;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    // Non-blocking, so a FIFO with no reader fails (ENXIO) instead of blocking for ever.
    const int fd = ::open(t.real.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (errno != ENXIO) throw Error(reason(errno));
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error("no process opened the FIFO for reading within " + std::to_string(wait.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

OutputSet::OutputSet() = default;

OutputSet::~OutputSet() {
  for (const Target& t : targets_)
    if (!t.temp.empty()) ::unlink(t.temp.c_str());
}

void OutputSet::add(const std::string& label, const std::string& path) {
  Target t;
  t.label = label;
  t.path = path;
  resolve(t);
  for (const Target& o : targets_) {
    if (o.label == label) throw UsageError(label + " given twice");
    bool same = false;
    if (t.kind == Kind::stream && o.kind == Kind::stream) {
      // One descriptor, or one FIFO, named twice; /dev/null and other devices may take several outputs.
      same =
          (t.fd >= 0 && t.fd == o.fd) || (t.fd < 0 && o.fd < 0 && t.dev == o.dev && t.ino == o.ino && !S_ISCHR(t.mode));
    } else if (t.kind == Kind::file && o.kind == Kind::file) {
      same = t.real == o.real || (t.exists && o.exists && t.dev == o.dev && t.ino == o.ino);
    }
    if (same)
      throw UsageError(label + " " + path + " and " + o.label + " " + o.path +
                       " are the same file: one would overwrite the other");
  }
  for (const Input& in : inputs_) check_against(t, in);
  if (t.kind == Kind::file) remove_stale_temporaries(dir_of(t.real));
  targets_.push_back(std::move(t));
}

void OutputSet::add_input(const std::string& label, const std::string& path) {
  struct stat st {};
  if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0) return;  // the reader says what is wrong
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return;  // devices (/dev/null) may be read and written
  Input in{label, path, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), S_ISDIR(st.st_mode)};
  for (const Target& t : targets_) check_against(t, in);
  inputs_.push_back(std::move(in));
}

void OutputSet::check_against(const Target& t, const Input& in) const {
  const std::string what = (in.label.empty() ? "" : in.label + " ") + in.path;
  if (!in.folder) {
    if ((t.exists || t.kind == Kind::stream) && t.dev == in.dev && t.ino == in.ino && !S_ISCHR(t.mode) &&
        !S_ISBLK(t.mode))
      refuse(t, "is " + what + ", which this command reads; writing it would replace its input");
    return;
  }
  if (t.kind != Kind::file || !t.exists) return;
  // An existing file anywhere below the folder: t.real's folder is canonical, so walking up by name is exact.
  for (std::string dir = dir_of(t.real);; dir = dir_of(dir)) {
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) == 0 && static_cast<uint64_t>(ds.st_dev) == in.dev &&
        static_cast<uint64_t>(ds.st_ino) == in.ino)
      refuse(t, "is inside " + what + ", whose files this command reads; write it elsewhere");
    if (dir == "/" || dir == ".") return;
  }
}

bool OutputSet::has(const std::string& label) const {
  return std::any_of(targets_.begin(), targets_.end(), [&](const Target& t) { return t.label == label; });
}

const std::string& OutputSet::path(const std::string& label) const {
  for (const Target& t : targets_)
    if (t.label == label) return t.path;
  throw UsageError("no output " + label);
}

void OutputSet::put(const std::string& label, std::string bytes) {
  for (Target& t : targets_)
    if (t.label == label) {
      t.bytes = std::move(bytes);
      t.has_bytes = true;
      return;
    }
  throw UsageError("no output " + label);
}

bool OutputSet::writes_stdout() const {
  return std::any_of(targets_.begin(), targets_.end(), [](const Target& t) { return t.fd == 1; });
}

void OutputSet::move_stdout(int fd) {
  for (Target& t : targets_)
    if (t.fd == 1) t.fd = fd;
}

std::vector<std::string> OutputSet::commit() {
  std::vector<size_t> files, streams;
  for (size_t i = 0; i < targets_.size(); ++i)
    if (targets_[i].has_bytes) (targets_[i].kind == Kind::file ? files : streams).push_back(i);
  std::vector<std::string> all_files;
  for (size_t i : files) all_files.push_back(targets_[i].path);
  std::vector<std::string> lines;
  const bool root = ::geteuid() == 0;

  // 1. Every regular file to a temporary beside its target. Nothing visible changes in this phase.
  auto drop_temps = [&] {
    for (size_t i : files)
      if (!targets_[i].temp.empty()) {
        ::unlink(targets_[i].temp.c_str());
        targets_[i].temp.clear();
      }
  };
  for (size_t i : files) {
    Target& t = targets_[i];
    try {
      // The target may have changed since add(): it must still be a regular file, or absent.
      struct stat st {};
      if (::lstat(t.real.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw Error("is no longer a regular file");
      std::string name = temp_template(t.real, "mnv2tmp");
      const int fd = ::mkstemp(name.data());
      if (fd < 0) throw Error("cannot create a temporary in " + dir_of(t.real) + " (" + reason(errno) + ")");
      t.temp = name;
      try {
        write_all(fd, t.bytes);
      } catch (const Error& e) {
        ::close(fd);
        throw Error(std::string("write failed (") + e.what() + ")");
      }
      ::fchmod(fd, t.mode);
      if (root)
        (void)!::fchown(fd, t.uid, t.gid);
      else if (t.exists)
        (void)!::fchown(fd, static_cast<uid_t>(-1), t.gid);  // keeps the group where we are a member
      if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error("cannot flush to disk (" + reason(err) + ")");
      }
      if (::close(fd) != 0) throw Error("cannot flush to disk (" + reason(errno) + ")");
    } catch (const Error& e) {
      drop_temps();
      throw Error(t.path + ": " + e.what() + "; nothing was written (" + join(all_files) + " left as they were)");
    }
  }

  // 2. The renames, all or none, under the folders' locks, with the termination signals held off.
  std::vector<std::string> waited_for;
  std::vector<bool> changed(targets_.size(), false);
  {
    std::lock_guard lock(g_commit_mutex);
    FolderLocks folder_locks;
    {
      std::vector<std::string> dirs;
      for (size_t i : files) dirs.push_back(dir_of(targets_[i].real));
      try {
        waited_for = folder_locks.take(dirs, lock_wait_);
      } catch (const Error& e) {
        drop_temps();
        throw Error(std::string(e.what()) + "; nothing was written (" + join(all_files) + " left as they were)");
      }
    }
    // Another process's commit since add(): this set replaces it whole, and says so.
    for (size_t i : files) {
      const Target& t = targets_[i];
      struct stat st {};
      const bool now = ::lstat(t.real.c_str(), &st) == 0;
      changed[i] =
          now != t.exists || (now && (static_cast<uint64_t>(st.st_ino) != t.ino || mtime_ns_of(st) != t.mtime_ns));
    }
    SignalHold hold;
    struct Done {
      size_t index;
      std::string backup;  // the previous file, linked aside; empty when there was none
    };
    std::vector<Done> done;
    auto roll_back = [&](const std::string& failure) {
      std::vector<std::string> unknown;
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        const Target& t = targets_[it->index];
        const bool ok =
            it->backup.empty() ? ::unlink(t.real.c_str()) == 0 : ::rename(it->backup.c_str(), t.real.c_str()) == 0;
        if (!ok) unknown.push_back(t.path + (it->backup.empty() ? "" : " (previous contents in " + it->backup + ")"));
      }
      drop_temps();
      std::string msg = failure + "; nothing was written (" + join(all_files) + " left as they were)";
      if (!unknown.empty())
        msg = failure + "; could not restore " + join(unknown) + "; the others were left as they were";
      throw Error(msg);
    };
    for (size_t k = 0; k < files.size(); ++k) {
      Target& t = targets_[files[k]];
      Done d{files[k], {}};
      if (t.exists) {
        // Keep the old file under a second name until every rename has succeeded.
        for (int attempt = 0; attempt < 8 && d.backup.empty(); ++attempt) {
          std::string b = fresh_name(t.real, "mnv2old");
          if (::link(t.real.c_str(), b.c_str()) == 0)
            d.backup = b;
          else if (errno != EEXIST)
            break;  // no hard links here (some file systems): rename aside instead
        }
        if (d.backup.empty()) {
          std::string b = fresh_name(t.real, "mnv2old");
          if (::rename(t.real.c_str(), b.c_str()) == 0)
            d.backup = b;
          else if (errno != ENOENT)
            roll_back(t.path + ": cannot keep the previous file aside (" + reason(errno) + ")");
        }
      }
      if (::rename(t.temp.c_str(), t.real.c_str()) != 0) {
        const int err = errno;
        if (!d.backup.empty() && ::access(t.real.c_str(), F_OK) != 0)
          ::rename(d.backup.c_str(), t.real.c_str());
        else if (!d.backup.empty())
          ::unlink(d.backup.c_str());
        roll_back(t.path + ": cannot replace (" + reason(err) + ")");
      }
      t.temp.clear();
      done.push_back(d);
      if (rename_observer_) rename_observer_(k);
    }
    std::vector<std::string> folders;
    for (size_t i : files) folders.push_back(dir_of(targets_[i].real));
    std::sort(folders.begin(), folders.end());
    folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
    for (const auto& f : folders) fsync_folder(f);
    for (const Done& d : done)
      if (!d.backup.empty()) ::unlink(d.backup.c_str());
  }  // a signal held during the renames is delivered here
  for (size_t i : files) {
    const Target& t = targets_[i];
    std::string line = "wrote " + t.path;
    if (t.linked) line += " (through the symbolic link: " + t.real + ")";
    if (changed[i])
      line += " (another process wrote it while this command ran: this set replaced that one)";
    else if (!waited_for.empty())
      line += " (after waiting for another process writing into " + dir_of(t.real) + ")";
    if (t.links > 1)
      line += " (it had " + std::to_string(t.links) +
              " hard links: this name has the new contents, the other names keep the previous ones)";
    lines.push_back(line);
  }

  // 3. Streams, after the files are committed.
  IgnoreSigpipe no_sigpipe;
  for (size_t i : streams) {
    const Target& t = targets_[i];
    int fd = -1;
    try {
      fd = open_stream(t, fifo_wait_);
      write_all(fd, t.bytes);
      if (t.fd < 0) ::close(fd);
    } catch (const Error& e) {
      if (fd >= 0 && t.fd < 0) ::close(fd);
      throw Error(t.path + ": " + e.what() +
                  (files.empty() ? std::string() : "; written before it: " + join(all_files)));
    }
    lines.push_back("wrote " + (t.path == "-" ? std::string("standard output") : t.path));
  }
  return lines;
}

void write_output_file(const std::string& path, std::string_view bytes,
                       const std::vector<std::pair<std::string, std::string>>& inputs) {
  OutputSet set;
  try {
    set.add("", path);
    for (const auto& [label, input] : inputs) set.add_input(label, input);
  } catch (const UsageError& e) {
    throw Error(e.what());  // a file the program chose (a cache, an export) is not a usage mistake
  }
  set.put("", std::string(bytes));
  set.commit();
}

int remove_stale_temporaries(const std::string& folder) {
  DIR* d = ::opendir(folder.c_str());
  if (!d) return 0;
  int removed = 0;
  const auto now = std::chrono::system_clock::now();
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!name.starts_with('.')) continue;
    size_t at = std::string::npos;
    for (const char* tag : {".mnv2tmp-", ".mnv2old-"})
      if (size_t p = name.rfind(tag); p != std::string::npos && p > 0) at = p + 9;
    if (at == std::string::npos) continue;
    const size_t dash = name.find('-', at);
    if (dash == std::string::npos || dash == at || dash - at > 9 || name.size() != dash + 7) continue;
    const std::string pid_text = name.substr(at, dash - at);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(pid_text.c_str()));
    if (pid == ::getpid() || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask about)
    const std::string path = folder + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const auto mtime = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (now - mtime < kStaleAge) continue;
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace mnv2
