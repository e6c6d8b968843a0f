// The OpenMP wait policy the mnv2 programs start with (mnv2 and mnv2-profiler; the engine sets nothing).
//
// The cpu backends run on OpenMP (libgomp, under oneDNN and the cpu-ref kernels). An idle OpenMP thread spins
// before it sleeps: libgomp's default is about 300,000 spins (a few milliseconds) at every barrier and between
// parallel regions, and a forward pass has about a hundred of them. On a machine whose cores are busy, a
// spinning thread burns the CPU share its sibling needs and the scheduler charges it for it, so a thread that
// was preempted waits a whole time slice to come back: on this project's 2-core test machine under a load of 2
// the p90 of the cpu backend was 15x its median. A short spin followed by sleeping keeps the idle figures (the
// next region starts within microseconds, inside the spin) and gives the cores back under load.
// The spin count is a start-up setting of the OpenMP runtime, so it is the programs' default, not a per-run
// option; the cpu backends' descriptions (and so every report) say which wait the runtime runs with.
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in a constructor that runs when the library is
// loaded, before main(); it has no call to change them later (omp_set_* covers thread counts, not waiting).
// Setting the variable from the executable's .preinit_array (which runs before every library's constructor)
// does not work either: the C library's own initialisation, which comes next, resets `environ` to the
// process's original block. So when neither variable is set, the programs start themselves again at once,
// from .preinit_array (no library constructor has run yet: no CUDA, no Qt, no OpenMP), with GOMP_SPINCOUNT
// added to the same environment; the new image sees it set and runs on. The process id and arguments stay.
// A value the user set (either variable) is left alone: the setting is a documented default of the front ends
// (`mnv2 --help`, docs/PERFORMANCE.md "Noise and contention"), not a hidden override. Where the program cannot
// be started again (no /proc/self/exe), it runs on with the runtime's default.
#pragma once

#include <unistd.h>

#include <cstring>

namespace mnv2::frontend {

// GOMP_SPINCOUNT=1000: spins before an idle OpenMP thread sleeps, ~10 us at libgomp's estimate of 100,000
// spins per ms. Measured on the 2-core test machine (docs/PERFORMANCE.md, "Noise and contention"): idle, the
// same median as the default spin (the next parallel region starts within it); beside two busy loops, a
// worst run of 33 ms where the default spin gave 170-448 ms. OMP_WAIT_POLICY=passive (no spin) had the best
// median under load but cost ~0.8 ms (+38%) on an idle machine at batch 1.
inline void default_omp_wait_policy(int, char** argv, char** envp) {
  // Nothing of the C library that needs its initialisation: plain loops, strncmp, a static array, execve.
  static char spin[] = "GOMP_SPINCOUNT=1000";
  static char* env[4096];
  size_t n = 0;
  for (; envp && envp[n]; ++n) {
    if (std::strncmp(envp[n], "OMP_WAIT_POLICY=", 16) == 0 || std::strncmp(envp[n], "GOMP_SPINCOUNT=", 15) == 0) return;
    if (n + 2 >= sizeof env / sizeof env[0]) return;  // an environment this large keeps the runtime's default
    env[n] = envp[n];
  }
  // Started through the dynamic loader (`ld-linux-x86-64.so.2 --library-path L mnv2 ...`, as a relocated
  // package does), /proc/self/exe is the loader, and argv no longer names the program: starting it again
  // would run "the first argument" as a program. Keep the runtime's default there.
  static char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return;
  self[len] = '\0';
  const char* base = std::strrchr(self, '/');
  base = base ? base + 1 : self;
  if (std::strncmp(base, "ld-", 3) == 0 || std::strncmp(base, "ld.so", 5) == 0) return;
  env[n] = spin;
  env[n + 1] = nullptr;
  if (argv && argv[0]) ::execve("/proc/self/exe", argv, env);  // returns only on failure
}

}  // namespace mnv2::frontend

// In one source file of each program, at namespace scope: registers default_omp_wait_policy in the
// executable's .preinit_array (only an executable has one; a shared library cannot do this).
#define MNV2_DEFAULT_OMP_WAIT_POLICY()                                                                \
  __attribute__((section(".preinit_array"), used)) static void (*const mnv2_omp_wait_policy_preinit)( \
      int, char**, char**) = &::mnv2::frontend::default_omp_wait_policy
