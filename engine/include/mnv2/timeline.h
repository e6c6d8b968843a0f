// A run's timeline laid out as tracks of bars, the one layout the trace export (mnv2/report.h trace_json) and
// the app's Timeline page both show: one track per GPU stream (CUPTI), or the GPU stream of the cudaEvent
// timer, or "host" plus one track per worker thread (host backends); and a median summary track that lays
// the step medians end to end (durations, not timestamps). Layer spans are named after their layers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mnv2/profiler.h"

namespace mnv2 {

struct TimelineBar {
  std::string name;      // the layer ("stem.conv"), the kernel, "memcpy HtoD", "memset"
  std::string category;  // "layer", "kernel", "memcpy", "memset", "thread" (a worker's part of a layer), "summary"
  int64_t start_ns = 0;  // from the timeline's origin (summary: from the first step's start, end to end)
  int64_t end_ns = 0;
  int depth = 0;  // 0: a layer span (or a record outside any layer); 1: a record nested inside its layer span
  int step = -1;  // the step it belongs to; -1 outside any step (input upload, logits download)
  std::array<int, 3> grid{0, 0, 0};   // kernels
  std::array<int, 3> block{0, 0, 0};  // kernels
  int64_t bytes = 0;                  // copies and memsets
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct TimelineTrack {
  std::string name;  // "stream 7", "GPU stream (cudaEvent)", "host", "worker 1", "median summary (end to end)"
  std::string kind;  // "stream", "host", "worker", "summary"
  std::vector<TimelineBar> bars;  // by start time; a parent before the children that start with it
};

struct TimelineLayout {
  std::vector<TimelineTrack> tracks;  // timestamped tracks first, the summary track last
  bool has_timeline = false;          // false: the report has no timeline (older report); summary track only
  std::string description;            // "iteration 42 of 100 (median per-layer total), host_clock"
  // Records that lay partly outside their layer span and were clamped into it (clocks that disagree by a
  // few ns, or a report edited by hand); 0 for what the profiler writes.
  int clamped = 0;
};

TimelineLayout timeline_layout(const RunReport& report);

}  // namespace mnv2
