// Finding the model file: --model, then MNV2_MODEL, then a weights/ folder near the program, then the
// user's and the system's XDG data folders (mnv2-profiler/ in each).
#include "mnv2/model_lookup.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/options.h"

namespace mnv2 {

namespace fs = std::filesystem;

namespace {

// The preferred file name in a weights folder; any other single .onnx file is taken too.
constexpr const char* kDefaultModelName = "mobilenet_v2_1.0_224.onnx";

std::string find_in_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  if (fs::is_regular_file(dir / kDefaultModelName, ec)) return (dir / kDefaultModelName).string();
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".onnx" && entry.is_regular_file(ec)) found.push_back(entry.path().string());
  std::sort(found.begin(), found.end());
  return found.empty() ? std::string() : found.front();
}

// The XDG base directory specification's data folders, most important first: $XDG_DATA_HOME (default
// ~/.local/share), then each of $XDG_DATA_DIRS (default /usr/local/share:/usr/share). Relative entries are
// ignored, as the specification says.
std::vector<fs::path> xdg_data_dirs() {
  const ProcessSettings& env = process_settings();
  std::vector<fs::path> dirs;
  if (!env.xdg_data_home.empty() && fs::path(env.xdg_data_home).is_absolute()) {
    dirs.emplace_back(env.xdg_data_home);
  } else if (!env.home.empty() && fs::path(env.home).is_absolute()) {
    dirs.push_back(fs::path(env.home) / ".local" / "share");
  }
  const std::string list = !env.xdg_data_dirs.empty() ? env.xdg_data_dirs : "/usr/local/share:/usr/share";
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    const fs::path dir(list.substr(start, end - start));
    if (dir.is_absolute()) dirs.push_back(dir);
    start = end + 1;
  }
  return dirs;
}

}  // namespace

std::string cache_dir() {
  const ProcessSettings& env = process_settings();
  if (!env.cache_dir.empty()) return env.cache_dir;
  // A relative XDG_CACHE_HOME (or HOME) is ignored, as the XDG base directory specification says. There is no
  // fallback to a shared folder (/tmp): another user could plant entries there, or links that we would write
  // through. Without either, the cache is off (PrivateCache says so).
  if (!env.xdg_cache_home.empty() && fs::path(env.xdg_cache_home).is_absolute())
    return (fs::path(env.xdg_cache_home) / "mnv2-profiler").string();
  if (!env.home.empty() && fs::path(env.home).is_absolute())
    return (fs::path(env.home) / ".cache" / "mnv2-profiler").string();
  return {};
}

std::string executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

ModelLocation locate_model(const std::string& explicit_path, const std::string& exe_dir) {
  ModelLocation loc;
  std::error_code ec;
  if (!explicit_path.empty()) {
    if (!fs::exists(explicit_path, ec)) throw Error(explicit_path + ": model file not found (--model)");
    loc.path = explicit_path;
    loc.how = "--model";
    return loc;
  }
  if (const std::string& env = process_settings().model_env; !env.empty()) {  // the model option from $MNV2_MODEL
    if (!fs::exists(env, ec)) throw Error(env + ": model file not found (environment variable MNV2_MODEL)");
    loc.path = env;
    loc.how = "MNV2_MODEL";
    return loc;
  }
  // Built tree: build/app/mnv2 -> build/weights, <source>/weights; installed: bin/ -> share/mnv2-profiler/weights.
  const fs::path base(exe_dir);
  std::vector<std::pair<fs::path, std::string>> folders;  // folder, how it is described when found there
  for (const fs::path& dir : {base / "weights", base / ".." / "weights", base / ".." / ".." / "weights",
                              base / ".." / "share" / "mnv2-profiler" / "weights"})
    folders.emplace_back(dir, "weights folder ");
  // An installed package ships no weights: a user places a model in ~/.local/share/mnv2-profiler/.
  for (const fs::path& dir : xdg_data_dirs()) folders.emplace_back(dir / "mnv2-profiler", "data folder ");
  for (const auto& [dir, how] : folders) {
    const fs::path clean = dir.lexically_normal();
    loc.searched.push_back(clean.string());
    if (std::string found = find_in_folder(clean); !found.empty()) {
      loc.path = found;
      loc.how = how + clean.string();
      return loc;
    }
  }
  loc.how = "none";
  return loc;
}

Model load_located_model(const ModelLocation& location) {
  if (location.path.empty()) return builtin_mobilenet_v2();
  return load_onnx(location.path);
}

}  // namespace mnv2
