// mnv2 remote install TARGET: this mnv2, without root, in ~/.local/share/mnv2-profiler/VERSION/ on a target: the
// program, the GPU plugin and every library they load except the C library's own (which the target has) and
// NVIDIA's (which come from the target's driver and CUDA). A wrapper finds the libraries beside the program.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/printable.h"
#include "mnv2/remote.h"
#include "remote_run.h"

namespace mnv2::cli {
namespace {

namespace fs = std::filesystem;

// The C library's parts: the target's own must be used (they go with its kernel and its loader).
bool from_the_c_library(const std::string& name) {
  for (const char* prefix : {"ld-linux", "libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so", "libresolv.so",
                             "libutil.so", "libnsl.so", "libanl.so", "libmvec.so", "libBrokenLocale.so", "libnss_"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// NVIDIA's libraries: the target's driver and CUDA provide them, matched to its GPUs.
bool from_nvidia(const std::string& name) {
  for (const char* prefix : {"libcuda.so", "libcudart", "libcudnn", "libcublas", "libcupti", "libnvrtc", "libnvidia",
                             "libnvToolsExt", "libnvJitLink", "libnvperf"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// The libraries this process has loaded: /proc/self/maps names each mapped file.
std::vector<std::string> loaded_libraries() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> seen;
  std::vector<std::string> out;
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(".so") == std::string::npos || !seen.insert(path).second) continue;
    out.push_back(path);
  }
  return out;
}

}  // namespace

void declare_remote(Args& a) { a.positional("words", "install TARGET"); }

int cmd_remote(const Args& args, const OptionValues&) {
  const std::vector<std::string>& words = args.positionals();
  if (words.size() != 2 || words[0] != "install") throw UsageError("remote install TARGET");
  const remote::Target target = target_named(words[1]);
  const std::string program = fs::read_symlink("/proc/self/exe").string();
  std::vector<remote::BundleFile> files = {{program, "bin/mnv2.bin", true}};
  // The wrapper the fixed entry point runs: the bundle's libraries first.
  std::string wrapper_dir = (fs::temp_directory_path() / "mnv2-wrapper-XXXXXX").string();
  if (::mkdtemp(wrapper_dir.data()) == nullptr) throw Error("cannot create a private temporary folder");
  const std::string wrapper = wrapper_dir + "/mnv2";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\n# mnv2 " << MNV2_VERSION << ", installed by 'mnv2 remote install': the bundle's libraries first.\n"
      << "d=$(cd \"$(dirname \"$0\")\" && pwd)\n"
      << "LD_LIBRARY_PATH=\"$d/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\" exec \"$d/mnv2.bin\" \"$@\"\n";
  }
  files.push_back({wrapper, "bin/mnv2", true});
  std::set<std::string> names;
  for (const std::string& lib : loaded_libraries()) {
    const std::string name = fs::path(lib).filename().string();
    if (from_the_c_library(name) || from_nvidia(name) || !names.insert(name).second) continue;
    files.push_back({lib, "lib/" + name, false});
  }
  const GpuPluginInfo plugin = gpu_plugin_info();
  if (!plugin.path.empty() && fs::exists(plugin.path)) {
    const std::string name = fs::path(plugin.path).filename().string();
    if (names.insert(name).second) files.push_back({plugin.path, "lib/" + name, false});
  }
  const frontend::RemoteEnvironment env = frontend::remote_environment();
  remote::SessionConfig config = session_config(env, true);
  const bool tty = isatty(2);
  std::cout << "installing mnv2 " << MNV2_VERSION << " (" << files.size() << " files) on target "
            << printable(target.name) << "\n";
  std::cout.flush();
  remote::InstallResult r;
  try {
    r = remote::install_bundle(target, config, files, [&](const remote::RemoteProgress& p) {
      if (tty) std::cerr << "\r\033[Kupload " << (p.done >> 20) << " MiB" << std::flush;
    });
  } catch (...) {
    fs::remove_all(wrapper_dir);
    if (tty) std::cerr << "\r\033[K";
    throw;
  }
  fs::remove_all(wrapper_dir);
  if (tty) std::cerr << "\r\033[K";
  std::cout << "installed " << r.files << " files (" << (r.bytes >> 20) << " MiB) in ~/" << r.folder << " on target "
            << printable(target.name) << ", each checked by SHA-256 there\n";
  // The installed program answers the way a run will reach it.
  remote::Session s(target, config);
  const remote::ProbeResult p = s.probe();
  std::cout << "target " << printable(target.name) << " runs mnv2 " << printable(p.mnv2_version) << " at "
            << printable(p.mnv2_path) << " (glibc " << printable(p.glibc) << ")\n";
  for (const std::string& problem : p.problems) std::cout << "  problem: " << printable(problem) << "\n";
  return 0;
}

}  // namespace mnv2::cli
