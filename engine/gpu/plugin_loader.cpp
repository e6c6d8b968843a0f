// Finds and loads the GPU plugin (see plugin_api.h). It sits beside the engine library (the build tree's
// lib/ folder, or the package's private library folder); MNV2_GPU_PLUGIN names another file (developers:
// a plugin built for other architectures). When it cannot be loaded, the shared libraries it needs are
// read from its ELF dynamic section and each is tried, so the message names every missing NVIDIA library
// instead of the loader's first complaint.
#include <dlfcn.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "gpu/plugin_api.h"
#include "mnv2/build_info.h"

namespace mnv2::gpu_plugin {

namespace fs = std::filesystem;

namespace {

// The engine library's own folder (dladdr of a function in it), where the plugin is installed beside it.
fs::path engine_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&engine_library_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  fs::path p = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path(info.dli_fname).parent_path() : p.parent_path();
}

// What each NVIDIA library is, for the message.
std::string library_role(const std::string& soname) {
  static const std::pair<const char*, const char*> kRoles[] = {
      {"libcudart.so", "CUDA runtime"}, {"libcudnn", "cuDNN"},    {"libcublasLt.so", "cuBLASLt"},
      {"libcublas.so", "cuBLAS"},       {"libcupti.so", "CUPTI"}, {"libnvrtc.so", "NVRTC"},
      {"libcuda.so", "NVIDIA driver"},  {"libnvToolsExt", "NVTX"}};
  for (const auto& [prefix, role] : kRoles)
    if (soname.rfind(prefix, 0) == 0) return role;
  return {};
}

}  // namespace

// DT_NEEDED entries of a 64-bit little-endian ELF shared object; empty when the file is not one. Reads only
// the program headers and the dynamic segment (a plugin carrying kernels for many GPUs is tens of MB).
std::vector<std::string> elf_needed_libraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  auto read_at = [&in](uint64_t offset, void* out, size_t bytes) {
    in.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes)));
  };
  Elf64_Ehdr eh{};
  if (!read_at(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
    return {};
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr))) return {};
  // Virtual address -> file offset through the loadable segments (the string table is given by address).
  auto file_offset = [&ph](uint64_t vaddr, uint64_t* off) {
    for (const Elf64_Phdr& p : ph)
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) {
        *off = p.p_offset + (vaddr - p.p_vaddr);
        return true;
      }
    return false;
  };
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_DYNAMIC || p.p_filesz > (1u << 20)) continue;
    std::vector<Elf64_Dyn> dyn(p.p_filesz / sizeof(Elf64_Dyn));
    if (!read_at(p.p_offset, dyn.data(), dyn.size() * sizeof(Elf64_Dyn))) return {};
    uint64_t strtab = 0, strsz = 0;
    for (const Elf64_Dyn& d : dyn) {
      if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
      if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    }
    uint64_t str_off = 0;
    if (strtab == 0 || strsz == 0 || strsz > (16u << 20) || !file_offset(strtab, &str_off)) return {};
    std::string strings(strsz, '\0');
    if (!read_at(str_off, strings.data(), strsz)) return {};
    std::vector<std::string> needed;
    for (const Elf64_Dyn& d : dyn)
      if (d.d_tag == DT_NEEDED && d.d_un.d_val < strsz) needed.emplace_back(strings.c_str() + d.d_un.d_val);
    return needed;
  }
  return {};
}

std::string build_id() { return std::string(MNV2_VERSION) + "+" + build_commit(); }

namespace {

struct Loaded {
  Status status;
  const Api* api = nullptr;
};

Loaded load() {
  Loaded l;
#ifndef MNV2_GPU_PLUGIN_BUILT
  l.status.problem = "this build has no GPU plugin (configured with MNV2_WITH_CUDA=OFF)";
  return l;
#else
  l.status.built = true;
  const char* env = std::getenv("MNV2_GPU_PLUGIN");
  const bool from_env = env != nullptr && *env != '\0';
  const fs::path path = from_env ? fs::path(env) : engine_library_dir() / kPluginFileName;
  l.status.path = path.string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    l.status.problem = from_env ? "MNV2_GPU_PLUGIN=" + path.string() + " is not a file"
                                : "the GPU backends are not installed (" + path.string() +
                                      " not found; on Debian/Ubuntu install the mnv2-profiler-cuda package)";
    return l;
  }
  // RTLD_NOW: a missing symbol shows here, not in the middle of a run. RTLD_LOCAL: nothing of NVIDIA's
  // libraries leaks into the global namespace of a process that may hold other CUDA code.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    const std::string loader_message = err != nullptr ? err : "unknown dlopen error";
    std::string names;
    for (const std::string& lib : elf_needed_libraries(path.string())) {
      void* h = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
      if (h != nullptr) {
        dlclose(h);
        continue;
      }
      dlerror();
      l.status.missing_libraries.push_back(lib);
      const std::string role = library_role(lib);
      names += (names.empty() ? "" : ", ") + lib + (role.empty() ? "" : " (" + role + ")");
    }
    l.status.problem = names.empty() ? "cannot load the GPU plugin " + path.string() + ": " + loader_message
                                     : "the GPU backends need NVIDIA libraries that are not installed: " + names +
                                           " (the CUDA 13 runtime, cuDNN 9, cuBLAS and CUPTI; see README, Install)";
    return l;
  }
  auto entry = reinterpret_cast<EntryPoint>(dlsym(handle, kEntryPointName));
  const Api* api = entry != nullptr ? entry() : nullptr;
  if (api == nullptr) {
    l.status.problem = path.string() + " is not an mnv2 GPU plugin (no " + kEntryPointName + ")";
    return l;
  }
  if (api->api_version != kApiVersion || build_id() != api->build_id) {
    l.status.problem = path.string() + " was built from another version (" + api->build_id + ", this program is " +
                       build_id() + "); reinstall both from one build";
    return l;
  }
  // The handle is never closed: backends, timers and kernels from it live until the process ends.
  l.status.loaded = true;
  l.api = api;
  return l;
#endif
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Api* api() { return loaded().api; }
const Status& status() { return loaded().status; }

}  // namespace mnv2::gpu_plugin
