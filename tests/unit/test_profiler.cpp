// Profiler and report tests on the cpu backends (no GPU needed): coverage of every layer, statistics,
// CSV/JSON/trace writing, reading reports back, and refusing malformed or newer reports. Most use cpu-ref (one
// step per layer); the oneDNN cpu backend's fused steps are checked on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// A small, quick profile of the real model at a reduced input size on `backend`, diffed against the reference.
RunReport small_profile(const std::string& backend) {
  Model model = load_onnx(main_model_path());
  ProfileConfig cfg;
  cfg.backend = backend;
  cfg.batch = 2;
  cfg.height = 96;
  cfg.width = 128;
  cfg.warmup = 1;
  cfg.iters = 4;
  RunReport r = profile(model, cfg);
  r.diff = diff_backends(model, backend, "cpu-ref", PrepareConfig{1, 96, 128}, random_input(Shape{1, 3, 96, 128}, 7));
  return r;
}

// On the reference (one step per layer).
const RunReport& cpu_report() {
  static const RunReport report = small_profile("cpu-ref");
  return report;
}

// On the oneDNN backend (fused steps).
const RunReport& fused_cpu_report() {
  static const RunReport report = small_profile("cpu");
  return report;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

TEST(Profiler, CpuCoversEveryLayerOnceWithHostClock) {
  const RunReport& r = cpu_report();
  EXPECT_EQ(r.timer, "host_clock");
  ASSERT_EQ(r.layers.size(), 99u);
  ASSERT_EQ(r.topology.size(), 99u);
  std::vector<int> covered(99, 0);
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.time_ns.n, 4) << s.name;
    EXPECT_GT(s.time_ns.median, 0) << s.name;
    EXPECT_LE(s.time_ns.min, s.time_ns.median);
    EXPECT_LE(s.time_ns.median, s.time_ns.max);
    for (int l : s.layers) covered[static_cast<size_t>(l)]++;
  }
  for (int c : covered) EXPECT_EQ(c, 1);
  EXPECT_EQ(r.end_to_end.host_ms.n, 4);
  EXPECT_FALSE(r.end_to_end.gpu_ms.has_value());
  EXPECT_GT(r.end_to_end.images_per_s, 0);
  EXPECT_GT(r.sum_of_steps_ms, 0);
  double share = 0;
  for (const auto& s : r.steps) share += s.share;
  EXPECT_NEAR(share, 1.0, 1e-9);
  double kind_share = 0;
  for (const auto& g : r.per_kind) kind_share += g.share;
  EXPECT_NEAR(kind_share, 1.0, 1e-9);
  EXPECT_EQ(r.per_block.size(), 19u);  // stem, 17 bottlenecks, head
  int kind_layers = 0;
  for (const auto& g : r.per_kind) {
    kind_layers += g.layers;
    EXPECT_EQ(g.steps, g.layers) << g.name;  // the cpu backend runs one step per layer
    EXPECT_EQ(g.fused_layers, 0) << g.name;
  }
  EXPECT_EQ(kind_layers, 99);
  EXPECT_GT(r.memory.total(), 0);
  // Conv layers have derived rates.
  EXPECT_GT(r.steps[0].gflops, 0);
  EXPECT_GT(r.steps[0].gbytes_per_s, 0);
}

// The oneDNN backend runs each ReLU6 and residual add inside its convolution's step: every layer is still
// covered once, the kinds say which run fused, the diff compares the materialised layers only, and the CSV
// keeps one row per layer with the header's fields (a fused layer's row carries no time of its own).
TEST(Profiler, OnednnFusedStepsCoverEveryLayerOnce) {
  const RunReport& r = fused_cpu_report();
  EXPECT_EQ(r.timer, "host_clock");
  ASSERT_EQ(r.layers.size(), 99u);
  EXPECT_LE(r.steps.size(), 54u);
  std::vector<int> covered(99, 0);
  for (const auto& s : r.steps) {
    EXPECT_GT(s.time_ns.median, 0) << s.name;
    for (int l : s.layers) covered[static_cast<size_t>(l)]++;
  }
  for (int c : covered) EXPECT_EQ(c, 1);
  for (const auto& g : r.per_kind) {
    if (g.name == "ReLU6") EXPECT_EQ(g.fused_layers, 35);
    if (g.name == "ResidualAdd") EXPECT_EQ(g.fused_layers, 10);
    if (g.name == "Conv2d") EXPECT_EQ(g.layers, 52);  // a depthwise one may run inside an expansion's step
  }
  const DiffReport& d = *r.diff;
  EXPECT_TRUE(d.top5_agree);
  EXPECT_EQ(d.first_divergent_layer, -1);
  EXPECT_LT(d.logits.rel_l2, 1e-5);
  int compared = 0;
  for (const auto& l : d.layers) compared += l.compared ? 1 : 0;
  // One materialised layer per step of the diff's own run (batch 1: its depthwise fusions may differ).
  EXPECT_GE(compared, 38);
  EXPECT_LE(compared, 54);

  std::istringstream csv(report_csv({r}));
  std::string line;
  std::getline(csv, line);
  const size_t header = split_csv_line(line).size();
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_EQ(split_csv_line(line).size(), header) << line;
  }
  EXPECT_EQ(rows, 99);
}

TEST(Profiler, DiffOfABackendWithItselfIsExact) {
  const DiffReport& d = *cpu_report().diff;
  EXPECT_TRUE(d.top5_agree);
  EXPECT_EQ(d.first_divergent_layer, -1);
  EXPECT_EQ(d.logits.rel_l2, 0.0);
  for (const auto& l : d.layers) {
    EXPECT_TRUE(l.compared);
    EXPECT_EQ(l.error.max_abs, 0.0);
  }
}

TEST(Profiler, RejectsBadConfigs) {
  Model model = builtin_mobilenet_v2();
  ProfileConfig cfg;
  cfg.iters = 0;
  EXPECT_THROW(profile(model, cfg), UsageError);
  cfg.iters = 1;
  cfg.batch = 0;
  EXPECT_THROW(profile(model, cfg), UsageError);
  cfg.batch = 1;
  cfg.backend = "nope";
  EXPECT_THROW(profile(model, cfg), UsageError);
  cfg.backend = "cpu";
  cfg.height = cfg.width = 4;  // the network cannot shrink a 4x4 map through five stride-2 stages
  EXPECT_THROW(profile(model, cfg), Error);
}

TEST(Profiler, GraphReplayNeedsABackendWithAGraph) {
  Model model = builtin_mobilenet_v2();
  ProfileConfig cfg;
  cfg.height = cfg.width = 64;
  cfg.warmup = 0;
  cfg.iters = 1;
  cfg.graph_replay = true;  // the cpu backend has no CUDA graph
  try {
    profile(model, cfg);
    ADD_FAILURE() << "a graph replay of the cpu backend must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("graph"), std::string::npos) << e.what();
  }
}

// compare's setting: a backend without a graph is profiled layer by layer, and its report says so.
TEST(Profiler, WithoutAGraphLayersRunOneByOneWhenAllowed) {
  Model model = builtin_mobilenet_v2();
  ProfileConfig cfg;
  cfg.height = cfg.width = 64;
  cfg.warmup = 0;
  cfg.iters = 1;
  cfg.graph_replay = true;
  cfg.layers_without_graph = true;
  cfg.backend = "cpu-ref";  // one step per layer
  const RunReport r = profile(model, cfg);
  EXPECT_FALSE(r.config.graph_replay);
  EXPECT_EQ(r.steps.size(), model.layers.size());
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(),
                          [](const std::string& w) {
                            return w.find("no CUDA graph: its layers were profiled one by one") != std::string::npos;
                          }))
      << "warnings: " << r.warnings.size();
}

TEST(Profiler, CancelThrows) {
  Model model = builtin_mobilenet_v2();
  ProfileConfig cfg;
  cfg.height = cfg.width = 64;
  cfg.warmup = 0;
  cfg.iters = 50;
  EXPECT_THROW(profile(model, cfg, [](const std::string&, int done, int) { return done < 3; }), Error);
}

TEST(Report, CsvHasAHeaderAndOneRowPerLayer) {
  const RunReport& r = cpu_report();
  std::istringstream in(report_csv({r, r}));
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  for (const char* col : {"run_id",           "backend",   "layer_index", "layer_name",  "kind",     "fused_group",
                          "output_shape",     "params",    "macs",        "bytes",       "timer",    "n",
                          "p10_ns",           "median_ns", "p90_ns",      "p99_ns",      "mean_ns",  "std_ns",
                          "min_ns",           "max_ns",    "share",       "gflop_s",     "gbytes_s", "kernel_names",
                          "kernels_per_iter", "grid",      "rel_l2_err",  "max_abs_err", "cosine"})
    EXPECT_NE(std::find(header.begin(), header.end(), col), header.end()) << col;
  int rows = 0;
  const size_t median_col = std::find(header.begin(), header.end(), "median_ns") - header.begin();
  while (std::getline(in, line)) {
    auto cells = split_csv_line(line);
    ASSERT_EQ(cells.size(), header.size()) << line;
    EXPECT_GT(std::stoll(cells[median_col]), 0) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 198);
}

TEST(Report, JsonRoundTrips) {
  const RunReport& r = cpu_report();
  TempDir tmp;
  write_json_report(tmp.file("r.json"), {r});
  std::vector<RunReport> back = read_reports_file(tmp.file("r.json"));
  ASSERT_EQ(back.size(), 1u);
  const RunReport& b = back[0];
  EXPECT_EQ(b.run_id, r.run_id);
  EXPECT_EQ(b.backend, "cpu-ref");
  EXPECT_EQ(b.config.batch, 2);
  EXPECT_EQ(b.config.height, 96);
  EXPECT_EQ(b.model_checksum, r.model_checksum);
  EXPECT_TRUE(b.model_data_files.empty());  // a model without external data writes none
  EXPECT_EQ(b.execution, "layer by layer");
  EXPECT_FALSE(b.config.graph_replay);
  ASSERT_EQ(b.steps.size(), r.steps.size());
  for (size_t i = 0; i < r.steps.size(); ++i) {
    EXPECT_EQ(b.steps[i].time_ns.median, r.steps[i].time_ns.median);
    EXPECT_EQ(b.steps[i].layers, r.steps[i].layers);
  }
  ASSERT_EQ(b.per_kind.size(), r.per_kind.size());
  for (size_t i = 0; i < r.per_kind.size(); ++i) {
    EXPECT_EQ(b.per_kind[i].name, r.per_kind[i].name);
    EXPECT_EQ(b.per_kind[i].layers, r.per_kind[i].layers);
    EXPECT_EQ(b.per_kind[i].steps, r.per_kind[i].steps);
    EXPECT_EQ(b.per_kind[i].fused_layers, r.per_kind[i].fused_layers);
  }
  ASSERT_EQ(b.topology.size(), 99u);
  EXPECT_EQ(describe(b.topology[0]), describe(r.topology[0]));
  EXPECT_EQ(b.layer_stats[98].output, r.layer_stats[98].output);
  ASSERT_TRUE(b.diff.has_value());
  EXPECT_EQ(b.diff->layers.size(), 99u);
  EXPECT_TRUE(b.diff->top5_agree);
  EXPECT_EQ(report_csv(back), report_csv({r}));
}

TEST(Report, GraphReplayExecutionRoundTrips) {
  RunReport r = cpu_report();
  r.execution = "graph replay";
  TempDir tmp;
  write_json_report(tmp.file("g.json"), {r});
  const std::vector<RunReport> back = read_reports_file(tmp.file("g.json"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].execution, "graph replay");
  EXPECT_TRUE(back[0].config.graph_replay);
}

// The options a backend resolved (cuda-fusion auto -> block) travel with the report; an older report has none; a
// file naming an unknown option or a value outside the option's choices is refused.
TEST(Report, ResolvedOptionsRoundTripAndBadOnesAreRefused) {
  RunReport r = cpu_report();
  EXPECT_FALSE(reports_json({r}).at("runs")[0].at("metadata").contains("resolved_options"));
  r.resolved_options = {{"cuda-fusion", "auto", "block", "auto: block on sm_90, fp16, batch 1..256: measured"}};
  json::Json j = reports_json({r});
  EXPECT_EQ(j.at("runs")[0].at("metadata").at("resolved_options").at("cuda-fusion").at("resolved"), "block");
  EXPECT_EQ(reports_from_json(j)[0].resolved_options, r.resolved_options);
  json::Json bad = j;
  bad.at("runs")[0].at("metadata").at("resolved_options").at("cuda-fusion")["resolved"] = "sideways";
  EXPECT_THROW(reports_from_json(bad), Error);
  bad = j;
  bad.at("runs")[0].at("metadata")["resolved_options"] =
      json::Json{{"no-such-option", j.at("runs")[0].at("metadata").at("resolved_options").at("cuda-fusion")}};
  EXPECT_THROW(reports_from_json(bad), Error);
  bad = j;
  bad.at("runs")[0].at("metadata")["resolved_options"] = "block";
  EXPECT_THROW(reports_from_json(bad), Error);
}

TEST(Report, KernelsPerRunRoundTripsAndOldReportsOpenWithout) {
  RunReport r = cpu_report();
  EXPECT_EQ(r.kernels_per_run, -1);  // the cpu backends do not count kernels
  json::Json none = reports_json({r});
  EXPECT_FALSE(none.at("runs")[0].at("metadata").contains("kernels_per_run")) << "no key where nothing was counted";
  r.kernels_per_run = 57;
  json::Json j = reports_json({r});
  EXPECT_EQ(j.at("runs")[0].at("metadata").at("kernels_per_run").get<int64_t>(), 57);
  EXPECT_EQ(reports_from_json(j)[0].kernels_per_run, 57);
  // A report written before the count existed: no key, read as "not counted".
  j.at("runs")[0].at("metadata").erase("kernels_per_run");
  EXPECT_EQ(reports_from_json(j)[0].kernels_per_run, -1);
  // A file's nonsense is refused, not taken.
  j.at("runs")[0].at("metadata")["kernels_per_run"] = -3;
  EXPECT_THROW(reports_from_json(j), Error);
}

TEST(Report, KernelRecordsRoundTripAndBecomeTraceEvents) {
  RunReport r = cpu_report();
  r.timer = "cupti_kernel";
  Timeline t;
  t.clock = "cupti_kernel";
  t.iteration = 1;
  t.iterations = 4;
  t.choice = "median per-layer total";
  t.steps = {StepSpan{3, 1000, 4500}};
  KernelRecord k;
  k.name = "void kernel<float>(float*)";
  k.kind = "kernel";
  k.step = 3;
  k.start_ns = 1000;
  k.end_ns = 4500;
  k.grid = {128, 2, 1};
  k.block = {256, 1, 1};
  k.stream = 7;
  k.correlation = 42;
  t.records = {k};
  k.kind = "memcpy";
  k.name = "memcpy HtoD";
  k.step = -1;
  k.start_ns = 0;
  k.end_ns = 900;
  k.bytes = 602112;
  t.records.push_back(k);
  r.timeline = t;
  auto back = reports_from_json(reports_json({r}));
  ASSERT_TRUE(back[0].timeline.has_value());
  const Timeline& b = *back[0].timeline;
  ASSERT_EQ(b.records.size(), 2u);
  EXPECT_EQ(b.records[0].name, "void kernel<float>(float*)");
  EXPECT_EQ(b.records[0].grid[1], 2);
  EXPECT_EQ(b.records[0].stream, 7);
  EXPECT_EQ(b.records[0].correlation, 42);
  EXPECT_EQ(b.records[1].bytes, 602112);
  EXPECT_EQ(b.iteration, 1);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].end_ns, 4500);
  json::Json tr = json::parse(trace_json({r}));
  int kernels = 0, layers = 0;
  for (const auto& e : tr.at("traceEvents")) {
    if (!e.contains("cat")) continue;
    if (e.at("cat").get<std::string>() == "kernel") {
      ++kernels;
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 1.0);  // microseconds from the iteration's first record
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 3.5);
      EXPECT_EQ(e.at("args").at("layers")[0].get<int64_t>(), 3);
    }
    if (e.at("cat").get<std::string>() == "layer") ++layers;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(layers, 1);  // only the step that launched work gets a span
}

TEST(Report, TraceHasCompleteEvents) {
  const RunReport& r = cpu_report();
  ASSERT_TRUE(r.timeline.has_value());
  json::Json t = json::parse(trace_json({r}));
  int layers = 0, summary = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph").get<std::string>() != "X") continue;
    EXPECT_GE(e.at("dur").get<double>(), 0);
    layers += e.at("cat").get<std::string>() == "layer";
    summary += e.at("cat").get<std::string>() == "summary";
  }
  EXPECT_EQ(layers, 99);   // one real span per step of the chosen iteration
  EXPECT_EQ(summary, 99);  // and the median layout, end to end
}

TEST(Report, RefusesMalformedTruncatedAndNewer) {
  const RunReport& r = cpu_report();
  TempDir tmp;
  const std::string good = json::dump(reports_json({r}), 1);
  write_file(tmp.file("trunc.json"), good.substr(0, good.size() / 2));
  EXPECT_THROW(read_reports_file(tmp.file("trunc.json")), Error);
  write_file(tmp.file("other.json"), R"({"hello": 1})");
  EXPECT_THROW(read_reports_file(tmp.file("other.json")), Error);
  json::Json newer = reports_json({r});
  newer["schema_version"] = kReportSchemaVersion + 1;
  write_file(tmp.file("newer.json"), json::dump(newer));
  try {
    read_reports_file(tmp.file("newer.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("newer.json"), std::string::npos) << e.what();
  }
  json::Json bad_step = reports_json({r});
  bad_step["runs"][0]["layers"][5]["step"] = 10000;
  EXPECT_THROW(reports_from_json(bad_step), Error);
  EXPECT_THROW(read_reports_file(tmp.file("missing.json")), Error);
}

TEST(Report, FailedWriteLeavesNothing) {
  TempDir tmp;
  EXPECT_THROW(write_csv_report(tmp.file("no/dir/r.csv"), {cpu_report()}), Error);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

// The cudnn backend's options travel with a cudnn report; older reports without them read as the defaults.
TEST(Report, CudnnOptionsRoundTripAndOldReportsStillOpen) {
  RunReport r = cpu_report();
  r.backend = "cudnn";
  r.config.cudnn.variant = CudnnOptions::Variant::naive;
  r.config.cudnn.graph = CudnnOptions::Graph::off;
  r.config.cudnn.layout = CudnnOptions::Layout::nhwc;
  json::Json j = reports_json({r});
  std::vector<RunReport> back = reports_from_json(j);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].config.cudnn, r.config.cudnn);
  json::Json& meta = j["runs"][0]["metadata"];
  ASSERT_TRUE(meta.contains("cudnn_options"));
  ASSERT_TRUE(meta.contains("options"));
  // Without the fields (an older report): the defaults.
  meta.erase("cudnn_options");
  meta.erase("options");
  back = reports_from_json(j);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].config.cudnn, CudnnOptions{});
  // A bad value is a clear error, not a crash.
  meta["cudnn_options"] = json::Json{{"variant", "turbo"}, {"graph", "auto"}, {"layout", "auto"}};
  EXPECT_THROW(reports_from_json(j), Error);
  meta.erase("cudnn_options");
  meta["options"] = json::Json{{"cudnn-variant", json::Json{{"value", "turbo"}, {"source", "flag"}}}};
  EXPECT_THROW(reports_from_json(j), Error);
}

}  // namespace
}  // namespace mnv2::test
