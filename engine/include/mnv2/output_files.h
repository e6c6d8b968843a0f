// Every file mnv2 writes (reports, traces, tensors, the roofline cache, the app's exports) goes through
// OutputSet: one mechanism, so a new kind of target is handled the same way everywhere.
//
// What a target is decides how it is written:
//   regular file (new or existing)  written to a temporary beside it, fsync'ed, renamed over it, and the
//                                   folder fsync'ed. An existing file keeps its mode (and its owner and
//                                   group when running as root). A read-only file is refused.
//   hard-linked regular file        replaced like any regular file: the name given gets the new contents, the
//                                   file's other names keep the old ones (writing in place would give up the
//                                   all-or-nothing guarantee below). The result says so.
//   symbolic link                   followed: its final target is written as above and the link is kept. A
//                                   link loop or a link to a missing file is refused.
//   "-", a FIFO, a character or     streamed: opened and written directly, never replaced. "-", /dev/stdout,
//   block device, /dev/fd/N,        /dev/fd/N and /proc/self/fd/N write to this process's own descriptor, so
//   /proc/self/fd/N                 `--json /dev/stdout > out.json` does not clobber out.json. A FIFO with no
//                                   reader is waited for at most kFifoWait, then refused.
//   folder, socket, missing folder  refused when the path is added, before any work is done.
//   one of the command's inputs     refused (whichever of add() and add_input() comes second): the same file
//                                   (device and inode, through links and hard links) as a declared input, or
//                                   an existing file inside a declared input folder. Writing it would
//                                   replace what the command reads.
//
// A set is a transaction for its regular files: every path is checked when it is added (parent folder
// exists and is writable, target not a folder, paths distinct, also through links); commit() writes every
// regular file to a temporary first and renames only when all were written, with SIGINT, SIGTERM and SIGHUP
// held off during the renames (a signal that arrives then is delivered right after them), and the files
// already renamed are rolled back if a later rename fails. Streams are written after the files are
// committed and are outside the guarantee. After SIGKILL or a power loss during the renames each file is
// whole (old or new) and at most temporaries remain: the next set written into that folder removes the
// stale temporaries of this naming pattern (".NAME.mnv2tmp-PID-XXXXXX", ".NAME.mnv2old-PID-XXXXXX") whose
// process is gone. Errors name what was written and what was not.
//
// Two processes writing the same targets: the renames of a commit run under an exclusive lock (flock) on
// each target folder, taken in the order of the folders' paths, so a set written by two processes at once
// ends as one process's whole set. A commit that had to wait for another's, or that finds a target changed
// since it was added, says so in its "wrote" lines; a lock not given within kLockWait fails the commit
// with nothing written.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mnv2 {

inline constexpr std::chrono::seconds kFifoWait{30};
inline constexpr std::chrono::seconds kLockWait{60};  // another process committing into the same folder

class OutputSet {
 public:
  OutputSet();
  ~OutputSet();  // removes any temporary left by a commit that did not happen
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Checks `path` now and reserves it under `label` (an option such as "--csv", or a description); throws
  // UsageError naming the label and the path if it cannot be written, or is another target of the set.
  void add(const std::string& label, const std::string& path);
  // Declares a file (or folder) the command reads under `label` ("--model", "--image"): a target that is the
  // same file, or an existing file inside the folder, is refused with a UsageError naming both. A path that
  // cannot be examined is left to the reader to report.
  void add_input(const std::string& label, const std::string& path);
  bool has(const std::string& label) const;
  const std::string& path(const std::string& label) const;
  // The contents of a reserved target; a label never given contents is not written.
  void put(const std::string& label, std::string bytes);
  bool empty() const { return targets_.empty(); }
  // True when a target writes to this process's standard output ("-", /dev/stdout, ...).
  bool writes_stdout() const;
  // Targets on standard output write to `fd` instead (a copy of it, when the caller moved descriptor 1).
  void move_stdout(int fd);

  // Writes the set (see above); returns one line per target written ("wrote PATH", with notes). Throws
  // mnv2::Error naming what was and was not written.
  std::vector<std::string> commit();

  // How long a FIFO without a reader is waited for (kFifoWait unless set).
  void set_fifo_wait(std::chrono::milliseconds wait) { fifo_wait_ = wait; }
  // How long a commit waits for another process's commit into the same folder (kLockWait unless set).
  void set_lock_wait(std::chrono::milliseconds wait) { lock_wait_ = wait; }
  // For tests: called after the i-th rename of a commit (0-based), inside the window where signals are held.
  void set_rename_observer(std::function<void(size_t)> observer) { rename_observer_ = std::move(observer); }

  enum class Kind { file, stream };
  struct Target {
    std::string label, path;  // as given
    Kind kind = Kind::file;
    std::string real;           // file: the resolved path written (links followed); stream: the path opened
    int fd = -1;                // stream: this process's descriptor to write to, or -1 to open `real`
    bool exists = false;        // file: there is a file to replace
    bool linked = false;        // reached through symbolic links
    uint32_t mode = 0;          // file: the mode the written file gets; stream: the file's type and mode
    uint32_t uid = 0, gid = 0;  // file: the owner to keep (root only)
    uint64_t links = 1;         // file: hard links of the file replaced
    uint64_t dev = 0, ino = 0;  // the target's identity when it exists (distinctness)
    int64_t mtime_ns = 0;       // file: when the target was last changed, as add() saw it (0: absent)
    bool has_bytes = false;
    std::string bytes;
    std::string temp;  // file: the temporary written during commit
  };

 private:
  struct Input {
    std::string label, path;
    uint64_t dev = 0, ino = 0;
    bool folder = false;
  };
  void check_against(const Target& t, const Input& in) const;

  std::vector<Target> targets_;
  std::vector<Input> inputs_;
  std::function<void(size_t)> rename_observer_;
  std::chrono::milliseconds fifo_wait_ = kFifoWait;
  std::chrono::milliseconds lock_wait_ = kLockWait;
};

// One file (or stream) on its own: an OutputSet of one target. Throws Error naming the path. `inputs` are
// (label, path) pairs of files the caller read (add_input): the path being one of them is refused.
void write_output_file(const std::string& path, std::string_view bytes,
                       const std::vector<std::pair<std::string, std::string>>& inputs = {});

// Removes, from `folder`, temporaries of OutputSet's naming pattern owned by this user whose process is gone;
// returns how many. add() calls it for each folder it will write into.
int remove_stale_temporaries(const std::string& folder);

}  // namespace mnv2
