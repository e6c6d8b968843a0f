// Shared parts of the cpu backends (see cpu_common.h).
#include "backends/cpu/cpu_common.h"

#include <omp.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/layer_checks.h"
#include "mnv2/error.h"
#include "mnv2/memory.h"  // check_sizes_fit, format_gib
#include "mnv2/options.h"

namespace mnv2::cpu {

void check_prepare(const Backend& backend, const Model& model, const PrepareConfig& config) {
  const std::string name = backend.name();
  if (config.precision != Precision::fp32)
    throw UsageError(name + " backend runs fp32 only (asked for " + to_string(config.precision) + ")");
  if (config.batch < 1 || config.height < 1 || config.width < 1)
    throw UsageError(name + ": batch, height and width must be positive (got batch " + std::to_string(config.batch) +
                     ", " + std::to_string(config.height) + "x" + std::to_string(config.width) + ")");
  if (config.cpu_threads < 0 || config.cpu_threads > kMaxThreads)
    throw UsageError(name + ": thread count must be 0 (the default) or 1.." + std::to_string(kMaxThreads) + ", got " +
                     std::to_string(config.cpu_threads));
  for (const Layer& layer : model.layers)
    if (auto reason = backend.unsupported_reason(layer)) throw Error(name + ": " + layer_label(layer) + ": " + *reason);
  // The sizes the model and the command declare, against the host's memory, before any primitive or buffer is
  // made: oneDNN took a minute creating the primitives of a convolution padded by millions before its buffers
  // were found not to fit.
  check_sizes_fit(model, name, config);
  check_thread_capacity(name, config.cpu_threads > 0 ? config.cpu_threads : thread_count());
}

namespace {

// The probe's threads wait here until every one was started, so they all exist at once, as a team does.
struct ProbeGate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
};

extern "C" void* probe_thread(void* arg) {
  auto* gate = static_cast<ProbeGate*>(arg);
  std::unique_lock lock(gate->m);
  gate->cv.wait(lock, [&] { return gate->open; });
  return nullptr;
}

}  // namespace

void check_thread_capacity(const std::string& backend, int threads) {
  // libgomp keeps its team's threads: a count once started needs no second probe.
  static std::mutex probed_mutex;
  static int probed = 1;
  std::lock_guard probed_lock(probed_mutex);
  if (threads <= probed) return;
  ProbeGate gate;
  std::vector<pthread_t> started;
  int failure = 0;
  // The default attributes, as libgomp's own threads get (a small stack was refused with EINVAL where the loaded
  // libraries' static TLS is larger than it: the GPU tests' process on a Xeon with AMX). The stack is address
  // space, reserved, not memory used.
  for (int i = 1; i < threads; ++i) {
    pthread_t t;
    if (const int rc = pthread_create(&t, nullptr, probe_thread, &gate); rc != 0) {
      failure = rc;
      break;
    }
    started.push_back(t);
  }
  {
    std::lock_guard lock(gate.m);
    gate.open = true;
  }
  gate.cv.notify_all();
  for (pthread_t t : started) pthread_join(t, nullptr);
  if (failure == 0) {
    probed = threads;
    return;
  }
  const int could = static_cast<int>(started.size()) + 1;
  std::string limit;
  rlimit nproc{};
  if (::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY)
    limit = "; this user may run " + std::to_string(nproc.rlim_cur) + " processes and threads in all (ulimit -u)";
  throw Error(backend + ": cannot start " + std::to_string(threads) + " threads: the system refused thread " +
              std::to_string(could + 1) + " (" + std::strerror(failure) + limit + "); use " + std::to_string(could) +
              " threads or fewer (the threads option)");
}

int thread_count() {
  // The front end's threads option (flag, $MNV2_CPU_THREADS or a saved setting), else OpenMP's count.
  if (const int n = process_settings().cpu_threads; n > 0) return std::min(n, kMaxThreads);
  return std::max(1, omp_get_max_threads());
}

std::string gib(int64_t bytes) { return format_gib(bytes); }

std::string out_of_host_memory(const std::string& backend, int batch, int height, int width, int64_t need_bytes,
                               const std::string& what, const std::string& have) {
  return backend + ": out of host memory for batch " + std::to_string(batch) + " at " + std::to_string(height) + "x" +
         std::to_string(width) + " (needs " + gib(need_bytes) + " for " + what + "; " + have + ")";
}

void check_host_memory(const std::string& backend, int batch, int height, int width, int64_t need_bytes,
                       const std::string& what) {
  if (const int64_t available = host_memory_available(); available >= 0 && need_bytes > available)
    throw Error(out_of_host_memory(backend, batch, height, width, need_bytes, what, gib(available) + " available"));
}

ScopedOmpThreads::ScopedOmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
ScopedOmpThreads::~ScopedOmpThreads() { omp_set_num_threads(saved_); }

}  // namespace mnv2::cpu
