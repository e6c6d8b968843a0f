// A child process with pipes, and the line-at-a-time reading both ends of the agent protocol need: every read
// has a deadline, every line a size bound. Internal to engine/remote.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mnv2::remote {

using Clock = std::chrono::steady_clock;

struct SpawnOptions {
  bool pipe_stdin = true, pipe_stdout = true, pipe_stderr = true;
  bool null_stdin = false;        // not piped: /dev/null (never the parent's input) instead of inheriting it
  bool new_process_group = true;  // kill(-pid) reaches everything the child starts
  int extra_fd = -1;              // a pipe's write end the child gets as descriptor 3 (-1: none)
  std::string cwd;                // "" = ours
  std::vector<std::string> env;   // NAME=VALUE set in the child on top of ours
};

// A started program. Its descriptors are ours to read and write (-1 where not piped); the destructor closes
// them, kills the group if the child still runs and reaps it.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  ~Child();

  // Starts argv[0] (looked up on PATH when it has no '/'); throws Error when the program cannot be started.
  static Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

  pid_t pid = -1;
  int in = -1, out = -1, err = -1;

  void close_in();
  // SIGTERM to the group, then SIGKILL after `grace`; reaps. Returns the wait status.
  int terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  // Waits for the child at most until `deadline`: its status, or nullopt when it still runs.
  std::optional<int> wait_until(Clock::time_point deadline);
  std::optional<int> status() const { return status_; }

 private:
  bool group_ = true;
  std::optional<int> status_;
};

// Bytes arriving on a descriptor, cut into lines of at most kMaxLine bytes (mnv2/remote.h).
class LineReader {
 public:
  explicit LineReader(int fd = -1) : fd_(fd) {}
  int fd() const { return fd_; }
  bool eof() const { return eof_ && buffer_.empty(); }
  // A complete line (without its newline) if one is buffered.
  std::optional<std::string> take_line();
  // Reads what is there (one read); false at end of input. Throws Error when a line grows past the bound.
  bool fill();
  // What is left when the input ended without a newline.
  std::string rest();

 private:
  int fd_;
  bool eof_ = false;
  std::string buffer_;
};

// Waits until one of `fds` is readable or `deadline` passes (at most `tick`): the index readable, or -1.
int wait_readable(const std::vector<int>& fds, Clock::time_point deadline,
                  std::chrono::milliseconds tick = std::chrono::milliseconds(200));

// Writes all of `bytes` (EINTR and short writes handled); false when the reader is gone (EPIPE).
bool write_all(int fd, std::string_view bytes);

// Runs argv to its end within `timeout_s`, its output captured (at most `max_bytes` each): for the agent's small
// helpers (squeue, scancel, the study's `info`). Returns the exit status (-1 when it could not start, 124 when it
// ran out of time and was killed).
struct Captured {
  int code = -1;
  std::string out, err;
};
Captured run_captured(const std::vector<std::string>& argv, int timeout_s, size_t max_bytes = size_t{1} << 20);

// "signal 9 (SIGKILL)" or "exit status 3" of a wait status.
std::string describe_status(int status);

}  // namespace mnv2::remote
