// The cudnn backend's plan cache file (plan_cache.h).
#include "backends/cudnn/plan_cache.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "mnv2/error.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/model_lookup.h"
#include "mnv2/options.h"
#include "mnv2/output_files.h"
#include "mnv2/private_cache.h"

namespace mnv2::cudnn_backend {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "mnv2-cudnn-plan-cache";
constexpr int64_t kVersion = 1;
// A few hundred entries of about 200 bytes each: 4 MiB is far beyond any real cache.
constexpr InputBudget kBudget{"cudnn plan cache", 4 * inputs::kMiB, 64 * inputs::kMiB, 4 * inputs::kKiB};
constexpr int64_t kMaxKnobs = 64;

}  // namespace

PlanCache PlanCache::parse(std::string_view text) {
  const json::Json doc = json::parse(text, kBudget);
  if (json::string_at(doc, "format") != kFormat) throw Error("not a cudnn plan cache (format)");
  if (json::int_at(doc, "version") != kVersion)
    throw Error("cache version " + std::to_string(json::int_at(doc, "version")) + ", this build reads " +
                std::to_string(kVersion));
  PlanCache cache;
  const json::Json& entries = json::at(doc, "entries");
  json::as_object(entries);
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    const json::Json& e = it.value();
    CachedPlan p;
    p.engine = json::int_at(e, "engine");
    if (p.engine < 0) throw Error("'" + it.key() + "': negative engine index");
    const json::Json& knobs = json::array_at(e, "knobs");
    if (static_cast<int64_t>(knobs.size()) > kMaxKnobs) throw Error("'" + it.key() + "': too many knobs");
    for (const json::Json& k : knobs) {
      const json::Json& pair = json::as_array(k);
      if (pair.size() != 2) throw Error("'" + it.key() + "': a knob is not a [type, value] pair");
      p.knobs.emplace_back(json::as_int(pair[0]), json::as_int(pair[1]));
    }
    p.workspace_bytes = json::int_at(e, "workspace_bytes");
    if (p.workspace_bytes < 0) throw Error("'" + it.key() + "': negative workspace");
    if (const json::Json* t = json::find(e, "time_ms")) p.time_ms = t->is_null() ? -1 : json::as_number(*t);
    cache.entries_[it.key()] = p;
  }
  return cache;
}

std::string PlanCache::dump() const {
  json::Json entries = json::Json::object();
  for (const auto& [key, p] : entries_) {
    json::Json knobs = json::Json::array();
    for (const auto& [type, value] : p.knobs) knobs.push_back(json::Json::array({type, value}));
    entries[key] = json::Json{
        {"engine", p.engine}, {"knobs", knobs}, {"workspace_bytes", p.workspace_bytes}, {"time_ms", p.time_ms}};
  }
  const json::Json doc{{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
  return json::dump(doc, 1) + "\n";
}

namespace {

constexpr const char* kCacheName = "cudnn_plans.json";

// The default file (in the private cache folder), "" when there is no cache folder.
std::string default_file() {
  const std::string dir = cache_dir();
  return dir.empty() ? std::string() : (fs::path(dir) / kCacheName).string();
}

// The file's text, or nullopt when there is none: the default file through the private cache (no link
// followed, the folder checked), a file the user named as it is named. Throws Error naming the file.
std::optional<std::string> read_text(const std::string& path, const PrivateCache* cache) {
  if (cache != nullptr) {
    if (!cache->usable()) throw Error(cache->note());
    return cache->read(kCacheName, kBudget);
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return read_input_file(path, kBudget);
}

PlanCache load_from(const std::string& path, const PrivateCache* cache, std::string* warning) {
  try {
    const std::optional<std::string> text = read_text(path, cache);
    return text ? PlanCache::parse(*text) : PlanCache();
  } catch (const std::exception& e) {
    if (warning) *warning = path + ": ignored (" + e.what() + ")";
    return {};
  }
}

}  // namespace

PlanCache PlanCache::load(const std::string& path, std::string* warning) {
  if (path.empty()) return {};
  if (path == default_file()) {
    const PrivateCache cache = PrivateCache::open(fs::path(path).parent_path().string(), false);
    // A folder not made yet is an empty cache; one that is not private is said.
    if (!cache.usable() && !fs::exists(fs::path(path).parent_path())) return {};
    return load_from(path, &cache, warning);
  }
  return load_from(path, nullptr, warning);
}

void PlanCache::save(const std::string& path) const {
  // Read, merge and write under the file's lock: the entries other processes stored meanwhile are kept.
  if (path == default_file()) {
    const PrivateCache cache = PrivateCache::open(fs::path(path).parent_path().string(), true);
    if (!cache.usable()) throw Error(cache.note());
    const PrivateCache::Lock lock = cache.lock(kCacheName);
    PlanCache merged = load_from(path, &cache, nullptr);
    for (const auto& [key, p] : entries_) merged.entries_[key] = p;
    cache.write(kCacheName, merged.dump());
    return;
  }
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  const PrivateCache::Lock lock = PrivateCache::Lock::beside(path);
  PlanCache merged = load_from(path, nullptr, nullptr);
  for (const auto& [key, p] : entries_) merged.entries_[key] = p;
  write_output_file(path, merged.dump());
}

const CachedPlan* PlanCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

namespace {
std::mutex process_mutex;
std::map<std::string, CachedPlan>& process_plans() {
  static std::map<std::string, CachedPlan> plans;
  return plans;
}
}  // namespace

std::optional<CachedPlan> find_process_plan(const std::string& key) {
  std::lock_guard<std::mutex> lock(process_mutex);
  auto it = process_plans().find(key);
  if (it == process_plans().end()) return std::nullopt;
  return it->second;
}

void put_process_plan(const std::string& key, const CachedPlan& plan) {
  std::lock_guard<std::mutex> lock(process_mutex);
  process_plans()[key] = plan;
}

void clear_process_plans() {
  std::lock_guard<std::mutex> lock(process_mutex);
  process_plans().clear();
}

std::string plan_cache_file() {
  // The front end's cudnn-plan-cache option ($MNV2_CUDNN_PLAN_CACHE, --cudnn-plan-cache): another file, or off.
  if (const std::string& f = process_settings().cudnn_plan_cache; !f.empty()) return f == "off" ? std::string() : f;
  return default_file();
}

}  // namespace mnv2::cudnn_backend
