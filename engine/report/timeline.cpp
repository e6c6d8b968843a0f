// The timeline of a RunReport as tracks of bars (see mnv2/timeline.h).
#include "mnv2/timeline.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace mnv2 {

namespace {

void sort_bars(std::vector<TimelineBar>& bars) {
  // Start order; at the same start the longer bar (the parent) first, so nesting viewers see it open first.
  std::stable_sort(bars.begin(), bars.end(), [](const TimelineBar& a, const TimelineBar& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.end_ns > b.end_ns;
  });
}

TimelineBar layer_bar(const RunReport& r, const StepSpan& s, const char* category) {
  TimelineBar b;
  b.name = step_span_name(r.topology, r.steps.at(static_cast<size_t>(s.step)).layers, s.step);
  b.category = category;
  b.start_ns = s.start_ns;
  b.end_ns = std::max(s.start_ns, s.end_ns);
  b.step = s.step;
  return b;
}

bool valid_step(const RunReport& r, int step) { return step >= 0 && step < static_cast<int>(r.steps.size()); }

}  // namespace

TimelineLayout timeline_layout(const RunReport& r) {
  TimelineLayout out;
  if (r.timeline) {
    const Timeline& t = *r.timeline;
    out.has_timeline = true;
    out.description = "iteration " + std::to_string(t.iteration) + " of " + std::to_string(t.iterations) + " (" +
                      t.choice + "), " + t.clock;
    std::map<int, StepSpan> span_of;  // step -> its layer span
    for (const StepSpan& s : t.steps)
      if (valid_step(r, s.step)) span_of[s.step] = s;

    if (!t.records.empty()) {
      // CUPTI: one track per stream; a layer span goes on the stream of its first record.
      std::map<int64_t, TimelineTrack> streams;
      std::map<int, int64_t> stream_of_step;
      for (const KernelRecord& k : t.records) {
        TimelineTrack& track = streams[k.stream];
        if (track.name.empty()) {
          track.name = k.stream >= 0 ? "stream " + std::to_string(k.stream) : "stream (unknown)";
          track.kind = "stream";
        }
        TimelineBar b;
        b.name = k.name;
        b.category = k.kind;
        b.start_ns = k.start_ns;
        b.end_ns = std::max(k.start_ns, k.end_ns);
        b.grid = k.grid;
        b.block = k.block;
        b.bytes = k.bytes;
        if (valid_step(r, k.step) && span_of.count(k.step)) {
          b.step = k.step;
          b.depth = 1;
          stream_of_step.emplace(k.step, k.stream);
          // Strictly inside the parent: viewers nest X events on one track by containment.
          const StepSpan& parent = span_of[k.step];
          const int64_t start = std::clamp(b.start_ns, parent.start_ns, parent.end_ns);
          const int64_t end = std::clamp(b.end_ns, start, parent.end_ns);
          if (start != b.start_ns || end != b.end_ns) ++out.clamped;
          b.start_ns = start;
          b.end_ns = end;
        }
        track.bars.push_back(std::move(b));
      }
      for (const auto& [step, span] : span_of) {
        auto it = stream_of_step.find(step);
        TimelineTrack& track = streams[it != stream_of_step.end() ? it->second : t.records.front().stream];
        track.bars.push_back(layer_bar(r, span, "layer"));
      }
      for (auto& [id, track] : streams) {
        sort_bars(track.bars);
        out.tracks.push_back(std::move(track));
      }
    } else {
      const bool host = is_host_backend(r.backend) || t.clock == "host_clock";
      TimelineTrack main{host ? "host" : "GPU stream (cudaEvent)", host ? "host" : "stream", {}};
      for (const auto& [step, span] : span_of) main.bars.push_back(layer_bar(r, span, "layer"));
      sort_bars(main.bars);
      out.tracks.push_back(std::move(main));
      std::map<int, TimelineTrack> workers;
      for (const ThreadSpan& ts : t.threads) {
        if (!span_of.count(ts.step)) continue;
        TimelineTrack& track = workers[ts.thread];
        if (track.name.empty()) {
          track.name = "worker " + std::to_string(ts.thread);
          track.kind = "worker";
        }
        TimelineBar b = layer_bar(r, StepSpan{ts.step, ts.start_ns, ts.end_ns}, "thread");
        const StepSpan& parent = span_of[ts.step];
        const int64_t start = std::clamp(b.start_ns, parent.start_ns, parent.end_ns);
        const int64_t end = std::clamp(b.end_ns, start, parent.end_ns);
        if (start != b.start_ns || end != b.end_ns) ++out.clamped;
        b.start_ns = start;
        b.end_ns = end;
        track.bars.push_back(std::move(b));
      }
      for (auto& [thread, track] : workers) {
        sort_bars(track.bars);
        out.tracks.push_back(std::move(track));
      }
    }
  }
  // The median layout, as the trace showed before timelines: durations laid end to end, no timestamps.
  TimelineTrack summary{"median summary (end to end)", "summary", {}};
  double at = 0;
  for (const StepProfile& p : r.steps) {
    TimelineBar b;
    b.name = step_span_name(r.topology, p.layers, p.step);
    b.category = "summary";
    b.start_ns = std::llround(at);
    at += p.time_ns.median;
    b.end_ns = std::llround(at);
    b.step = p.step;
    summary.bars.push_back(std::move(b));
  }
  out.tracks.push_back(std::move(summary));
  return out;
}

}  // namespace mnv2
