// The host memory this process may still take (mnv2/host_memory.h).
#include "mnv2/host_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

namespace mnv2 {

int64_t host_memory_available() {
  int64_t best = -1;
  auto consider = [&](int64_t bytes) {
    if (bytes >= 0 && (best < 0 || bytes < best)) best = bytes;
  };
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      consider(kib * 1024);
      break;
    }
  }
  // cgroup v2, then v1: the limit minus what is in use. "max" (no limit) reads as a failed number.
  for (const auto& [limit_file, usage_file] :
       {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    std::ifstream limit_in(limit_file), usage_in(usage_file);
    int64_t limit = 0, usage = 0;
    if (limit_in >> limit && usage_in >> usage && limit > 0 && limit < (int64_t{1} << 60))
      consider(std::max<int64_t>(0, limit - usage));
  }
  // An address-space limit (ulimit -v): the limit minus the address space already mapped (VmSize).
  if (rlimit as{}; ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmSize:", 0) != 0) continue;
      const int64_t mapped = std::stoll(line.substr(7)) * 1024;
      consider(std::max<int64_t>(0, static_cast<int64_t>(as.rlim_cur) - mapped));
      break;
    }
  }
  return best;
}

}  // namespace mnv2
