// The engine's cache folder (roofline ceilings, cuDNN plans, the kernel lab's CUBINs), private to this user or
// not used at all. It is opened without following a link and checked on every use: a folder (not a link to
// one), owned by this user (the effective uid), with no permission for group or others (0700). A folder that
// is missing is created so (with any missing parents, 0700 too). Its entries are opened beneath its
// descriptor with no link followed (mnv2/contained_open.h), within their budgets, and written atomically
// (mnv2/output_files.h); writers of one entry take its lock (flock on NAME.lock in the folder) to read, merge
// and write, so concurrent writers lose nothing.
#pragma once

#include <optional>
#include <string>

#include "mnv2/input_files.h"

namespace mnv2 {

class PrivateCache {
 public:
  // The folder cache_dir() names (mnv2/model_lookup.h); unusable (with a note) when it names none.
  static PrivateCache open_default(bool create = true);
  // `path` (created 0700 when missing and `create`). Unusable, with a one-line note saying why, when it is not
  // private; never throws.
  static PrivateCache open(const std::string& path, bool create = true);

  PrivateCache() = default;
  ~PrivateCache();
  PrivateCache(PrivateCache&& other) noexcept;
  PrivateCache& operator=(PrivateCache&& other) noexcept;
  PrivateCache(const PrivateCache&) = delete;
  PrivateCache& operator=(const PrivateCache&) = delete;

  bool usable() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Why the cache is not used ("" when it is): "the cache folder /x is open to other users (mode 0777); a
  // cache must be private (0700): not used".
  const std::string& note() const { return note_; }
  std::string file(const std::string& name) const;  // path()/name

  // The entry `name` (a plain name in the folder), or nullopt when there is none. Throws Error naming the file
  // when it is a symbolic link, not a regular file, over the budget, or unreadable.
  std::optional<std::string> read(const std::string& name, const InputBudget& budget) const;
  // Writes `name` atomically, after checking again that the folder is the one opened and still private and that
  // the entry is not a link or anything but a regular file. Throws Error naming the file.
  void write(const std::string& name, const std::string& bytes) const;

  // An exclusive lock on the entry `name` (flock on NAME.lock in the folder) for as long as it lives: writers
  // read, merge and write under it. Throws Error when the lock file cannot be opened.
  class Lock {
   public:
    explicit Lock(int fd) : fd_(fd) {}
    // An exclusive lock for a cache file the user named outside the cache folder (the cudnn-plan-cache option):
    // flock on ".NAME.lock" beside it (not on the folder itself: OutputSet's commit flocks the folders it renames
    // into, and a second descriptor of this process on the same folder would wait for the first).
    static Lock beside(const std::string& file);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_;
  };
  Lock lock(const std::string& name) const;

 private:
  void check_again() const;

  int fd_ = -1;
  std::string path_;
  std::string note_;
};

// Why the folder with this status cannot be a private cache ("" when it can): not a folder, owned by another
// user, or open to group or others. `what` names it ("the cache folder /x").
std::string why_not_private(const std::string& what, unsigned mode, unsigned owner);

}  // namespace mnv2
