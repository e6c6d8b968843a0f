// What several of mnv2's commands print the same way (see output.h).
#include "output.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "mnv2/memory.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/stats.h"

namespace mnv2::cli {

void print_warnings(std::ostream& out, const Model& model, const char* prefix) {
  for (const auto& w : model.warnings) out << prefix << printable(w) << "\n";
}

void print_reliability(const Reliability& rel, const char* indent) {
  std::printf("%sreliability: %s\n", indent,
              rel.verdict() == Verdict::unreliable ? "UNRELIABLE (see below; figures not to be trusted)"
                                                   : to_string(rel.verdict()));
  for (const auto& f : rel.findings) std::printf("%s  %s: %s\n", indent, to_string(f.verdict), f.reason.c_str());
}

std::string us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", ns / 1000.0);
  return buf;
}

void print_summary(const RunReport& r) {
  const EndToEnd& e = r.end_to_end;
  std::printf("%s: %s\n", r.backend.c_str(), r.backend_description.c_str());
  std::printf("  end to end (un-instrumented, %lld runs): host median %.3f ms (p90 %.3f, min %.3f, cv %.3f)",
              static_cast<long long>(e.host_ms.n), e.host_ms.median, e.host_ms.p90, e.host_ms.min, e.host_ms.cv);
  if (e.gpu_ms) std::printf("; GPU median %.3f ms (p90 %.3f)", e.gpu_ms->median, e.gpu_ms->p90);
  std::printf("; %.1f images/s\n", e.images_per_s);
  std::printf(
      "  per layer (%s, %s, %d runs): sum of layer medians %.3f ms; gap to end to end %.3f ms"
      " (instrumentation, launch gaps, idle GPU, copies)\n",
      r.timer.c_str(), r.execution.c_str(), r.config.iters, r.sum_of_steps_ms, r.gap_ms);
  std::printf("  memory held: %s\n", describe_memory(r.memory).c_str());
  if (r.timeline)
    std::printf("  timeline: iteration %d of %d (%s), %zu layer spans at their own timestamps (--trace, --json)\n",
                r.timeline->iteration, r.timeline->iterations, r.timeline->choice.c_str(), r.timeline->steps.size());
  if (r.sm_clock_mhz_start > 0)
    std::printf("  SM clock: %d MHz at start, %d MHz at end\n", r.sm_clock_mhz_start, r.sm_clock_mhz_end);
  int disagree = 0;
  std::vector<double> gaps;
  for (const auto& p : r.steps) {
    if (!p.event_ns) continue;
    disagree += p.timers_disagree ? 1 : 0;
    gaps.push_back(p.event_ns->median - p.time_ns.median);
  }
  if (!gaps.empty()) {
    const Summary g = summarize(gaps);
    std::printf(
        "  two-timer check: %d of %zu layers differ by more than the event resolution (0.5 us) between"
        " cudaEvent and CUPTI; event minus CUPTI median %.2f us (max %.2f us): launch gaps the events include\n",
        disagree, gaps.size(), g.median / 1000.0, g.max / 1000.0);
  }
  std::string kinds;
  for (const auto& g : r.per_kind) {
    char buf[160];
    if (g.steps == 0 && g.fused_layers > 0)
      std::snprintf(buf, sizeof buf, "%s%s fused (all %d layers run inside other kinds' steps)",
                    kinds.empty() ? "" : ", ", g.name.c_str(), g.fused_layers);
    else
      std::snprintf(buf, sizeof buf, "%s%s %.3f ms (%.1f%%)", kinds.empty() ? "" : ", ", g.name.c_str(),
                    g.median_ns / 1e6, g.share * 100);
    kinds += buf;
  }
  std::printf("  per kind: %s\n", kinds.c_str());
  for (const auto& w : r.warnings) std::printf("  WARNING: %s\n", w.c_str());
  print_reliability(r.reliability, "  ");
}

namespace {
int g_progress_fd = -1;
}  // namespace

void set_progress_fd(int fd) { g_progress_fd = fd; }

ProfileProgress stderr_progress(const std::string& backend) {
  const bool tty = isatty(2);
  auto last_phase = std::make_shared<std::string>();
  return [tty, backend, last_phase](const std::string& phase, int done, int total) {
    if (g_progress_fd >= 0) {
      const std::string line =
          "P " + std::to_string(done) + " " + std::to_string(total) + " " + backend + " " + phase + "\n";
      if (::write(g_progress_fd, line.data(), line.size()) < 0) g_progress_fd = -1;
    }
    if (tty) {
      std::cerr << "\r\033[K" << backend << " " << phase << ": " << done << "/" << total << std::flush;
      if (done == total) std::cerr << "\r\033[K";
    } else if (phase != *last_phase) {
      std::cerr << backend << ": " << phase << " (" << total << " runs)\n";
      *last_phase = phase;
    }
    return true;
  };
}

void put_reports(const Args& args, const std::vector<RunReport>& reports) {
  if (args.wants("--csv")) args.put("--csv", report_csv(reports));
  if (args.wants("--json")) args.put("--json", reports_json_text(reports));
  if (args.wants("--trace")) args.put("--trace", trace_json(reports));
}

}  // namespace mnv2::cli
