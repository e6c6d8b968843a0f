// What the two cpu backends (oneDNN `cpu`, reference `cpu-ref`) share: the checks of prepare(), their thread
// count, the host memory check before they allocate, and the OpenMP thread setting they run under.
#pragma once

#include <cstdint>
#include <string>

#include "mnv2/backend.h"
#include "mnv2/host_memory.h"  // host_memory_available
#include "mnv2/model.h"

namespace mnv2::cpu {

// What both prepare() check before they build anything: fp32 only, a positive batch and size, a thread count
// of 0..kMaxThreads, every layer
// supported by `backend` (UsageError / Error naming the backend and the layer).
void check_prepare(const Backend& backend, const Model& model, const PrepareConfig& config);

inline constexpr int kMaxThreads = 4096;

// Starts `threads` - 1 threads that wait for each other, then ends them: when the system refuses one (a
// process limit, ulimit -u), an Error naming the backend, the limit and the count that can run, instead of
// OpenMP's own "libgomp: Thread creation failed" and exit when its team starts. check_prepare() calls it.
void check_thread_capacity(const std::string& backend, int threads);  // PrepareConfig::cpu_threads and MNV2_CPU_THREADS

// The default thread count (PrepareConfig::cpu_threads 0 resolves to it): env MNV2_CPU_THREADS when set (a whole number
// from 1 to 4096, else UsageError), otherwise what OpenMP would use (OMP_NUM_THREADS, or the processors this process
// may run on).
int thread_count();

// The error a backend throws when a batch does not fit: "cpu: out of host memory for batch 8 at 224x224
// (needs 1.2 GiB for ...; <have>)". `have` says what is available or what failed.
std::string out_of_host_memory(const std::string& backend, int batch, int height, int width, int64_t need_bytes,
                               const std::string& what, const std::string& have);

// Throws out_of_host_memory() when `need_bytes` exceed host_memory_available().
void check_host_memory(const std::string& backend, int batch, int height, int width, int64_t need_bytes,
                       const std::string& what);

std::string gib(int64_t bytes);  // "1.2 GiB"

// Sets the calling thread's OpenMP team size (omp_set_num_threads) for as long as it lives. oneDNN reads it
// when it creates a primitive (its kernels split their work for that many threads) and when one runs.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads);
  ~ScopedOmpThreads();
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace mnv2::cpu
