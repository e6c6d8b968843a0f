// Where the model comes from: --model FILE, else env MNV2_MODEL, else a weights/ folder next to the
// program, else mnv2-profiler/ in $XDG_DATA_HOME (default ~/.local/share) and then in each of
// $XDG_DATA_DIRS (default /usr/local/share:/usr/share), else the built-in topology with synthetic weights.
// In a folder, mobilenet_v2_1.0_224.onnx is taken first, else the first .onnx file by name.
#pragma once

#include <string>
#include <vector>

namespace mnv2 {

struct ModelLocation {
  std::string path;                   // empty: none found, use the built-in synthetic model
  std::string how;                    // "--model", "MNV2_MODEL", "weights folder <dir>", "data folder <dir>", "none"
  std::vector<std::string> searched;  // folders looked in, for the message when nothing is found
};

// `explicit_path` is the --model value (may be empty); `exe_dir` is the running program's folder.
// An explicit path or MNV2_MODEL that does not exist is an Error (never a silent fallback).
ModelLocation locate_model(const std::string& explicit_path, const std::string& exe_dir);

// Loads the located file with load_onnx(), or builds the synthetic built-in model when none was found.
struct Model;
Model load_located_model(const ModelLocation& location);

// The folder holding the running executable (from /proc/self/exe).
std::string executable_dir();

// The folder of the engine's caches (roofline ceilings, cuDNN plans, the lab's CUBINs): the cache-dir option
// ($MNV2_CACHE_DIR), else $XDG_CACHE_HOME/mnv2-profiler, else ~/.cache/mnv2-profiler; a relative XDG_CACHE_HOME
// or HOME is ignored (the XDG specification). "" when none applies: the cache is off (never a shared /tmp
// folder). Not created or checked here: mnv2/private_cache.h opens it.
std::string cache_dir();

}  // namespace mnv2
