// Alignment of two runs' steps by layer (mnv2/studies.h): a union-find over the layers each step covers, so a
// segment is the smallest stretch of layers that both reports time as a whole.
#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "mnv2/studies.h"

namespace mnv2 {
namespace {

int find_root(std::vector<int>& parent, int x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

void unite(std::vector<int>& parent, int a, int b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
}

void join_steps(const RunReport& r, int n, std::vector<int>& parent) {
  for (const auto& s : r.steps) {
    int prev = -1;
    for (int l : s.layers) {
      if (l < 0 || l >= n) continue;
      if (prev >= 0) unite(parent, prev, l);
      prev = l;
    }
  }
}

}  // namespace

std::vector<AlignedSegment> align_runs(const RunReport& a, const RunReport& b) {
  const int n = static_cast<int>(std::min(a.layers.size(), b.layers.size()));
  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  join_steps(a, n, parent);
  join_steps(b, n, parent);
  std::map<int, AlignedSegment> by_root;  // the root is the smallest layer of the segment
  for (int l = 0; l < n; ++l) {
    AlignedSegment& s = by_root[find_root(parent, l)];
    if (s.layers.empty()) s.first_layer = l;
    s.layers.push_back(l);
  }
  auto add = [&](const RunReport& r, bool is_a) {
    for (const auto& step : r.steps) {
      if (step.layers.empty() || step.layers.front() >= n || step.layers.front() < 0) continue;
      AlignedSegment& s = by_root[find_root(parent, step.layers.front())];
      (is_a ? s.median_a : s.median_b) += step.time_ns.median;
      (is_a ? s.p10_a : s.p10_b) += step.time_ns.p10;
      (is_a ? s.p90_a : s.p90_b) += step.time_ns.p90;
      ++(is_a ? s.steps_a : s.steps_b);
    }
  };
  add(a, true);
  add(b, false);
  std::vector<AlignedSegment> out;
  out.reserve(by_root.size());
  for (auto& [root, seg] : by_root) out.push_back(std::move(seg));
  return out;
}

}  // namespace mnv2
