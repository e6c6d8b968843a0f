// Finding the model file: --model, then MNV2_MODEL, then a weights/ folder near the program.
#include "mnv2/model_lookup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "mnv2/error.h"
#include "mnv2/model.h"

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

}  // namespace

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
  if (const char* env = std::getenv("MNV2_MODEL"); env && *env) {
    if (!fs::exists(env, ec)) throw Error(std::string(env) + ": model file not found (environment variable MNV2_MODEL)");
    loc.path = env;
    loc.how = "MNV2_MODEL";
    return loc;
  }
  // Built tree: build/app/mnv2 -> build/weights, <source>/weights; installed: bin/ -> share/mnv2-profiler/weights.
  const fs::path base(exe_dir);
  for (const fs::path& dir : {base / "weights", base / ".." / "weights", base / ".." / ".." / "weights",
                              base / ".." / "share" / "mnv2-profiler" / "weights"}) {
    const fs::path clean = dir.lexically_normal();
    loc.searched.push_back(clean.string());
    if (std::string found = find_in_folder(clean); !found.empty()) {
      loc.path = found;
      loc.how = "weights folder " + clean.string();
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
