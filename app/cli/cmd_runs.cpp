// mnv2 runs: what the app's Runs panel and Run comparison do, headless: the runs of report (or session) files
// listed, each compared with the baseline: every setting that differs, weighed (compare_settings), then the
// layers side by side where the two runs are of one network.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/error.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"
#include "output.h"

namespace mnv2::cli {

void declare_runs(Args& a) {
  a.positional("files", "report or session JSON files (mnv2 profile/compare --json, the app's Save session)");
  a.value("--baseline",
          "the run the others are compared with, 1-based over the files' runs (default: a "
          "session's pinned baseline, else 1)");
}

int cmd_runs(const Args& args, const OptionValues& /*options*/) {
  const std::vector<std::string>& files = args.positionals();
  if (files.empty()) throw UsageError("runs takes report or session files: mnv2 runs A.json B.json [...]");
  struct Listed {
    RunReport report;
    std::string name, note, file;
  };
  std::vector<Listed> runs;
  int session_baseline = -1;
  for (const std::string& file : files) {
    Session s = read_session_file(file);
    if (s.runs.empty()) throw Error(file + ": the report holds no runs");
    if (s.baseline >= 0 && session_baseline < 0) session_baseline = static_cast<int>(runs.size()) + s.baseline;
    for (size_t i = 0; i < s.runs.size(); ++i) {
      std::string name = s.runs[i].name;
      if (name.empty())
        name =
            std::filesystem::path(file).filename().string() + (s.runs.size() > 1 ? " #" + std::to_string(i + 1) : "");
      runs.push_back({std::move(s.runs[i].report), std::move(name), std::move(s.runs[i].note), file});
    }
  }
  int baseline = session_baseline >= 0 ? session_baseline : 0;
  if (const auto b = args.get("--baseline")) {
    baseline = parse_int(*b, "--baseline", 1, static_cast<int>(runs.size())) - 1;
  }
  std::printf("%-3s %-24s %-10s %-9s %5s %-9s %14s  %s\n", "#", "run", "backend", "precision", "batch", "size",
              "end_to_end_ms", "device");
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunReport& r = runs[i].report;
    std::printf("%-3zu %-24s %-10s %-9s %5d %-9s %14.3f  %s%s\n", i + 1, printable(runs[i].name).c_str(),
                printable(r.backend).c_str(), to_string(r.config.precision), r.config.batch,
                (std::to_string(r.config.height) + "x" + std::to_string(r.config.width)).c_str(),
                r.end_to_end.host_ms.median,
                printable(r.device + (r.origin.target.empty() ? "" : " " + origin_text(r.origin))).c_str(),
                static_cast<int>(i) == baseline ? "  (baseline)" : "");
    if (!runs[i].note.empty()) std::printf("    note: %s\n", printable(runs[i].note).c_str());
  }
  int refused = 0;
  const Listed& a = runs[static_cast<size_t>(baseline)];
  for (size_t i = 0; i < runs.size(); ++i) {
    if (static_cast<int>(i) == baseline) continue;
    const Listed& b = runs[i];
    const RunComparability c = compare_settings(a.report, b.report);
    std::printf("\n%s against %s:\n", printable(b.name).c_str(), printable(a.name).c_str());
    if (c.differences.empty()) std::printf("  the same settings\n");
    for (const SettingDifference& d : c.differences)
      std::printf("  %-6s %s %s -> %s: %s\n", to_string(d.weight), d.setting.c_str(), printable(d.a).c_str(),
                  printable(d.b).c_str(), d.consequence.c_str());
    if (c.refused()) {
      std::fprintf(stderr, "mnv2 runs: %s against %s not compared: %s\n", printable(b.name).c_str(),
                   printable(a.name).c_str(), printable(c.refusal()).c_str());
      ++refused;
      continue;
    }
    const double ta = a.report.sum_of_steps_ms, tb = b.report.sum_of_steps_ms;
    if (ta > 0 && tb > 0) {
      std::printf("  sum of layer medians %.3f ms -> %.3f ms: B/A %.3g", ta, tb, tb / ta);
      if (c.images_ratio != 1) std::printf(" per run, %.3g per image", tb / ta / c.images_ratio);
      std::printf("\n");
    }
    const std::vector<AlignedSegment> segments = align_runs(a.report, b.report);
    if (const std::string headline = difference_headline(a.report, b.report, segments); !headline.empty())
      std::printf("  %s\n", headline.c_str());
    std::printf("  %-4s %-26s %12s %12s %8s\n", "idx", "layers", "a_us", "b_us", "b/a");
    for (const AlignedSegment& seg : segments) {
      const Layer& first = a.report.topology[static_cast<size_t>(seg.first_layer)];
      std::string name = first.name;
      if (seg.layers.size() > 1) name += " +" + std::to_string(seg.layers.size() - 1);
      std::printf("  %-4d %-26s %12s %12s %8.3g%s\n", seg.first_layer, printable(name).c_str(),
                  us(seg.median_a).c_str(), us(seg.median_b).c_str(),
                  seg.median_a > 0 ? seg.median_b / seg.median_a : 0.0,
                  seg.p90_a < seg.p10_b || seg.p90_b < seg.p10_a ? "" : "  (within noise)");
    }
  }
  return refused > 0 ? 1 : 0;
}

}  // namespace mnv2::cli
