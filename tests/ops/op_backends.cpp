// The op harness's backends and variants (see op_backends.h).
#include "op_backends.h"

#include <algorithm>
#include <map>
#include <random>

#include "mnv2/cuda_plan.h"
#include "mnv2/error.h"
#include "mnv2/option_values.h"

namespace mnv2::ops {

std::string BackendConfig::label() const {
  return backend + (variant.empty() ? "" : " " + variant) + " " + to_string(prepare.precision);
}

namespace {

void add_cpu_configs(BackendUnderTest& b) {
  for (Precision p : kPrecisions) {
    if (!b.backend->supports(p)) continue;
    for (int threads : {1, 2}) {
      BackendConfig c{b.name, "threads=" + std::to_string(threads), {}};
      c.prepare.precision = p;
      c.prepare.cpu_threads = threads;
      b.configs.push_back(c);
    }
  }
}

// The kernels of a plan and how they are launched (not the options asked for, which describe() names).
std::string signature(const CudaPlan& plan) {
  std::string sig = describe_chain(plan) + (plan.input_nhwc_copy ? " input copy" : "") + "\n";
  for (const CudaStep& s : plan.steps)
    sig += s.name + " [" + to_string(s.kernel) + "] " + s.variant + " tile " + s.launch.tile + " splits " +
           std::to_string(s.launch.splits) + (s.launch.splitk_in_kernel ? " in-kernel" : "") + (s.half ? " half" : "") +
           (s.tensor_cores ? " tc" : "") + "\n";
  return sig;
}

// What the cuda planner makes of the cases under `config` on each GPU preset: equal strings, equal kernels.
std::string plan_signature(const std::vector<Model>& models, const std::vector<OpSpec>& specs, PrepareConfig config) {
  std::string sig;
  for (const GpuProperties& gpu :
       {GpuProperties::t4(), GpuProperties::a100(), GpuProperties::rtx4090(), GpuProperties::h200()})
    for (size_t i = 0; i < models.size(); ++i) {
      config.batch = specs[i].batch;
      config.height = specs[i].height;
      config.width = specs[i].width;
      try {
        sig += signature(plan_cuda_network(models[i], config, gpu));
      } catch (const UsageError&) {
        throw;                    // options the backend refuses everywhere
      } catch (const Error& e) {  // this GPU cannot run it (tf32 below sm_80): part of the signature too
        sig += std::string("refused: ") + e.what();
      }
      sig += '\n';
    }
  return sig;
}

void add_cuda_configs(BackendUnderTest& b, const std::vector<OpSpec>& specs) {
  std::vector<Model> models;
  std::mt19937_64 gen(1);  // the weights do not change a plan
  for (const OpSpec& s : specs) models.push_back(build_model(s, gen));
  std::map<std::string, std::string> seen;  // plan signature -> the first configuration that had it
  for (Precision p : kPrecisions) {
    if (!b.backend->supports(p)) continue;
    for (CudaOptions::Variant v : kCudaVariants)
      for (CudaOptions::Fusion f : kCudaFusions)
        for (CudaOptions::SplitK s : kCudaSplitKs) {
          BackendConfig c{
              b.name, std::string(to_string(v)) + " fusion=" + to_string(f) + " splitk=" + to_string(s), {}};
          c.prepare.precision = p;
          c.prepare.cuda.variant = v;
          c.prepare.cuda.fusion = f;
          c.prepare.cuda.splitk = s;
          std::string sig;
          try {
            sig = plan_signature(models, specs, c.prepare);
          } catch (const UsageError& e) {
            b.notes.push_back(c.label() + ": refused by the planner (" + e.what() + ")");
            continue;
          }
          const auto [it, fresh] = seen.emplace(sig, c.label());
          if (!fresh) {
            b.notes.push_back(c.label() + ": the same plan as " + it->second + " for every case");
            continue;
          }
          b.configs.push_back(c);
        }
  }
}

void add_cudnn_configs(BackendUnderTest& b) {
  for (Precision p : kPrecisions) {
    if (!b.backend->supports(p)) continue;
    for (CudnnOptions::Variant v : kCudnnVariants)
      for (CudnnOptions::Layout l : kCudnnLayouts) {
        if (v == CudnnOptions::Variant::naive && l != CudnnOptions::Layout::automatic) continue;
        BackendConfig c{b.name, std::string(to_string(v)) + " layout=" + to_string(l), {}};
        c.prepare.precision = p;
        c.prepare.cudnn.variant = v;
        c.prepare.cudnn.layout = l;
        b.configs.push_back(c);
      }
  }
}

}  // namespace

std::vector<BackendUnderTest> backends_under_test(const std::vector<std::string>& names,
                                                  const std::vector<OpSpec>& specs) {
  std::vector<BackendUnderTest> out;
  for (const std::string& name : names) {
    BackendUnderTest b;
    b.name = name;
    b.backend = make_backend(name);  // UsageError for an unknown name
    b.availability = b.backend->availability();
    if (b.availability.available) {
      if (name == "cpu" || name == "cpu-ref")
        add_cpu_configs(b);
      else if (name == "cuda")
        add_cuda_configs(b, specs);
      else if (name == "cudnn")
        add_cudnn_configs(b);
      else
        b.configs.push_back(BackendConfig{name, "", {}});
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace mnv2::ops
