// The kernel lab's compile cache: one CUBIN per key (the SHA-256 of source, options, NVRTC version and slot
// headers) in the private cache folder (mnv2/private_cache.h), with NVRTC's log and the CUBIN's own SHA-256
// beside it. An entry is a hit only when the CUBIN's bytes hash to what was stored with them: a CUBIN put there
// by anything but lab_compile (planted, truncated) is a miss and compiled again. Internal to engine/studies.
#pragma once

#include <optional>
#include <string>

#include "mnv2/private_cache.h"

namespace mnv2::lab_cache {

struct Entry {
  std::string cubin_path;  // the cached module (the worker loads it)
  std::string log;         // NVRTC's log when it was compiled
};

// The entry of `key`, or nullopt (none, or one that does not check out: never a throw).
std::optional<Entry> find(const PrivateCache& cache, const std::string& key);
// Stores the entry (log, then the hash, then the CUBIN last: its presence with a matching hash is a complete
// entry). Throws Error naming the file.
Entry store(const PrivateCache& cache, const std::string& key, const std::string& cubin, const std::string& log);

}  // namespace mnv2::lab_cache
