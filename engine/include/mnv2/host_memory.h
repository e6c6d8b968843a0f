// The host memory this process may still take: the one figure every budget that is checked before the work
// (a backend's buffers, eval's loader queue, classify's batches) is checked against.
#pragma once

#include <cstdint>

namespace mnv2 {

// Bytes this process can still allocate without swapping or being killed: MemAvailable from /proc/meminfo, or less
// where a cgroup (container) limit or an address-space limit (ulimit -v, less what is already mapped) leaves less.
// -1 when none can be read.
int64_t host_memory_available();

}  // namespace mnv2
