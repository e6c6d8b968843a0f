// Summary statistics of repeated timings. Percentiles use linear interpolation between closest ranks
// (Hyndman & Fan type 7, numpy's default): p = x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] - x[floor(h)]),
// h = (n - 1) * q.
#pragma once

#include <cstdint>
#include <vector>

namespace mnv2 {

struct Summary {
  int64_t n = 0;
  double mean = 0, median = 0, min = 0, max = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
  double p10 = 0, p90 = 0, p95 = 0, p99 = 0;
  double cv = 0;  // coefficient of variation: stddev / mean
};

// Samples in any unit; the summary is in the same unit. An empty input gives n = 0 and zeros.
Summary summarize(std::vector<double> samples);

// Type-7 percentile of sorted samples, q in [0, 1].
double percentile_sorted(const std::vector<double>& sorted, double q);

}  // namespace mnv2
