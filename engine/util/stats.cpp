// Summary statistics (see mnv2/stats.h).
#include "mnv2/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mnv2 {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const double h = (static_cast<double>(sorted.size()) - 1.0) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.n = static_cast<int64_t>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  double ss = 0;
  for (double x : samples) ss += (x - s.mean) * (x - s.mean);
  s.stddev = samples.size() > 1 ? std::sqrt(ss / static_cast<double>(samples.size() - 1)) : 0.0;
  s.median = percentile_sorted(samples, 0.5);
  s.p10 = percentile_sorted(samples, 0.10);
  s.p90 = percentile_sorted(samples, 0.90);
  s.p95 = percentile_sorted(samples, 0.95);
  s.p99 = percentile_sorted(samples, 0.99);
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0.0;
  return s;
}

}  // namespace mnv2
