// Nsight Compute's CSV pages read by metric name (mnv2/deep_dive.h): the raw page per kernel, the details page's rule
// results, and the figures over one step.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mnv2/csv.h"
#include "mnv2/deep_dive.h"
#include "mnv2/error.h"

namespace mnv2 {
namespace {

// A page's records from its header row on (ncu may print its own "==PROF==" and "==WARNING==" lines first). With
// `ragged`, a row may end early (the details page leaves the rule columns off its metric rows: empty fields).
std::vector<std::vector<std::string>> page_records(std::string_view csv, const char* page, bool ragged = false) {
  size_t start = csv.rfind("\"ID\",", 0) == 0 ? 0 : csv.find("\n\"ID\",");
  if (start == std::string_view::npos)
    throw Error(std::string("ncu's ") + page + " page has no header row (\"ID\",...): no kernel was profiled");
  if (start != 0) ++start;
  auto records = read_csv(csv.substr(start));
  const size_t width = records.front().size();
  for (size_t r = 1; r < records.size(); ++r) {
    if (ragged && records[r].size() < width) records[r].resize(width);
    if (records[r].size() != width)
      throw Error(std::string("ncu's ") + page + " page: row " + std::to_string(r + 1) + " has " +
                  std::to_string(records[r].size()) + " fields, the header " + std::to_string(width));
  }
  return records;
}

// ncu's numbers: "9,728", "1,980,000", "37.50"; "n/a", "no data" and text are absent.
std::optional<double> number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',') digits += c;
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_id(const std::string& cell) {
  return !cell.empty() && std::all_of(cell.begin(), cell.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The innermost push/pop range of ncu's NVTX cell: `TID  "<domain>:NAME:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"`
// per range, outermost first; NAME may hold spaces, '+' and ':', the six fields after it hold no ':'.
std::string innermost_range(const std::string& cell) {
  std::string last;
  size_t at = 0;
  while ((at = cell.find("\"<", at)) != std::string::npos) {
    const size_t name = cell.find(">:", at);
    const size_t close = cell.find('"', at + 1);
    if (name == std::string::npos || close == std::string::npos || name > close) break;
    std::string text = cell.substr(name + 2, close - name - 2);
    for (int f = 0; f < 6; ++f) {
      const size_t colon = text.rfind(':');
      if (colon == std::string::npos) break;
      text.erase(colon);
    }
    last = text;
    at = close + 1;
  }
  return last;
}

}  // namespace

std::vector<NcuKernel> parse_ncu_raw(std::string_view csv) {
  const auto records = page_records(csv, "raw");
  const auto& header = records.front();
  std::map<std::string, size_t> column;
  for (size_t c = 0; c < header.size(); ++c) column.emplace(header[c], c);
  if (!column.count("Kernel Name")) throw Error("ncu's raw page has no \"Kernel Name\" column: not a --page raw CSV");
  size_t range_column = header.size();
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c].find("Push/Pop_Range") != std::string::npos) range_column = c;

  std::vector<NcuKernel> kernels;
  for (size_t r = 1; r < records.size(); ++r) {
    const auto& row = records[r];
    if (!is_id(row[0])) continue;  // --print-units base's units row (its ID cell is empty)
    const auto cell = [&](const std::string& name) -> const std::string* {
      const auto it = column.find(name);
      return it == column.end() ? nullptr : &row[it->second];
    };
    const auto metric = [&](const char* name) -> std::optional<double> {
      const std::string* c = cell(name);
      return c ? number(*c) : std::nullopt;
    };
    NcuKernel k;
    k.id = std::stoi(row[0]);
    k.name = *cell("Kernel Name");
    if (range_column < header.size()) k.range = innermost_range(row[range_column]);
    if (const std::string* g = cell("Grid Size")) k.grid = *g;
    if (const std::string* b = cell("Block Size")) k.block = *b;
    k.duration_ns = metric(ncu_metric::duration_ns);
    k.sm_throughput_pct = metric(ncu_metric::sm_throughput_pct);
    k.memory_throughput_pct = metric(ncu_metric::memory_throughput_pct);
    k.dram_throughput_pct = metric(ncu_metric::dram_throughput_pct);
    k.achieved_occupancy_pct = metric(ncu_metric::achieved_occupancy_pct);
    k.theoretical_occupancy_pct = metric(ncu_metric::theoretical_occupancy_pct);
    k.hmma_pipe_pct = metric(ncu_metric::hmma_pipe_pct);
    k.gmma_pipe_pct = metric(ncu_metric::gmma_pipe_pct);
    k.registers_per_thread = metric(ncu_metric::registers);
    const std::string_view limit = ncu_metric::occupancy_limit_prefix;
    const std::string_view stall = ncu_metric::stall_prefix, stall_end = ncu_metric::stall_suffix;
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string& h = header[c];
      if (h.rfind(limit, 0) == 0) {
        const auto blocks = number(row[c]);
        if (!blocks) continue;
        const std::string what = h.substr(limit.size());
        if (!k.occupancy_limit_blocks || *blocks < *k.occupancy_limit_blocks) {
          k.occupancy_limit_blocks = blocks;
          k.occupancy_limiter = what;
        } else if (*blocks == *k.occupancy_limit_blocks) {
          k.occupancy_limiter += "+" + what;
        }
      } else if (h.size() > stall.size() + stall_end.size() && h.rfind(stall, 0) == 0 &&
                 h.compare(h.size() - stall_end.size(), stall_end.size(), stall_end) == 0) {
        const std::string reason = h.substr(stall.size(), h.size() - stall.size() - stall_end.size());
        // "selected" is the warp that issued, not a stall; "not_issued" style totals do not appear in this family.
        if (reason == "selected") continue;
        if (const auto v = number(row[c])) k.stalls.push_back({reason, *v});
      }
    }
    std::stable_sort(k.stalls.begin(), k.stalls.end(),
                     [](const NcuStall& a, const NcuStall& b) { return a.warps_per_issue > b.warps_per_issue; });
    // Bytes moved at each level (NcuBytes says which counters, in the order tried).
    const auto first_of = [&](std::initializer_list<std::optional<double>> tries) -> std::optional<double> {
      for (const auto& t : tries)
        if (t) return t;
      return std::nullopt;
    };
    const auto rate_times_duration = [&](const char* rate) -> std::optional<double> {
      const auto r = metric(rate);
      return r && k.duration_ns ? std::optional<double>(*r * *k.duration_ns * 1e-9) : std::nullopt;
    };
    const auto sum_of = [&](std::initializer_list<const char*> names, double scale) -> std::optional<double> {
      std::optional<double> total;
      for (const char* n : names)
        if (const auto v = metric(n)) total = total.value_or(0) + *v * scale;
      return total;
    };
    constexpr double kSector = 32;  // bytes in an L1 or L2 sector
    k.bytes.dram = first_of({metric("dram__bytes.sum"), sum_of({"dram__bytes_read.sum", "dram__bytes_write.sum"}, 1),
                             rate_times_duration("dram__bytes.sum.per_second")});
    k.bytes.l2 = first_of({metric("lts__t_bytes.sum"), sum_of({"lts__t_sectors.sum"}, kSector),
                           rate_times_duration("lts__t_bytes.sum.per_second")});
    k.bytes.l1 = first_of(
        {metric("l1tex__t_bytes.sum"),
         sum_of({"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"},
                kSector),
         rate_times_duration("l1tex__t_bytes.sum.per_second")});
    kernels.push_back(std::move(k));
  }
  return kernels;
}

void add_ncu_details(std::string_view csv, std::vector<NcuKernel>& kernels) {
  const auto records = page_records(csv, "details", true);
  const auto& header = records.front();
  const auto find = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? header.size() : static_cast<size_t>(it - header.begin());
  };
  // The rules' results (ncu 2023.3 and later): a row whose "Rule Name" is set; its text is shown as ncu wrote it.
  const size_t name = find("Rule Name"), type = find("Rule Type"), text = find("Rule Description");
  const size_t speedup_type = find("Estimated Speedup Type"), speedup = find("Estimated Speedup");
  if (name == header.size() || type == header.size() || text == header.size()) return;
  std::map<int, NcuKernel*> by_id;
  for (NcuKernel& k : kernels) by_id[k.id] = &k;
  std::map<int, std::vector<std::pair<double, std::string>>> notes;  // by kernel: (estimated speedup %, note)
  for (size_t r = 1; r < records.size(); ++r) {
    const auto& row = records[r];
    if (!is_id(row[0]) || row[name].empty() || row[text].empty()) continue;
    const int id = std::stoi(row[0]);
    if (!by_id.count(id)) continue;
    std::optional<double> gain;
    if (speedup < header.size()) gain = number(row[speedup]);
    std::string note = row[type] + " " + row[name];
    if (gain)
      note += " (estimated speedup " + (speedup_type < header.size() ? row[speedup_type] + " " : std::string()) +
              std::to_string(static_cast<int>(std::lround(*gain))) + "%)";
    note += ": " + row[text];
    notes[id].emplace_back(gain.value_or(-1), std::move(note));
  }
  // The largest estimated gain first, as ncu's own report orders its advice.
  for (auto& [id, list] : notes) {
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [gain, note] : list) by_id[id]->notes.push_back(std::move(note));
  }
}

NcuStepSummary summarise_ncu(const std::vector<NcuKernel>& kernels) {
  if (kernels.empty()) throw Error("ncu profiled no kernel of the step");
  NcuStepSummary s;
  // The step ran several times under ncu (each phase of the run): its kernel sequence repeats. The shortest period
  // whose repetition is the whole list is one run; the last run is kept. A sequence that does not repeat is one run.
  const size_t n = kernels.size();
  size_t period = n;
  for (size_t p = 1; p < n; ++p) {
    if (n % p != 0) continue;
    bool repeats = true;
    for (size_t i = p; i < n && repeats; ++i)
      repeats = kernels[i].name == kernels[i - p].name && kernels[i].range == kernels[i - p].range;
    if (repeats) {
      period = p;
      break;
    }
  }
  s.runs_in_report = static_cast<int>(n / period);
  s.kernels.assign(kernels.end() - static_cast<std::ptrdiff_t>(period), kernels.end());

  NcuKernel& t = s.total;
  t.id = -1;
  t.name = std::to_string(s.kernels.size()) + (s.kernels.size() == 1 ? " kernel" : " kernels");
  t.range = s.kernels.front().range;
  const auto sum = [&](auto member) {
    std::optional<double> total;
    for (const NcuKernel& k : s.kernels)
      if (const auto& v = member(k)) total = total.value_or(0) + *v;
    return total;
  };
  const auto weighted = [&](auto member) {
    double w = 0, wv = 0;
    for (const NcuKernel& k : s.kernels)
      if (const auto& v = member(k); v && k.duration_ns) {
        w += *k.duration_ns;
        wv += *k.duration_ns * *v;
      }
    return w > 0 ? std::optional<double>(wv / w) : std::nullopt;
  };
  t.duration_ns = sum([](const NcuKernel& k) { return k.duration_ns; });
  t.sm_throughput_pct = weighted([](const NcuKernel& k) { return k.sm_throughput_pct; });
  t.memory_throughput_pct = weighted([](const NcuKernel& k) { return k.memory_throughput_pct; });
  t.dram_throughput_pct = weighted([](const NcuKernel& k) { return k.dram_throughput_pct; });
  t.achieved_occupancy_pct = weighted([](const NcuKernel& k) { return k.achieved_occupancy_pct; });
  t.theoretical_occupancy_pct = weighted([](const NcuKernel& k) { return k.theoretical_occupancy_pct; });
  t.hmma_pipe_pct = weighted([](const NcuKernel& k) { return k.hmma_pipe_pct; });
  t.gmma_pipe_pct = weighted([](const NcuKernel& k) { return k.gmma_pipe_pct; });
  t.bytes.l1 = sum([](const NcuKernel& k) { return k.bytes.l1; });
  t.bytes.l2 = sum([](const NcuKernel& k) { return k.bytes.l2; });
  t.bytes.dram = sum([](const NcuKernel& k) { return k.bytes.dram; });
  const auto longest = std::max_element(s.kernels.begin(), s.kernels.end(), [](const NcuKernel& a, const NcuKernel& b) {
    return a.duration_ns.value_or(0) < b.duration_ns.value_or(0);
  });
  t.occupancy_limiter = longest->occupancy_limiter;
  t.occupancy_limit_blocks = longest->occupancy_limit_blocks;
  t.registers_per_thread = longest->registers_per_thread;
  t.grid = longest->grid;
  t.block = longest->block;
  std::map<std::string, std::pair<double, double>> stalls;  // reason -> (weight, weighted sum)
  for (const NcuKernel& k : s.kernels)
    for (const NcuStall& st : k.stalls) {
      auto& [w, wv] = stalls[st.reason];
      w += k.duration_ns.value_or(0);
      wv += k.duration_ns.value_or(0) * st.warps_per_issue;
    }
  for (const auto& [reason, w] : stalls)
    if (w.first > 0) t.stalls.push_back({reason, w.second / w.first});
  std::stable_sort(t.stalls.begin(), t.stalls.end(),
                   [](const NcuStall& a, const NcuStall& b) { return a.warps_per_issue > b.warps_per_issue; });
  return s;
}

}  // namespace mnv2
