// Alignment of two runs' steps by layer (mnv2/studies.h): a union-find over the layers each step covers, so a
// segment is the smallest stretch of layers that both reports time as a whole.
#include <algorithm>
#include <cmath>
#include <cstdio>
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

std::string difference_headline(const RunReport& a, const RunReport& b, const std::vector<AlignedSegment>& segments) {
  double total_a = 0, total_b = 0;
  std::map<std::string, std::pair<double, double>> by_block;  // block name -> (a, b) ns
  std::map<std::string, double> by_role;                      // role -> b - a ns
  for (const AlignedSegment& seg : segments) {
    total_a += seg.median_a;
    total_b += seg.median_b;
    const Layer& first = a.topology[static_cast<size_t>(seg.first_layer)];
    const std::string block = first.block_name.empty() ? first.name : first.block_name;
    by_block[block].first += seg.median_a;
    by_block[block].second += seg.median_b;
    // A layer with its activation is that layer's kind; a longer segment is a fused stretch (a whole block).
    std::string role = seg.layers.size() <= 2 ? first.name.substr(first.name.find('.') + 1) : "fused-block";
    if (role == first.name) role = first.name;  // "classifier": no '.'
    by_role[role] += seg.median_b - seg.median_a;
  }
  if (total_a <= 0 || total_b <= 0) return {};
  char text[512];
  const double diff = total_b - total_a;
  if (std::abs(diff) < 0.01 * total_a) {
    std::snprintf(text, sizeof text, "B's layer time is within 1%% of A's (%.3fx)", total_b / total_a);
    return text;
  }
  std::string worst;
  double worst_diff = 0;
  for (const auto& [name, t] : by_block)
    if (std::abs(t.second - t.first) > std::abs(worst_diff)) {
      worst = name;
      worst_diff = t.second - t.first;
    }
  std::string role;
  double role_diff = 0;
  for (const auto& [name, d] : by_role)
    if (d * diff > 0 && std::abs(d) > std::abs(role_diff)) {  // the kind that moves the total the way it went
      role = name;
      role_diff = d;
    }
  const auto& w = by_block[worst];
  std::snprintf(text, sizeof text, "B is %.3gx A's layer time (%+.1f us); %s differs most: %.3gx (%+.1f us)",
                total_b / total_a, diff / 1e3, worst.c_str(), w.first > 0 ? w.second / w.first : 0.0, worst_diff / 1e3);
  std::string out = text;
  if (!role.empty()) {
    std::snprintf(text, sizeof text, "; %s layers account for %.0f%% of the difference", role.c_str(),
                  100 * role_diff / diff);
    out += text;
  }
  (void)b;
  return out;
}

}  // namespace mnv2
