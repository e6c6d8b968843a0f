// The timeline (issue 15): the profiler keeps one iteration at its own timestamps (the one whose per-layer
// total is the median), reports write and read it back, old reports still open, and the trace export lays it
// out as tracks with layer names, nesting and a median summary track. On the cpu backends, no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "mnv2/error.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/timeline.h"

namespace mnv2::test {
namespace {

// The built-in topology at a small size on `backend`: quick, and every layer has its structural name.
RunReport small_run(const std::string& backend, int iters) {
  static const Model model = builtin_mobilenet_v2();
  ProfileConfig cfg;
  cfg.backend = backend;
  cfg.height = 64;
  cfg.width = 64;
  cfg.warmup = 1;
  cfg.iters = iters;
  return profile(model, cfg);
}

const RunReport& ref_run() {
  static const RunReport r = small_run("cpu-ref", 5);
  return r;
}

void expect_host_timeline_consistent(const RunReport& r) {
  ASSERT_TRUE(r.timeline.has_value());
  const Timeline& t = *r.timeline;
  EXPECT_EQ(t.clock, "host_clock");
  EXPECT_EQ(t.iterations, r.config.iters);
  ASSERT_GE(t.iteration, 0);
  EXPECT_LT(t.iteration, t.iterations);
  EXPECT_EQ(t.choice, "median per-layer total");
  ASSERT_EQ(t.steps.size(), r.steps.size());  // every step ran and has its span
  std::map<int, StepSpan> span_of;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const StepSpan& s = t.steps[i];
    EXPECT_GE(s.start_ns, 0);
    EXPECT_GE(s.end_ns, s.start_ns);
    if (i > 0) EXPECT_GE(s.start_ns, t.steps[i - 1].end_ns) << "steps run one after another: gaps are >= 0";
    span_of[s.step] = s;
  }
  EXPECT_EQ(span_of.size(), r.steps.size());
  for (const ThreadSpan& th : t.threads) {
    ASSERT_TRUE(span_of.count(th.step));
    EXPECT_GE(th.start_ns, span_of[th.step].start_ns) << "worker " << th.thread << " of step " << th.step;
    EXPECT_LE(th.end_ns, span_of[th.step].end_ns) << "worker " << th.thread << " of step " << th.step;
    EXPECT_LE(th.start_ns, th.end_ns);
  }
}

TEST(Timeline, CpuReferenceKeepsTheMedianIterationAtItsTimestamps) {
  const RunReport& r = ref_run();
  expect_host_timeline_consistent(r);
  const Timeline& t = *r.timeline;
  // The chosen iteration's total is its steps' sum, and the median is bounded by the step medians' spread.
  double sum = 0;
  for (const StepSpan& s : t.steps) sum += static_cast<double>(s.end_ns - s.start_ns);
  EXPECT_NEAR(t.total_ns, sum, 1.0);
  EXPECT_GT(t.median_total_ns, 0);
  // Five iterations: the median is one of them, so the chosen one is it exactly.
  EXPECT_DOUBLE_EQ(t.total_ns, t.median_total_ns);
  // The reference kernels split their work over OpenMP workers: every worker that ran noted its part, and
  // every step has at least the first worker's.
  ASSERT_FALSE(t.threads.empty());
  std::map<int, int> workers_of_step;
  for (const ThreadSpan& th : t.threads) ++workers_of_step[th.step];
  EXPECT_EQ(workers_of_step.size(), r.steps.size());
  const TimelineLayout layout = timeline_layout(r);
  EXPECT_EQ(layout.tracks.at(1).name, "worker 0");
}

TEST(Timeline, OnednnBackendHasLayerSpansToo) { expect_host_timeline_consistent(small_run("cpu", 3)); }

TEST(Timeline, SpanNamesAreLayerNames) {
  const RunReport& r = ref_run();
  EXPECT_EQ(step_span_name(r.topology, {0}, 0), "stem.conv");
  EXPECT_EQ(step_span_name(r.topology, {0, 1}, 0), "stem.conv+stem.relu6");
  EXPECT_EQ(step_span_name(r.topology, {5000}, 7), "step 7");
  const TimelineLayout layout = timeline_layout(r);
  ASSERT_TRUE(layout.has_timeline);
  ASSERT_GE(layout.tracks.size(), 2u);
  EXPECT_EQ(layout.tracks.front().name, "host");
  EXPECT_EQ(layout.tracks.back().kind, "summary");
  EXPECT_NE(layout.tracks.back().name.find("median summary"), std::string::npos);
  const auto& bars = layout.tracks.front().bars;
  ASSERT_EQ(bars.size(), 99u);
  EXPECT_EQ(bars.front().name, "stem.conv");
  EXPECT_EQ(bars.back().name, "classifier");
  EXPECT_EQ(layout.clamped, 0);
}

// Every X event of one track: non-decreasing start times, and every event of depth 1 (a record or a worker's
// part) inside an enclosing layer span on its track.
TEST(Timeline, TraceTracksAreOrderedNestedAndNamed) {
  RunReport r = ref_run();
  const json::Json trace = json::parse(trace_json({r}));
  std::map<int, std::string> track_names;
  std::map<int, std::vector<json::Json>> by_tid;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      track_names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
    if (e.at("ph") == "X") by_tid[e.at("tid").get<int>()].push_back(e);
  }
  bool summary = false, host = false;
  for (const auto& [tid, name] : track_names) {
    summary = summary || name.find("median summary") != std::string::npos;
    host = host || name == "host";
  }
  EXPECT_TRUE(summary);
  EXPECT_TRUE(host);
  for (const auto& [tid, events] : by_tid)
    for (size_t i = 1; i < events.size(); ++i)
      EXPECT_GE(events[i].at("ts").get<double>(), events[i - 1].at("ts").get<double>()) << track_names[tid];
  // The names of the layer spans are the topology's.
  std::vector<std::string> names;
  for (const auto& e : by_tid.begin()->second) names.push_back(e.at("name").get<std::string>());
  EXPECT_NE(std::find(names.begin(), names.end(), "block2.expand"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "Conv2d 0"), names.end());
}

// A CUPTI-style timeline: records nest under their layer span on their stream's track; one that sticks out
// of its span (clocks a few ns apart) is clamped into it and counted.
TEST(Timeline, GpuRecordsNestUnderLayersPerStreamAndAreClamped) {
  RunReport r = ref_run();
  r.backend = "cuda";
  r.timer = "cupti_kernel";
  Timeline t;
  t.clock = "cupti_kernel";
  t.iteration = 0;
  t.iterations = 1;
  t.choice = "median per-layer total";
  t.steps = {StepSpan{0, 1000, 3000}, StepSpan{1, 3500, 5000}};
  KernelRecord up;
  up.name = "memcpy HtoD";
  up.kind = "memcpy";
  up.step = -1;
  up.start_ns = 0;
  up.end_ns = 800;
  up.bytes = 4096;
  up.stream = 13;
  KernelRecord a;
  a.name = "conv_kernel";
  a.kind = "kernel";
  a.step = 0;
  a.start_ns = 1000;
  a.end_ns = 3000;
  a.grid = {4, 1, 1};
  a.block = {128, 1, 1};
  a.stream = 13;
  KernelRecord b = a;
  b.step = 1;
  b.start_ns = 3490;  // 10 ns before its layer's span: clamped
  b.end_ns = 5000;
  KernelRecord other = a;  // on a second stream, outside any layer
  other.step = -1;
  other.stream = 14;
  t.records = {up, a, b, other};
  r.timeline = t;
  const TimelineLayout layout = timeline_layout(r);
  ASSERT_EQ(layout.tracks.size(), 3u);  // two streams and the summary
  EXPECT_EQ(layout.tracks[0].name, "stream 13");
  EXPECT_EQ(layout.tracks[1].name, "stream 14");
  EXPECT_EQ(layout.clamped, 1);
  const auto& bars = layout.tracks[0].bars;
  ASSERT_EQ(bars.size(), 5u);  // upload, 2 layers, 2 kernels
  EXPECT_EQ(bars[1].name, "stem.conv");
  EXPECT_EQ(bars[1].category, "layer");
  EXPECT_EQ(bars[2].name, "conv_kernel");  // the layer opens before its kernel that starts with it
  EXPECT_EQ(bars[2].depth, 1);
  for (const TimelineBar& k : bars)
    if (k.depth == 1) {
      const auto parent = std::find_if(bars.begin(), bars.end(), [&](const TimelineBar& p) {
        return p.depth == 0 && p.step == k.step && p.start_ns <= k.start_ns && k.end_ns <= p.end_ns;
      });
      EXPECT_NE(parent, bars.end()) << k.name << " of step " << k.step << " is outside its layer";
    }
  const std::string text = trace_json({r});
  EXPECT_NE(text.find("1 records clamped"), std::string::npos);
  // In the trace: every kernel lies inside a layer event of its own track (viewers nest by containment).
  std::map<int, std::vector<json::Json>> layers_of_tid;
  const json::Json trace = json::parse(text);
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("cat") == "layer") layers_of_tid[e.at("tid").get<int>()].push_back(e);
  int nested = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") != "kernel" || e.at("args").at("step").get<int>() < 0) continue;
    const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
    bool inside = false;
    for (const auto& l : layers_of_tid[e.at("tid").get<int>()]) {
      const double lts = l.at("ts").get<double>();
      inside = inside || (lts <= ts && end <= lts + l.at("dur").get<double>());
    }
    EXPECT_TRUE(inside) << e.dump();
    ++nested;
  }
  EXPECT_EQ(nested, 2);
  EXPECT_NE(text.find("\"grid\":[4,1,1]"), std::string::npos);
}

// Reports written before timelines: a CUPTI report's "kernel_records" become a timeline of the last
// iteration; a host report has none, and the trace then holds only the summary track.
TEST(Timeline, OldReportsStillOpen) {
  RunReport r = ref_run();
  json::Json j = reports_json({r});
  json::Json& run = j.at("runs").at(0);
  run.erase("timeline");
  {
    const auto back = reports_from_json(j);
    EXPECT_FALSE(back[0].timeline.has_value());
    const TimelineLayout layout = timeline_layout(back[0]);
    EXPECT_FALSE(layout.has_timeline);
    ASSERT_EQ(layout.tracks.size(), 1u);
    EXPECT_EQ(layout.tracks[0].kind, "summary");
    EXPECT_EQ(layout.tracks[0].bars.size(), 99u);
  }
  run["kernel_records"] = json::Json::array();
  run["kernel_records"].push_back(json::Json{{"name", "k"},
                                             {"kind", "kernel"},
                                             {"step", 2},
                                             {"start_ns", 100},
                                             {"end_ns", 400},
                                             {"grid", {1, 1, 1}},
                                             {"block", {32, 1, 1}},
                                             {"bytes", 0}});
  const auto back = reports_from_json(j);
  ASSERT_TRUE(back[0].timeline.has_value());
  const Timeline& t = *back[0].timeline;
  EXPECT_EQ(t.choice, "last iteration");
  EXPECT_EQ(t.iteration, r.config.iters - 1);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].step, 2);
  EXPECT_EQ(t.records.at(0).stream, -1);
}

// The backend side: cpu-ref reports each worker's part between the step's step_begin and step_end, on the
// steady clock, only to an observer that asks (the un-instrumented phase's run timer does not).
class SpanRecorder : public StepObserver {
 public:
  explicit SpanRecorder(bool wants) : wants_(wants) {}
  void step_begin(int step, void*) override {
    open_ = step;
    begin_ns_ = now_ns();
  }
  void step_end(int step, void*) override {
    EXPECT_EQ(step, open_);
    open_ = -1;
  }
  bool wants_thread_spans() const override { return wants_; }
  void thread_span(int step, int thread, int64_t begin_ns, int64_t end_ns) override {
    EXPECT_EQ(step, open_) << "a worker span outside its step";
    EXPECT_GE(thread, 0);
    EXPECT_GE(begin_ns, begin_ns_) << "step " << step;
    EXPECT_LE(begin_ns, end_ns) << "step " << step;
    EXPECT_LE(end_ns, now_ns()) << "step " << step;
    ++calls;
  }
  int calls = 0;

 private:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  bool wants_;
  int open_ = -1;
  int64_t begin_ns_ = 0;
};

TEST(Timeline, CpuReferenceReportsWorkerSpansOnlyWhenAsked) {
  const Model model = builtin_mobilenet_v2();
  auto net = make_backend("cpu-ref")->prepare(model, PrepareConfig{1, 64, 64});
  const Tensor input = random_input(Shape{1, 3, 64, 64}, 1);
  SpanRecorder quiet(false), asking(true);
  RunOptions options;
  options.observer = &quiet;
  net->run(input, options);
  EXPECT_EQ(quiet.calls, 0);
  options.observer = &asking;
  net->run(input, options);
  EXPECT_GE(asking.calls, static_cast<int>(net->steps().size()));  // every step has at least one worker
}

TEST(Timeline, RoundTripsThroughJson) {
  const RunReport& r = ref_run();
  const auto back = reports_from_json(reports_json({r}));
  ASSERT_TRUE(back[0].timeline.has_value());
  const Timeline& a = *r.timeline;
  const Timeline& b = *back[0].timeline;
  EXPECT_EQ(a.iteration, b.iteration);
  EXPECT_EQ(a.clock, b.clock);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].step, b.steps[i].step);
    EXPECT_EQ(a.steps[i].start_ns, b.steps[i].start_ns);
    EXPECT_EQ(a.steps[i].end_ns, b.steps[i].end_ns);
  }
  EXPECT_EQ(a.threads.size(), b.threads.size());
}

}  // namespace
}  // namespace mnv2::test
