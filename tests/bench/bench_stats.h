// What the GPU benchmark programs (tests/bench) share: timing a repetition with event pairs and the summary of the
// per-repetition times.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/check.h"
#include "gpu/runtime.h"

namespace mnv2::bench {

// The median is the figure; the rest says how spread the repetitions were.
struct Timing {
  int n = 0;
  double median_ms = 0, min_ms = 0, mean_ms = 0, max_ms = 0, p90_ms = 0, cv = 0;
};

inline Timing summarise(std::vector<double> ms) {
  Timing t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  t.n = static_cast<int>(ms.size());
  const size_t mid = ms.size() / 2;
  t.median_ms = ms.size() % 2 ? ms[mid] : 0.5 * (ms[mid - 1] + ms[mid]);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.p90_ms = ms[std::min(ms.size() - 1, static_cast<size_t>(std::ceil(0.9 * ms.size())) - 1)];
  double sum = 0, sq = 0;
  for (double x : ms) sum += x;
  t.mean_ms = sum / ms.size();
  for (double x : ms) sq += (x - t.mean_ms) * (x - t.mean_ms);
  t.cv = t.mean_ms > 0 ? std::sqrt(sq / ms.size()) / t.mean_ms : 0;
  return t;
}

// Times `launch` (enqueues one repetition on `stream`): warmup untimed repetitions, then one event pair per timed
// repetition.
template <class Launch>
Timing time_it(cudaStream_t stream, int warmup, int iters, const Launch& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  std::vector<mnv2::gpu::Event> start, stop;
  for (int i = 0; i < iters; ++i) {
    start.push_back(mnv2::gpu::make_event());
    stop.push_back(mnv2::gpu::make_event());
  }
  for (int i = 0; i < iters; ++i) {
    MNV2_CHECK_CUDA(cudaEventRecord(start[static_cast<size_t>(i)].get(), stream));
    launch();
    MNV2_CHECK_CUDA(cudaEventRecord(stop[static_cast<size_t>(i)].get(), stream));
  }
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> ms(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    float e = 0;
    MNV2_CHECK_CUDA(cudaEventElapsedTime(&e, start[static_cast<size_t>(i)].get(), stop[static_cast<size_t>(i)].get()));
    ms[static_cast<size_t>(i)] = e;
  }
  return summarise(ms);
}

}  // namespace mnv2::bench
