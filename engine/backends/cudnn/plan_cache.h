// The cudnn backend's persistent plan cache: which engine configuration (global engine index + knob choices)
// autotuning chose for each fused convolution problem, so the next prepare() rebuilds it without timing
// candidates again. One JSON file, keyed by cuDNN version, GPU (name, compute capability), problem and precision.
// Plain C++ (no CUDA): lives in the core library, so its reader is tested without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mnv2::cudnn_backend {

struct CachedPlan {
  int64_t engine = -1;                             // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  int64_t workspace_bytes = 0;
  double time_ms = -1;  // the tuning measurement, for the record
  bool operator==(const CachedPlan&) const = default;
};

class PlanCache {
 public:
  // The file's entries. A missing file is an empty cache; one that cannot be read, is larger than 4 MiB, is
  // not JSON or not this format is ignored: an empty cache, and *warning says why (never a throw).
  static PlanCache load(const std::string& path, std::string* warning);
  // The text of a cache file (throws Error on anything but a well-formed cache).
  static PlanCache parse(std::string_view text);
  std::string dump() const;
  // Merges this cache's entries into the file's current ones (those of another process kept) and writes the
  // result atomically (temporary + rename), all under the file's lock (flock): concurrent writers lose nothing.
  // The default file lives in the private cache folder (mnv2/private_cache.h: checked, no link followed); a
  // file the user named is taken as named, its lock a flock on its folder. Throws Error naming the path.
  void save(const std::string& path) const;

  const CachedPlan* find(const std::string& key) const;
  void put(const std::string& key, const CachedPlan& plan) { entries_[key] = plan; }
  void erase(const std::string& key) { entries_.erase(key); }
  size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, CachedPlan> entries_;
};

// The plans chosen in this process (every prepare() of it), by key: a problem met again is not tuned again.
std::optional<CachedPlan> find_process_plan(const std::string& key);
void put_process_plan(const std::string& key, const CachedPlan& plan);
void clear_process_plans();  // tests: the next prepare() reads the file again

// $MNV2_CUDNN_PLAN_CACHE if set (a file path; "off" disables the cache: returns ""), else cudnn_plans.json in
// the cache folder (cache_dir(): $MNV2_CACHE_DIR, $XDG_CACHE_HOME/mnv2-profiler, ~/.cache/mnv2-profiler), else
// "" (no cache folder).
std::string plan_cache_file();

}  // namespace mnv2::cudnn_backend
