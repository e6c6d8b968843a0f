// The kernel lab's compile cache (lab_cache.h).
#include "studies/lab_cache.h"

#include <algorithm>

#include "mnv2/error.h"
#include "util/sha256.h"

namespace mnv2::lab_cache {

namespace {

// A CUBIN of the lab's slots is some hundred KiB; 256 MiB is far beyond one.
constexpr InputBudget kCubin{"cached CUBIN", 256 * inputs::kMiB};
constexpr InputBudget kText{"lab cache entry", 16 * inputs::kMiB};

bool is_key(const std::string& key) {
  return key.size() == 64 &&
         std::all_of(key.begin(), key.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::optional<Entry> find(const PrivateCache& cache, const std::string& key) {
  if (!cache.usable() || !is_key(key)) return std::nullopt;
  try {
    const std::optional<std::string> cubin = cache.read(key + ".cubin", kCubin);
    const std::optional<std::string> hash = cache.read(key + ".sha256", kText);
    if (!cubin || !hash || cubin->empty() || *hash != sha256_hex(*cubin) + "\n") return std::nullopt;
    Entry e;
    e.cubin_path = cache.file(key + ".cubin");
    e.log = cache.read(key + ".log", kText).value_or("");
    return e;
  } catch (const Error&) {  // a link, a FIFO, over its budget: not an entry
    return std::nullopt;
  }
}

Entry store(const PrivateCache& cache, const std::string& key, const std::string& cubin, const std::string& log) {
  if (!is_key(key)) throw Error("not a lab cache key: '" + key + "'");
  cache.write(key + ".log", log);
  cache.write(key + ".sha256", sha256_hex(cubin) + "\n");
  cache.write(key + ".cubin", cubin);
  return Entry{cache.file(key + ".cubin"), log};
}

}  // namespace mnv2::lab_cache
