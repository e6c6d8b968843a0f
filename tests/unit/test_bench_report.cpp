// Reading mnv2.bench/1 files back (read_bench_file): what bench_json writes reads back the same; another
// program's file (the PyTorch anchor's) reads with its extra keys ignored; missing keys, wrong types,
// figures out of range, other schemas and truncations are refused with one line naming the file, the record
// and the key.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/report.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

const std::string kAnchor = std::string(MNV2_TEST_DATA_DIR) + "/bench/pytorch-anchor-h200-excerpt.json";

std::vector<BenchResult> sample_results() {
  BenchResult a;
  a.config.backend = "cudnn";
  a.config.batch = 8;
  a.config.precision = Precision::fp16;
  a.config.warmup = 3;
  a.config.iters = 7;
  a.backend_description = "cuDNN, with a \"quote\" and a comma, here";
  a.latency_ms = summarize({1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 9.0});
  a.gpu_ms = summarize({0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1});
  a.device_ms = summarize({0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55});
  a.images_per_s = 8 / a.latency_ms.median * 1e3;
  a.device_images_per_s = 8 / a.device_ms->median * 1e3;
  a.memory.weight_bytes = 1000;
  a.memory.activation_bytes = 2000;
  a.kernels_per_run = 57;
  a.reliability.findings.push_back({"cv", Verdict::noted, "a reason", 0.2, 0.1});
  BenchResult b;
  b.config.backend = "cpu";
  b.config.cpu_threads = 2;
  b.latency_ms = summarize({4.0, 5.0, 6.0});
  b.config.iters = 3;
  b.images_per_s = 200;
  return {a, b};
}

// A fixture the test writes (test_support: never taken for a report the program wrote).
void write_text(const std::string& path, const std::string& text) { write_file(path, text); }

std::string refusal(const std::string& path) {
  try {
    read_bench_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(BenchFile, WhatBenchJsonWritesReadsBack) {
  TempDir tmp;
  const std::vector<BenchResult> results = sample_results();
  ReportModel model{"/m.onnx", "--model", "fnv1a64:0123456789abcdef", false, 1001, 99, {"a warning"}};
  const std::string text = bench_json(results, model);
  write_text(tmp.file("b.json"), text);
  const BenchFile f = read_bench_file(tmp.file("b.json"));
  EXPECT_EQ(f.model.source, "/m.onnx");
  EXPECT_EQ(f.model.checksum, "fnv1a64:0123456789abcdef");
  EXPECT_EQ(f.model.classes, 1001);
  EXPECT_EQ(f.model.warnings, std::vector<std::string>{"a warning"});
  EXPECT_EQ(f.commit, json::parse(text).at("commit").get<std::string>());
  ASSERT_EQ(f.results.size(), 2u);
  const BenchResult& a = f.results[0];
  EXPECT_EQ(a.config.backend, "cudnn");
  EXPECT_EQ(a.backend_description, results[0].backend_description);
  EXPECT_EQ(a.config.precision, Precision::fp16);
  EXPECT_EQ(a.config.batch, 8);
  EXPECT_EQ(a.config.iters, 7);
  EXPECT_EQ(a.config.warmup, 3);
  for (auto [got, want] : {std::pair{a.latency_ms.median, results[0].latency_ms.median},
                           {a.latency_ms.p99, results[0].latency_ms.p99},
                           {a.latency_ms.cv, results[0].latency_ms.cv},
                           {a.gpu_ms->median, results[0].gpu_ms->median},
                           {a.device_ms->p90, results[0].device_ms->p90},
                           {a.device_images_per_s, results[0].device_images_per_s}})
    EXPECT_DOUBLE_EQ(got, want);
  EXPECT_EQ(a.memory.weight_bytes, 1000);
  EXPECT_EQ(a.kernels_per_run, 57);
  EXPECT_EQ(f.results[1].kernels_per_run, -1);  // the cpu backend counts none: no key written, none read
  EXPECT_EQ(json::parse(text).at("results")[1].count("kernels_per_run"), 0u);
  EXPECT_EQ(a.reliability.verdict(), Verdict::noted);
  EXPECT_FALSE(f.results[1].gpu_ms);
  EXPECT_FALSE(f.results[1].device_ms);
  EXPECT_EQ(f.results[1].config.cpu_threads, 2);
  // Written again, the same bytes: nothing lost on the way.
  EXPECT_EQ(bench_json(f.results, f.model), bench_json(results, model));
}

TEST(BenchFile, TheAnchorsFileReadsWithItsExtraKeysIgnored) {
  const json::Json raw = json::parse_file(kAnchor);
  const BenchFile f = read_bench_file(kAnchor);
  ASSERT_EQ(f.results.size(), raw.at("results").size());
  for (size_t i = 0; i < f.results.size(); ++i) {
    const json::Json& r = raw.at("results")[i];
    EXPECT_EQ(f.results[i].config.backend, "pytorch");
    EXPECT_EQ(to_string(f.results[i].config.precision), r.at("precision").get<std::string>());
    EXPECT_DOUBLE_EQ(f.results[i].device_ms->median, r.at("device_resident_median_ms").get<double>());
    EXPECT_DOUBLE_EQ(f.results[i].gpu_ms->median, r.at("gpu_median_ms").get<double>());
    EXPECT_DOUBLE_EQ(f.results[i].latency_ms.median, r.at("median_ms").get<double>());
    EXPECT_TRUE(f.results[i].reliability.findings.empty());
  }
  EXPECT_EQ(f.model.checksum, raw.at("model").at("checksum").get<std::string>());
  EXPECT_TRUE(is_bench_file(kAnchor));
}

TEST(BenchFile, BadFilesAreRefusedNamingFileRecordAndKey) {
  TempDir tmp;
  const json::Json good = json::parse(bench_json(sample_results(), ReportModel{"/m.onnx", "", "x", false, 10, 3, {}}));
  struct Case {
    const char* what;
    void (*edit)(json::Json&);
    const char* message;
  };
  const Case cases[] = {
      {"no results", [](json::Json& j) { j.erase("results"); }, "missing key 'results'"},
      {"no model", [](json::Json& j) { j.erase("model"); }, "missing key 'model'"},
      {"a model without checksum", [](json::Json& j) { j["model"].erase("checksum"); },
       "json: 'model': missing key 'checksum'"},
      {"another schema", [](json::Json& j) { j["schema"] = "mnv2.report"; }, "not an mnv2 bench file"},
      {"a newer schema", [](json::Json& j) { j["schema"] = "mnv2.bench/2"; }, "update mnv2"},
      {"a missing median", [](json::Json& j) { j["results"][1].erase("median_ms"); },
       "result 1: json: missing key 'median_ms'"},
      {"a batch of 0", [](json::Json& j) { j["results"][0]["batch"] = 0; }, "result 0: batch 0 is outside 1..65536"},
      {"a negative time", [](json::Json& j) { j["results"][0]["p90_ms"] = -1; }, "result 0: 'p90_ms' is not a finite"},
      {"a string figure", [](json::Json& j) { j["results"][0]["cv"] = "low"; },
       "result 0: json: 'cv': expected a number"},
      {"an unknown precision", [](json::Json& j) { j["results"][0]["precision"] = "fp8"; }, "result 0: 'precision':"},
      {"a gpu median without p90", [](json::Json& j) { j["results"][0].erase("gpu_p90_ms"); },
       "result 0: json: missing key 'gpu_p90_ms'"},
      {"an empty backend", [](json::Json& j) { j["results"][0]["backend"] = ""; }, "result 0: 'backend' must be"},
      {"a backend with a line break", [](json::Json& j) { j["results"][0]["backend"] = "a\nb"; },
       "result 0: 'backend' holds a control character"},
      {"median under min", [](json::Json& j) { j["results"][0]["min_ms"] = 100.0; }, "result 0: min_ms, median_ms"},
      {"a bad memory block", [](json::Json& j) { j["results"][0]["memory"].erase("weight_bytes"); },
       "result 0: json: 'memory': missing key 'weight_bytes'"},
      {"a hand-edited verdict", [](json::Json& j) { j["results"][0]["reliability"]["verdict"] = "ok"; },
       "result 0: reliability: reliability verdict 'ok' does not match"},
      {"a negative kernel count", [](json::Json& j) { j["results"][0]["kernels_per_run"] = -2; },
       "result 0: kernels_per_run -2 is outside"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json::Json j = good;
    c.edit(j);
    write_text(tmp.file("bad.json"), json::dump(j, 2));
    const std::string msg = refusal(tmp.file("bad.json"));
    EXPECT_EQ(msg.rfind(tmp.file("bad.json") + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  // Unknown keys anywhere are ignored.
  json::Json extra = good;
  extra["anchor"] = {{"anything", {1, 2, 3}}};
  extra["results"][0]["mode"] = {{"exec", "cuda_graph"}};
  extra["model"]["origin"] = "elsewhere";
  write_text(tmp.file("extra.json"), json::dump(extra, 2));
  EXPECT_EQ(read_bench_file(tmp.file("extra.json")).results.size(), 2u);
}

TEST(BenchFile, EveryTruncationIsRefused) {
  TempDir tmp;
  const std::string text = bench_json(sample_results(), ReportModel{"/m.onnx", "", "x", false, 10, 3, {}});
  for (size_t cut = 0; cut + 2 < text.size(); cut += 7) {  // the last bytes are "}\n": whole
    write_text(tmp.file("cut.json"), text.substr(0, cut));
    EXPECT_NE(refusal(tmp.file("cut.json")), "(accepted)") << "cut at " << cut;
  }
}

TEST(BenchFile, IsBenchFileLooksOnlyAtTheSchema) {
  TempDir tmp;
  write_text(tmp.file("compact.json"), R"({"schema":"mnv2.bench/1","results":[]})");
  write_text(tmp.file("report.json"), R"({"schema": "mnv2.report", "note": "mnv2.bench/1"})");
  EXPECT_TRUE(is_bench_file(tmp.file("compact.json")));
  EXPECT_FALSE(is_bench_file(tmp.file("report.json")));
  EXPECT_FALSE(is_bench_file(tmp.file("absent.json")));
  EXPECT_FALSE(is_bench_file(tmp.path()));  // a folder
}

}  // namespace
}  // namespace mnv2::test
