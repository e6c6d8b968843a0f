// The kernel lab's compiler (mnv2/lab.h): one NVRTC program to a CUBIN. NVRTC needs no GPU and no CUDA
// context, so the parent process compiles and a bad kernel cannot hurt it. Also says where the toolkit's own
// headers (cuda_fp16.h, mma.h, ...) are, found from where NVRTC's library sits: NVRTC does not look for them.
#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gpu/plugin_api.h"

namespace mnv2::gpu_plugin {
namespace {

namespace fs = std::filesystem;

// The folder with cuda_fp16.h for the NVRTC this process loaded: its library is in lib64/ (or
// targets/ARCH/lib/) of a toolkit whose include/ sits beside.
std::string toolkit_include_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  const fs::path lib = fs::canonical(info.dli_fname, ec).parent_path();
  if (ec) return {};
  for (const fs::path& candidate : {lib.parent_path() / "include", lib.parent_path().parent_path() / "include"})
    if (fs::exists(candidate / "cuda_fp16.h", ec)) return candidate.string();
  return {};
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};

std::string nvrtc_error(const char* call, nvrtcResult r) { return std::string(call) + ": " + nvrtcGetErrorString(r); }

}  // namespace

void lab_nvrtc_compile(const LabNvrtcJob& job, LabNvrtcOutput& out) {
  out = LabNvrtcOutput{};
  int major = 0, minor = 0;
  if (nvrtcResult r = nvrtcVersion(&major, &minor); r != NVRTC_SUCCESS) {
    out.error = nvrtc_error("nvrtcVersion", r);
    return;
  }
  out.version = std::to_string(major) + "." + std::to_string(minor);
  out.toolkit_include = toolkit_include_dir();
  if (job.source.empty()) return;  // a query of the version and the include folder only

  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram(nullptr));
  if (nvrtcResult r = nvrtcCreateProgram(program.get(), job.source.c_str(), job.file_name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    out.error = nvrtc_error("nvrtcCreateProgram", r);
    return;
  }
  std::vector<const char*> options;
  for (const std::string& o : job.options) options.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(*program, static_cast<int>(options.size()), options.data());
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(*program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (nvrtcGetProgramLog(*program, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (compiled == NVRTC_ERROR_COMPILATION) return;  // the source's fault: the log says why
  if (compiled != NVRTC_SUCCESS) {
    out.error = nvrtc_error("nvrtcCompileProgram", compiled);
    return;
  }
  size_t size = 0;
  if (nvrtcResult r = nvrtcGetCUBINSize(*program, &size); r != NVRTC_SUCCESS || size == 0) {
    out.error = r != NVRTC_SUCCESS ? nvrtc_error("nvrtcGetCUBINSize", r)
                                   : "NVRTC made no CUBIN (compile for a real architecture, -arch=sm_XX)";
    return;
  }
  out.cubin.resize(size);
  if (nvrtcResult r = nvrtcGetCUBIN(*program, out.cubin.data()); r != NVRTC_SUCCESS) {
    out.error = nvrtc_error("nvrtcGetCUBIN", r);
    out.cubin.clear();
    return;
  }
  out.ok = true;
}

}  // namespace mnv2::gpu_plugin
