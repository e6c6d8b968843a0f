// Hostile report and tensor files, and writes that fail: read_reports_file refuses malformed, truncated,
// newer, wrongly typed and out-of-range reports with one line naming the file, never crashes on deep
// nesting or huge numbers, never reads what is not a regular file, and sizes nothing by the file's
// claims; a failed write never replaces a good file or leaves a temporary behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/csv.h"
#include "mnv2/error.h"
#include "mnv2/eval_report.h"
#include "mnv2/json_io.h"
#include "mnv2/memory_report.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/roofline_report.h"
#include "mnv2/stats.h"
#include "mnv2/tensor.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// A real report of a three-layer model: profiled on the cpu backend, with a diff and two kernel records so
// that every section of the format is present.
const std::vector<RunReport>& sample_reports() {
  static const std::vector<RunReport> reports = [] {
    const Model m = three_layer_model();
    ProfileConfig cfg;
    cfg.height = cfg.width = 4;
    cfg.warmup = 0;
    cfg.iters = 2;
    RunReport report = profile(m, cfg);
    report.diff = diff_backends(m, "cpu", "cpu", PrepareConfig{1, 4, 4}, random_input(Shape{1, 2, 4, 4}, 3));
    KernelRecord k;
    k.name = "conv_kernel";
    k.kind = "kernel";
    k.step = 0;
    k.end_ns = 1500;
    k.grid = {2, 1, 1};
    k.block = {128, 1, 1};
    if (!report.timeline) throw Error("the cpu profile made no timeline");
    report.timeline->records = {k, k};
    return std::vector<RunReport>{report};
  }();
  return reports;
}

std::string sample_text() { return json::dump(reports_json(sample_reports()), 1); }

// The value at "runs/0/metadata/batch" (array indices as numbers).
json::Json& at_path(json::Json& root, const std::string& path) { return root.at(json::Json::json_pointer("/" + path)); }

// read_reports_file must throw mnv2::Error, on one line, naming the file and holding `part`.
void expect_refused(const std::string& path, const std::string& part) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const auto runs = read_reports_file(path);
    ADD_FAILURE() << path << " was read (" << runs.size() << " runs); expected an error containing '" << part << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "the message does not name the file: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "a multi-line message: " << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nmissing: " << part;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0) << path;
}

TEST(RobustReports, TheSampleReadsBack) {
  TempDir dir;
  write_file(dir.file("good.json"), sample_text());
  const auto back = read_reports_file(dir.file("good.json"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].layers.size(), 3u);
  ASSERT_TRUE(back[0].diff.has_value());
  ASSERT_TRUE(back[0].timeline.has_value());
  EXPECT_EQ(back[0].timeline->records.size(), 2u);
}

TEST(RobustReports, WrongTypesAndOutOfRangeValuesAreRefused) {
  struct Case {
    const char* path;
    const char* value;  // JSON text
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"schema", "5", "not an mnv2 report"},
      {"schema", "\"mnv2.bench\"", "not an mnv2 report"},
      {"schema_version", "\"1\"", "'schema_version': expected a number"},
      {"schema_version", "1e300", "expected an integer"},
      {"schema_version", "2", "newer"},
      {"runs/0/metadata/schema_version", "7", "newer"},
      {"runs", "{}", "'runs': expected an array"},
      {"runs/0", "\"a run\"", "expected an object"},
      {"runs/0/metadata", "[]", "expected an object"},
      {"runs/0/metadata/batch", "1099511627776", "batch 1099511627776 is out of range"},
      {"runs/0/metadata/batch", "1.5", "'batch': expected an integer"},
      {"runs/0/metadata/batch", "-1e300", "expected an integer"},
      {"runs/0/metadata/iterations", "null", "'iterations': expected a number"},
      {"runs/0/metadata/precision", "\"fp64\"", "fp64"},
      {"runs/0/metadata/timer", "\"sundial\"", "sundial"},
      {"runs/0/layers/1/clip_max", "1e300", "clip_max is out of range"},
      {"runs/0/layers/1/kind", "\"Conv3d\\nrm -rf\"", "unknown layer kind 'Conv3d rm -rf'"},
      {"runs/0/layers/1/index", "7", "layers out of order"},
      {"runs/0/layers/0/step", "99", "names step 99"},
      {"runs/0/layers/0/conv", "[1, 2]", "13 values"},
      {"runs/0/layers/0/output_shape", "[1, 2, 3]", "4 values"},
      {"runs/0/steps/0/step", "1", "steps out of order"},
      {"runs/0/steps/0/layers", "[]", "covers no layer"},
      {"runs/0/steps/0/layers", "[1000000000000000]", "out of range"},
      {"runs/0/steps/1/layers", "[5]", "covers layer 5"},
      {"runs/0/timeline/records/0/grid", "[1, 2]", "3 values"},
      {"runs/0/timeline/records/0/start_ns", "1e20", "'start_ns': expected an integer"},
      {"runs/0/diff/compared", "[true]", "different number of layers"},
      {"runs/0/diff/first_divergent_layer", "4294967296", "out of range"},
      {"runs/0/warnings", "[1, 2]", "expected a string"},
      {"runs/0/end_to_end/host", "7", "expected an object"},
      // Values checked where they are read (issue 14): counts never negative, dimensions within reason,
      // schema versions that are versions, figures finite and ordered.
      {"schema_version", "0", "is not a version"},
      {"runs/0/metadata/schema_version", "-3", "schema_version -3 is outside"},
      {"runs/0/metadata/batch", "-5", "batch -5 is outside 1.."},
      {"runs/0/metadata/batch", "0", "batch 0 is outside"},
      {"runs/0/metadata/input_height", "-224", "input_height -224 is outside"},
      {"runs/0/metadata/iterations", "0", "iterations 0 is outside"},
      {"runs/0/metadata/warmup", "-1", "warmup -1 is outside"},
      {"runs/0/layers/0/params", "-7", "params -7 is negative"},
      {"runs/0/layers/0/macs", "-1", "macs -1 is negative"},
      {"runs/0/layers/0/output_shape", "[1, -32, 112, 112]", "output_shape -32 is outside"},
      {"runs/0/layers/1/inputs", "[5]", "reads layer 5, which is not before it"},
      {"runs/0/steps/0/time/median_ns", "-1", "is not a non-negative figure"},
      {"runs/0/steps/0/time/n", "-2", "n -2 is negative"},
      {"runs/0/steps/0/time/median_ns", "1e300", "not between min and max"},
      {"runs/0/steps/0/share", "7", "is over 1"},
      {"runs/0/steps/0/bytes", "-4096", "bytes -4096 is negative"},
      {"runs/0/end_to_end/images_per_s", "-100", "not a non-negative figure"},
      {"runs/0/memory/weight_bytes", "-1", "weight_bytes -1 is negative"},
      {"runs/0/timeline/records/0/start_ns", "9000000000000000", "ends before it starts"},
      {"runs/0/timeline/records/0/grid", "[1, -2, 1]", "grid -2 is negative"},
      {"runs/0/timeline/records/0/step", "4000", "names step 4000"},
      {"runs/0/timeline/records/0/stream", "-7", "stream -7 is negative"},
      {"runs/0/timeline/steps/0/start_ns", "9000000000000000", "layer span ends before it starts"},
      {"runs/0/timeline/steps/0/end_ns", "-1", "end_ns -1 is negative"},
      {"runs/0/timeline/steps/0/step", "99", "timeline step 99 is outside"},
      {"runs/0/timeline/steps/1/step", "0", "spans step 0 twice"},
      {"runs/0/timeline/iteration", "2", "timeline iteration 2 is outside 0..1"},
      {"runs/0/timeline/iterations", "3", "timeline iterations 3 is outside 1..2"},
      {"runs/0/timeline/total_ns", "-5", "not a non-negative figure"},
      {"runs/0/timeline/clock", "\"sundial\"", "sundial"},
      {"runs/0/timeline/threads", "[{\"step\": 0, \"thread\": 5000, \"start_ns\": 0, \"end_ns\": 1}]",
       "timeline thread 5000 is outside 0..4095"},
      {"runs/0/timeline/threads", "[{\"step\": 0, \"thread\": 1, \"start_ns\": 5, \"end_ns\": 1}]",
       "thread span ends before it starts"},
      {"runs/0/per_kind/0/macs", "-9", "macs -9 is negative"},
      {"runs/0/diff/first_divergent_layer", "1000", "first_divergent_layer 1000 is outside"},
      {"runs/0/diff/top5", "[-1, 2, 3, 4, 5]", "class -1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.path) + " = " + c.value);
    json::Json doc = json::parse(sample_text());
    at_path(doc, c.path) = json::parse(c.value);
    TempDir dir;
    const std::string path = dir.file("mutated.json");
    write_file(path, json::dump(doc, 1));
    expect_refused(path, c.expect);
  }
  // A key that is missing altogether.
  json::Json doc = json::parse(sample_text());
  at_path(doc, "runs/0/metadata").erase("schema_version");
  TempDir dir;
  write_file(dir.file("missing.json"), json::dump(doc));
  expect_refused(dir.file("missing.json"), "missing key 'schema_version'");
}

TEST(RobustReports, EveryTruncationIsRefused) {
  const std::string text = sample_text();
  TempDir dir;
  const std::string path = dir.file("cut.json");
  for (size_t n = 0; n < text.size(); n += 37) {
    write_file(path, text.substr(0, n));
    EXPECT_THROW(read_reports_file(path), Error) << "cut at " << n;
  }
  write_file(path, "");
  expect_refused(path, "unexpected end of input");
}

TEST(RobustReports, DeepNestingAndHugeNumbersAreRefusedNotCrashed) {
  TempDir dir;
  const std::string path = dir.file("hostile.json");
  write_file(path, std::string(200000, '['));
  expect_refused(path, "nesting deeper than 512");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  write_file(path, objects);
  expect_refused(path, "nesting deeper than 512");
  // Within the depth limit but where a run should be: refused as a wrong type, not recursed into.
  write_file(path, R"({"schema":"mnv2.report","schema_version":1,"runs":[)" + std::string(500, '[') +
                       std::string(500, ']') + "]}");
  expect_refused(path, "expected an object");

  std::string text = sample_text();
  const std::string key = "\"batch\": ";
  const size_t at = text.find(key);
  ASSERT_NE(at, std::string::npos);
  const size_t end = text.find(',', at);
  write_file(path, text.substr(0, at + key.size()) + "1e999" + text.substr(end));
  expect_refused(path, "number out of range");
  write_file(path, text.substr(0, at + key.size()) + "-" + std::string(400, '9') + text.substr(end));
  expect_refused(path, "number out of range");
  write_file(path, text.substr(0, at + key.size()) + "1" + std::string(300, '0') + text.substr(end));
  expect_refused(path, "expected an integer");
}

TEST(RobustReports, OnlyRegularFilesOfPlausibleSizeAreRead) {
  TempDir dir;
  expect_refused(dir.file("absent.json"), "no such file");
  expect_refused(dir.path(), "directory");
  // A FIFO would block for ever, /dev/zero would never end.
  const std::string fifo = dir.file("pipe.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo, "not a regular file");
  expect_refused("/dev/zero", "not a regular file");
  // A sparse 65 MiB file: refused from its size, before reading or parsing a byte.
  const std::string big = dir.file("big.json");
  write_file(big, "{");
  std::filesystem::resize_file(big, (uintmax_t{65} << 20));
  expect_refused(big, "report of 68157440 bytes is over its limit of 64 MiB");
  // Lots of small values: parsed in time proportional to the file, then refused for what they are.
  std::string many = R"({"schema":"mnv2.report","schema_version":1,"runs":[)";
  for (int i = 0; i < 1000000; ++i) many += i ? ",0" : "0";
  write_file(dir.file("many.json"), many + "]}");
  expect_refused(dir.file("many.json"), "run 0: json: expected an object");
}

TEST(RobustReports, WhatIsReadBackWritesWellFormedFiles) {
  // Text fields from a file may hold commas and quotes; the CSV quotes every one of them.
  json::Json doc = json::parse(sample_text());
  at_path(doc, "runs/0/metadata/backend") = json::Json("cu,dnn \"x\"");
  at_path(doc, "runs/0/metadata/timer") = json::Json("host_clock");
  at_path(doc, "runs/0/layers/0/block_name") = json::Json("stem,1");
  at_path(doc, "runs/0/diff/reference") = json::Json("cpu,ref");
  TempDir dir;
  write_file(dir.file("odd.json"), json::dump(doc));
  const auto runs = read_reports_file(dir.file("odd.json"));
  const std::string csv = report_csv(runs);
  std::stringstream lines(csv);
  std::string line;
  size_t header_fields = 0;
  int rows = 0;
  while (std::getline(lines, line)) {
    size_t fields = 1;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted) ++fields;
    }
    if (rows++ == 0)
      header_fields = fields;
    else
      EXPECT_EQ(fields, header_fields) << line;
  }
  EXPECT_EQ(rows, 4);
  EXPECT_NO_THROW(json::parse(trace_json(runs)));
  EXPECT_NO_THROW(reports_from_json(json::parse(json::dump(reports_json(runs)))));
}

// ---- writes that fail ---------------------------------------------------------------------------------

TEST(RobustWrites, AFailedWriteKeepsTheGoodFileAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("report.json");
  write_json_report(path, sample_reports());
  const std::string good = read_file(path);
  // A child process whose file size limit is far below a report's size: the write fails part-way (EFBIG).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{512, 512};
    setrlimit(RLIMIT_FSIZE, &limit);
    std::vector<RunReport> bigger = sample_reports();
    bigger.push_back(bigger.front());
    int status = 3;
    try {
      write_json_report(path, bigger);
      status = 1;  // must not succeed
    } catch (const Error& e) {
      status = std::string(e.what()).find(path) != std::string::npos ? 0 : 2;
    } catch (...) {
      status = 4;
    }
    _exit(status);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the write succeeded, 2: the error did not name the file, 4: not an Error";
  EXPECT_EQ(read_file(path), good);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string(), "report.json") << "left behind: " << e.path();
}

TEST(RobustWrites, ACancelledProfileThrowsBeforeAnythingIsWritten) {
  // Reports are written after profile() returns; a cancelled one throws, so nothing reaches the writers
  // (the CLI side: tests/cli/test_cli_robustness.cpp interrupts a profile that was asked to write a file).
  Model m;
  m.input_channels = 1;
  m.input_height = m.input_width = 4;
  Layer relu;
  relu.kind = LayerKind::ReLU;
  relu.inputs = {kNetworkInput};
  relu.clip_max = std::numeric_limits<float>::infinity();
  m.layers = {relu};
  assign_blocks_and_names(m);
  ProfileConfig cfg;
  cfg.height = cfg.width = 4;
  int calls = 0;
  EXPECT_THROW(profile(m, cfg, [&](const std::string&, int, int) { return ++calls < 3; }), Error);
  EXPECT_EQ(calls, 3);
}

// ---- tensor files -------------------------------------------------------------------------------------

TEST(RobustTensorFiles, SizesComeFromTheFileAndAreBounded) {
  TempDir dir;
  // 70000 images of 3x8x8 floats in a sparse file: more than any batch, refused before allocating.
  const std::string big = dir.file("big.f32");
  write_file(big, "");
  std::filesystem::resize_file(big, uintmax_t{70000} * 3 * 8 * 8 * 4);
  try {
    read_tensor_file(big, Shape{1, 3, 8, 8});
    ADD_FAILURE() << "read a 70000-image tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 65536"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(big), std::string::npos) << e.what();
  }
  const std::string fifo = dir.file("pipe.f32");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(read_tensor_file(fifo, Shape{1, 3, 8, 8}), Error);
  EXPECT_THROW(read_tensor_file(dir.path(), Shape{1, 3, 8, 8}), Error);
}

// ---- the writers of the other studies (engine/report) ---------------------------------------------------

TEST(ReportWriters, CsvQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_quote("plain"), "plain");
  EXPECT_EQ(csv_quote(""), "");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_quote("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_quote("cr\r"), "\"cr\r\"");
}

TEST(ReportWriters, BenchJsonAndCsvCarryEveryResult) {
  BenchResult r;
  r.config.backend = "cpu";
  r.config.batch = 2;
  r.backend_description = "CPU, \"fast\", 2 threads";
  r.latency_ms = summarize({1.0, 2.0, 3.0});
  r.images_per_s = 1000;
  r.memory.weight_bytes = 40;
  BenchResult nan_result = r;
  nan_result.latency_ms.cv = std::nan("");  // not finite: null in JSON, empty in CSV
  ReportModel model;
  model.source = "m.onnx";
  model.found_by = "--model";
  model.warnings = {"w"};
  const json::Json j = json::parse(bench_json({r, nan_result}, model));
  EXPECT_EQ(json::string_at(j, "schema"), "mnv2.bench/1");
  EXPECT_EQ(j.begin().key(), "schema");
  EXPECT_EQ(json::string_at(json::at(j, "model"), "found_by"), "--model");
  const json::Json& results = json::array_at(j, "results");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(json::number_at(results[0], "median_ms"), 2.0);
  EXPECT_EQ(json::int_at(results[0], "batch"), 2);
  EXPECT_TRUE(json::at(results[1], "cv").is_null());
  EXPECT_EQ(json::at(results[0], "memory").get<MemoryReport>().weight_bytes, 40);
  EXPECT_FALSE(results[0].contains("gpu_median_ms"));  // a host backend has no GPU figures
  const std::string csv = bench_csv({r, nan_result});
  EXPECT_NE(csv.find("\ncpu,\"CPU, \"\"fast\"\", 2 threads\",fp32,2,"), std::string::npos) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
}

TEST(ReportWriters, EvalJsonAndCsv) {
  EvalResult r;
  r.config.backend = "cpu";
  r.images = 3;
  r.top1_correct = 2;
  r.top1 = 2.0 / 3;
  r.misclassified = {EvalMiss{"a,b.jpg", 1, {2, 1, 0}}};
  r.skipped = {EvalSkip{"bad.jpg", "bad.jpg: not an image"}};
  const json::Json j = json::parse(eval_json(r, ReportModel{}, EvalSource{"/img", ""}));
  EXPECT_EQ(json::string_at(j, "schema"), "mnv2.eval/1");
  EXPECT_EQ(json::string_at(j, "images_dir"), "/img");
  EXPECT_EQ(json::array_at(json::array_at(j, "misclassified")[0], "top5").size(), 3u);
  EXPECT_EQ(json::string_at(json::array_at(j, "skipped")[0], "reason"), "bad.jpg: not an image");
  const std::string csv =
      eval_csv(r, EvalCsvContext{"set, one", "Qt", [](int i) { return "label " + std::to_string(i); },
                                 [](int i) { return "class " + std::to_string(i); }});
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // header, summary, one miss, one skip
  EXPECT_NE(csv.find("misclassified,\"set, one\",cpu,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"a,b.jpg\",1,label 1,2 1 0,class 2 | class 1 | class 0,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("skipped,"), std::string::npos) << csv;
}

TEST(ReportWriters, RooflineFilesKeepTheRunReadable) {
  Ceilings c;
  c.device = "cpu";
  c.key = "cpu|x";
  c.bandwidth_gb_s = 10;
  c.gflop_s = 100;
  c.method = "test";
  const std::vector<RooflinePoint> points = roofline_points(sample_reports()[0], c);
  const std::string csv = roofline_csv(points);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(points.size()) + 1);
  const json::Json j = json::parse(roofline_json(c, sample_reports()[0]));
  EXPECT_EQ(json::string_at(j, "schema"), "mnv2.roofline/1");
  EXPECT_EQ(json::at(j, "ceilings").get<Ceilings>().gflop_s, 100);
  // The run is a profile report's run: it reads back as one.
  const json::Json wrapped = {{"schema", "mnv2.report"}, {"schema_version", 1}, {"runs", {json::at(j, "run")}}};
  EXPECT_EQ(reports_from_json(wrapped).at(0).layers.size(), 3u);
  json::Json bad = json::at(j, "ceilings");
  bad["gflop_s"] = 0;
  EXPECT_THROW(bad.get<Ceilings>(), Error);
}

TEST(ReportWriters, OlderReportsWithoutLaterAdditionsStillRead) {
  // Reports of the same schema version written before "execution", the memory counts and the totals'
  // layer counts existed.
  json::Json doc = json::parse(sample_text());
  json::Json& run = at_path(doc, "runs/0");
  run.at("metadata").erase("execution");
  for (const char* key : {"tensors", "device_used_before_bytes", "device_used_peak_bytes", "device_total_bytes"})
    run.at("memory").erase(key);
  for (json::Json& g : run.at("per_kind")) {
    g.erase("layers");
    g.erase("steps");
    g.erase("fused_layers");
  }
  const std::vector<RunReport> back = reports_from_json(doc);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].memory.tensors, 0);
  EXPECT_GT(back[0].per_kind.at(0).layers, 0);  // derived again from the topology
}

}  // namespace
}  // namespace mnv2::test
