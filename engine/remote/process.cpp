// Child processes and line reading for the agent protocol (process.h).
#include "remote/process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "mnv2/error.h"
#include "mnv2/remote.h"

extern char** environ;

namespace mnv2::remote {

Child::Child(Child&& o) noexcept { *this = std::move(o); }

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    std::swap(pid, o.pid);
    std::swap(in, o.in);
    std::swap(out, o.out);
    std::swap(err, o.err);
    std::swap(group_, o.group_);
    std::swap(status_, o.status_);
  }
  return *this;
}

Child::~Child() {
  close_in();
  if (pid > 0 && !status_) terminate(std::chrono::milliseconds(500));
  if (out >= 0) ::close(out);
  if (err >= 0) ::close(err);
}

void Child::close_in() {
  if (in >= 0) ::close(in);
  in = -1;
}

namespace {

void pipe_or_throw(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
}

}  // namespace

Child Child::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw Error("spawn: no program");
  int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, pexec[2] = {-1, -1};
  if (options.pipe_stdin) pipe_or_throw(pin);
  if (options.pipe_stdout) pipe_or_throw(pout);
  if (options.pipe_stderr) pipe_or_throw(perr);
  pipe_or_throw(pexec);  // closed by a successful exec; carries errno when it fails
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& o : options.env)
      replaced = replaced || entry.compare(0, o.find('=') + 1, o, 0, o.find('=') + 1) == 0;
    if (!replaced) env.push_back(entry);
  }
  for (const std::string& o : options.env) env.push_back(o);
  std::vector<char*> cenv;
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (options.new_process_group) ::setpgid(0, 0);
    // A pipe whose reader went away is an EPIPE for the child, as for any program.
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (options.pipe_stdin) {
      ::dup2(pin[0], 0);
    } else if (options.null_stdin) {
      const int null_fd = ::open("/dev/null", O_RDONLY);
      if (null_fd >= 0) ::dup2(null_fd, 0);
    }
    if (options.pipe_stdout) ::dup2(pout[1], 1);
    if (options.pipe_stderr) ::dup2(perr[1], 2);
    if (options.extra_fd >= 0) {
      if (options.extra_fd == 3) {
        ::fcntl(3, F_SETFD, 0);
      } else {
        ::dup2(options.extra_fd, 3);
      }
    }
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) {
      const int e = errno;
      (void)!::write(pexec[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    const int e = errno;
    (void)!::write(pexec[1], &e, sizeof e);
    ::_exit(127);
  }
  Child c;
  c.pid = pid;
  c.group_ = options.new_process_group;
  if (options.new_process_group) ::setpgid(pid, pid);  // both sides: no race with an early kill
  if (options.pipe_stdin) {
    ::close(pin[0]);
    c.in = pin[1];
  }
  if (options.pipe_stdout) {
    ::close(pout[1]);
    c.out = pout[0];
  }
  if (options.pipe_stderr) {
    ::close(perr[1]);
    c.err = perr[0];
  }
  ::close(pexec[1]);
  int child_errno = 0;
  ssize_t got = 0;
  do got = ::read(pexec[0], &child_errno, sizeof child_errno);
  while (got < 0 && errno == EINTR);
  ::close(pexec[0]);
  if (got == sizeof child_errno) {
    c.wait_until(Clock::now() + std::chrono::seconds(5));
    throw Error("cannot start " + argv[0] + ": " + std::strerror(child_errno));
  }
  return c;
}

std::optional<int> Child::wait_until(Clock::time_point deadline) {
  if (status_) return status_;
  if (pid <= 0) return std::nullopt;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      status_ = st;
      return status_;
    }
    if (r < 0 && errno != EINTR) {
      status_ = 0;
      return status_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int Child::terminate(std::chrono::milliseconds grace) {
  if (status_) return *status_;
  if (pid <= 0) return 0;
  const pid_t target = group_ ? -pid : pid;
  ::kill(target, SIGTERM);
  if (auto st = wait_until(Clock::now() + grace)) {
    ::kill(target, SIGKILL);  // what the child left in its group
    return *st;
  }
  ::kill(target, SIGKILL);
  return wait_until(Clock::now() + std::chrono::seconds(10)).value_or(0);
}

std::optional<std::string> LineReader::take_line() {
  const size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  return line;
}

bool LineReader::fill() {
  if (eof_) return false;
  char chunk[65536];
  ssize_t got = 0;
  do got = ::read(fd_, chunk, sizeof chunk);
  while (got < 0 && errno == EINTR);
  if (got <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(got));
  if (buffer_.size() > kMaxLine && buffer_.find('\n') == std::string::npos)
    throw Error("a line of more than " + std::to_string(kMaxLine >> 20) + " MiB arrived: not the agent protocol");
  return true;
}

std::string LineReader::rest() {
  std::string r;
  r.swap(buffer_);
  return r;
}

int wait_readable(const std::vector<int>& fds, Clock::time_point deadline, std::chrono::milliseconds tick) {
  std::vector<pollfd> p;
  for (int fd : fds) p.push_back(pollfd{fd, POLLIN, 0});
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  const int ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), tick.count())));
  const int n = ::poll(p.data(), p.size(), ms);
  if (n <= 0) return -1;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) return static_cast<int>(i);
  return -1;
}

bool write_all(int fd, std::string_view bytes) {
  // A reader that is gone (ssh ended, the client went away) is EPIPE here, not a SIGPIPE that kills the program:
  // the signal is blocked for this thread while it writes, and one it raised is taken before unblocking.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool ok = true;
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      if (errno == EPIPE) {
        const timespec zero{0, 0};
        while (::sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
        }
      }
      break;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

Captured run_captured(const std::vector<std::string>& argv, int timeout_s, size_t max_bytes) {
  Captured r;
  SpawnOptions o;
  o.pipe_stdin = false;
  o.null_stdin = true;
  Child c;
  try {
    c = Child::spawn(argv, o);
  } catch (const Error& e) {
    r.err = e.what();
    return r;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    if (Clock::now() >= deadline) {
      c.terminate(std::chrono::milliseconds(500));
      r.code = 124;
      return r;
    }
    const int i = wait_readable({out_open ? c.out : -1, err_open ? c.err : -1}, deadline);
    if (i < 0) continue;
    char chunk[16384];
    const int fd = i == 0 ? c.out : c.err;
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      (i == 0 ? out_open : err_open) = false;
      continue;
    }
    std::string& into = i == 0 ? r.out : r.err;
    if (into.size() < max_bytes) into.append(chunk, std::min(static_cast<size_t>(got), max_bytes - into.size()));
  }
  const auto st = c.wait_until(deadline);
  if (!st) {
    c.terminate(std::chrono::milliseconds(500));
    r.code = 124;
    return r;
  }
  r.code = WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
  return r;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return "signal " + std::to_string(WTERMSIG(status)) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace mnv2::remote
