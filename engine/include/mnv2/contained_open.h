// Opening a file beneath a folder we trust, as one operation: the name is resolved relative to the folder's
// open descriptor and can never lead out of it, whatever another process renames or links meanwhile. Used for
// every file named relative to such a folder: a model's external data, the caches.
//
// The kernel does it with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) (called through syscall(): glibc
// 2.36 has no wrapper), retried a bounded number of times on EAGAIN. Where openat2 is missing or filtered
// (ENOSYS, EPERM or EINVAL: old kernels, seccomp in some containers) the same rule is walked by hand, one
// component at a time from the folder's descriptor with openat(O_NOFOLLOW): each folder is held open while
// the next is opened below it, a relative symbolic link is read (readlinkat) and its parts walked the same
// way, and '..' pops a held folder (refused at the top). Both give the same answer for the same layout.
#pragma once

#include <cstdint>
#include <string>

namespace mnv2 {

// How symbolic links on the way are taken.
enum class ContainedLinks {
  beneath,  // followed while they stay beneath the folder (relative targets only; an absolute one is refused)
  refuse,   // none at all, in any component (caches: a planted link is never followed)
};

// Which mechanism resolves the name. `automatic` uses openat2 and falls back to the walk; `walk` forces the
// walk (tests of the fallback; never chosen from the environment).
enum class ContainedMethod { automatic, walk };

struct ContainedFile {
  int fd = -1;          // owned by the caller (close it); -1 when refused
  uint64_t size = 0;    // fstat's size of the opened file
  int error = 0;        // 0, or why it was refused, as an errno: ENOENT (missing), EXDEV (leads outside the folder),
                        // ELOOP (a link where none may be, or too many), ENOTDIR (a part is not a folder), EISDIR
                        // (a folder), ENODEV (a FIFO, device or socket), EINVAL (absolute, empty, ends in '/'), ...
  std::string why;      // a phrase for the caller's message: "leads outside the folder", "no such file", ...
  bool walked = false;  // resolved by the component walk (openat2 unavailable, or `walk` asked for)
  bool ok() const { return fd >= 0; }
};

// Opens `relative` for reading beneath the folder open as `dir_fd` (O_RDONLY | O_CLOEXEC | O_NOCTTY; a FIFO
// never blocks the open). Only a regular file is returned; a folder, FIFO, device or socket is refused.
// Absolute names, empty names and names ending in '/' are refused by their form. Never throws for a refusal.
ContainedFile open_beneath(int dir_fd, const std::string& relative, ContainedLinks links = ContainedLinks::beneath,
                           ContainedMethod method = ContainedMethod::automatic);

// Whether this process can use openat2 (false where the kernel lacks it or a filter refuses it): tests say
// which path they exercised.
bool openat2_available();

}  // namespace mnv2
