// mnv2 info: the build, the devices, the backends (and why one is unavailable), the model lookup and the model
// file's facts, as text or JSON. A model that cannot be read is reported after everything else, exit code 1.
#include <iostream>
#include <optional>
#include <string>

#include "commands.h"
#include "common/environment.h"
#include "mnv2/backend.h"
#include "mnv2/build_info.h"
#include "mnv2/cpu_info.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/json_io.h"
#include "mnv2/labels.h"
#include "mnv2/model_lookup.h"
#include "mnv2/model_summary.h"
#include "mnv2/printable.h"
#include "output.h"

namespace mnv2::cli {

void declare_info(Args& a) {
  model_options(a);
  labels_option(a);
  a.flag("--json", "print JSON instead of text");
}

int cmd_info(const Args& args, const OptionValues& options) {
  if (!args.positionals().empty()) throw UsageError("info takes no positional arguments");
  const CudaEnvironment& env = cuda_environment();
  json::Json j = json::Json::object();
  j["schema"] = "mnv2.info/1";  // resources/schemas/mnv2.info.schema.json
  j["version"] = MNV2_VERSION;
  j["commit"] = mnv2::build_commit();
  json::Json build = json::Json::object();
  build["cuda"] = env.built_with_cuda;
  build["cuda_runtime"] = cuda_version_string(env.runtime_version);
  json::Json archs = json::Json::array();
  for (const CudaArch& a : built_cuda_architectures()) archs.emplace_back(a.to_string());
  build["cuda_architectures"] = archs;
  const GpuPluginInfo plugin = gpu_plugin_info();
  json::Json pj = json::Json::object();
  pj["path"] = plugin.path;
  pj["loaded"] = plugin.loaded;
  if (!plugin.loaded) pj["problem"] = plugin.problem;
  json::Json missing = json::Json::array();
  for (const auto& lib : plugin.missing_libraries) missing.emplace_back(lib);
  pj["missing_libraries"] = missing;
  build["gpu_plugin"] = pj;
  build["image_decoding"] = image_decoding_available();
  j["build"] = build;
  json::Json cuda = json::Json::object();
  cuda["driver"] = cuda_version_string(env.driver_version);
  cuda["driver_release"] = env.driver_release;
  json::Json devices = json::Json::array();
  for (const auto& d : env.devices) {
    json::Json dj = json::Json::object();
    dj["index"] = d.index;
    dj["name"] = d.name;
    dj["uuid"] = d.uuid;
    dj["pci_bus_id"] = d.pci_bus_id;
    dj["compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    dj["memory_bytes"] = d.memory_bytes;
    dj["multiprocessors"] = d.multiprocessors;
    if (d.cannot_run.empty()) {
      dj["code"] = d.code;
      if (plugin.loaded) {
        std::string why;
        const int arch = kernel_code_arch(d.index, &why);
        dj["kernel_code_arch"] = arch > 0 ? json::Json("compute_" + std::to_string(arch)) : json::Json(why);
      }
    } else {
      dj["cannot_run"] = d.cannot_run;
    }
    devices.push_back(dj);
  }
  cuda["devices"] = devices;
  if (env.devices.empty()) cuda["why_none"] = env.why_none;
  j["cuda"] = cuda;
  const CpuKernelInfo cpu = cpu_kernel_info();  // which CPU kernels the cpu backends run here, and why
  j["cpu"] = cpu;
  json::Json backends = json::Json::array();
  for (const auto& name : backend_names()) {
    auto b = make_backend(name);
    Availability a = b->availability();
    json::Json bj = json::Json::object();
    bj["name"] = name;
    bj["description"] = b->description();
    bj["available"] = a.available;
    if (!a.available) bj["reason"] = a.reason;
    json::Json precisions = json::Json::array();
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16})
      if (b->supports(p)) precisions.emplace_back(to_string(p));
    bj["precisions"] = precisions;
    backends.push_back(bj);
  }
  j["backends"] = backends;
  ModelLocation loc = locate_model(frontend::explicit_model(options), executable_dir());
  json::Json mj = json::Json::object();
  mj["path"] = loc.path.empty() ? json::Json() : json::Json(loc.path);
  mj["found_by"] = loc.how;
  json::Json searched = json::Json::array();
  for (const auto& s : loc.searched) searched.emplace_back(s);
  mj["searched"] = searched;
  // The located model itself; one that cannot be read is reported after everything else, exit code 1.
  std::optional<Model> model;
  std::string model_error, labels;
  if (!loc.path.empty()) {
    try {
      model = load_located_model(loc);
      const std::string labels_file = args.get_or("--labels", "");
      if (!labels_file.empty() && static_cast<int>(read_labels_file(labels_file).size()) != model->num_classes)
        throw Error(labels_file + ": the number of labels differs from the model's " +
                    std::to_string(model->num_classes) + " classes");
      labels = labels_source(model->num_classes, labels_file);
      mj["file"] = model_summary_json(*model, labels);
      mj["warnings"] = json::Json(model->warnings);
    } catch (const Error& e) {
      model_error = e.what();
      mj["error"] = model_error;
    }
  }
  j["model"] = mj;

  if (args.flag("--json")) {
    std::cout << json::dump(j, 2) << "\n";
    return model_error.empty() ? 0 : 1;
  }
  std::cout << "mnv2 " << MNV2_VERSION << " (commit " << mnv2::build_commit() << ")\n";
  std::cout << "build:   CUDA " << (env.built_with_cuda ? "yes" : "no") << ", image decoding "
            << (image_decoding_available() ? "OpenCV" : "none (--tensor only)") << "\n";
  if (env.built_with_cuda) {
    std::cout << "gpu:     code for " << env.architectures << "\n";
    if (plugin.loaded)
      std::cout << "         plugin " << plugin.path << " (CUDA runtime " << cuda_version_string(env.runtime_version)
                << ", cuDNN " << env.cudnn_version << ")\n";
    else
      std::cout << "         plugin not loaded: " << plugin.problem << "\n";
  }
  if (env.driver_version == 0)
    std::cout << "driver:  none\n";
  else
    std::cout << "driver:  " << (env.driver_release.empty() ? "" : env.driver_release + ", ") << "supports CUDA "
              << cuda_version_string(env.driver_version) << "\n";
  if (env.devices.empty())
    std::cout << "devices: "
              << (plugin.built && !plugin.loaded ? "not probed (the GPU plugin is not loaded)"
                                                 : "none (" + env.why_none + ")")
              << "\n";
  for (size_t i = 0; i < env.devices.size(); ++i) {
    const GpuDevice& d = env.devices[i];
    std::cout << "device " << d.index << ": " << d.name << ", sm_" << d.cc_major << d.cc_minor << ", "
              << d.multiprocessors << " SMs, " << (d.memory_bytes >> 20) << " MiB, " << d.uuid << " at PCI "
              << d.pci_bus_id << "; ";
    if (!d.cannot_run.empty()) {
      std::cout << "cannot run this build's kernels: " << d.cannot_run << "\n";
      continue;
    }
    std::cout << "runs " << d.code;
    if (const json::Json* arch = json::find(devices[i], "kernel_code_arch"))
      std::cout << " (kernels: " << json::as_string(*arch) << ")";
    std::cout << "\n";
  }
  std::cout << "cpu:     " << cpu.model_name << ", " << cpu.threads << (cpu.threads == 1 ? " thread" : " threads")
            << "; CPUID:";
  for (const std::string& f : cpu.features) std::cout << " " << f;
  std::cout << "\n         kernels: cpu " << cpu.cpu_kernels << "; cpu-ref " << cpu.reference_kernels
            << "\n         why: " << cpu.why << "\n";
  std::cout << "backends:\n";
  for (const auto& b : backends) {
    std::cout << "  " << json::string_at(b, "name") << ": "
              << (json::bool_at(b, "available") ? "available" : "unavailable") << " — "
              << json::string_at(b, "description");
    if (const json::Json* r = json::find(b, "reason")) std::cout << " (" << json::as_string(*r) << ")";
    std::cout << "; precision";
    for (const auto& p : json::array_at(b, "precisions")) std::cout << " " << json::as_string(p);
    std::cout << "\n";
  }
  if (loc.path.empty()) {
    std::cout << "model:   none found (searched --model, MNV2_MODEL";
    for (const auto& s : loc.searched) std::cout << ", " << s;
    std::cout << "): the built-in topology with synthetic weights will run; predictions are meaningless\n";
  } else {
    std::cout << "model:   " << printable(loc.path) << " (" << loc.how << ")\n";
  }
  if (model) {
    for (const auto& [key, value] : model_summary_rows(*model, labels))
      std::cout << "  " << key << ": " << printable(value) << "\n";
    print_warnings(std::cout, *model, "  WARNING: ");
  }
  if (!model_error.empty()) std::cerr << "error: " << printable(model_error) << "\n";
  return model_error.empty() ? 0 : 1;
}

}  // namespace mnv2::cli
