// The deep dive without a GPU (issue 35, item 3): the strict CSV reader, Nsight Compute's raw and details pages read
// by metric name from fixtures recorded on an H200 (tests/data/ncu/README.md), and the run of ncu as a child process
// against a stand-in (tests/data/ncu/fake-ncu.sh) that answers as the real one does in each failure.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "mnv2/backend.h"
#include "mnv2/csv.h"
#include "mnv2/deep_dive.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/studies.h"
#include "test_support.h"

namespace mnv2::test {
namespace {
namespace fs = std::filesystem;

const std::string kData = std::string(MNV2_TEST_DATA_DIR) + "/ncu";

// A fixture, xz-compressed in the tree (xz-utils: scripts/install-deps.sh).
std::string fixture(const std::string& name) {
  const std::string path = kData + "/" + name + ".xz";
  if (!fs::is_regular_file(path)) throw std::runtime_error("no fixture " + path);
  FILE* p = ::popen(("xz -dc '" + path + "'").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run xz");
  std::string text;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) text.append(buffer, n);
  if (::pclose(p) != 0) throw std::runtime_error("xz -dc " + path + " failed");
  return text;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CsvReader, ReadsQuotedFieldsCommasQuotesAndLineBreaks) {
  using Rows = std::vector<std::vector<std::string>>;
  EXPECT_EQ(read_csv(""), Rows{});
  EXPECT_EQ(read_csv("a,b\n"), (Rows{{"a", "b"}}));
  EXPECT_EQ(read_csv("a,b"), (Rows{{"a", "b"}}));  // the last record without a line break
  EXPECT_EQ(read_csv("a,\"b,c\",\"say \"\"hi\"\"\"\r\n1,,3\n"), (Rows{{"a", "b,c", "say \"hi\""}, {"1", "", "3"}}));
  EXPECT_EQ(read_csv("\"two\nlines\",x\n"), (Rows{{"two\nlines", "x"}}));
  EXPECT_EQ(read_csv("a,b,\n"), (Rows{{"a", "b", ""}}));
  EXPECT_EQ(read_csv("\"\",\"\"\n"), (Rows{{"", ""}}));
  // ncu's NVTX cell: quotes inside a quoted field, doubled.
  EXPECT_EQ(read_csv("\"731  \"\"<default domain>:Conv2d 7:none\"\" \"\n"),
            (Rows{{"731  \"<default domain>:Conv2d 7:none\" "}}));
}

TEST(CsvReader, RefusesMalformedTextNamingTheLine) {
  EXPECT_NE(message_of([] { read_csv("a,b\n\"open,c\n"); }).find("not closed on line 2"), std::string::npos);
  EXPECT_NE(message_of([] { read_csv("a,b\nx\"y,c\n"); }).find("quote inside an unquoted field on line 2"),
            std::string::npos);
  EXPECT_NE(message_of([] { read_csv("\"a\"b,c\n"); }).find("text after a closing quote on line 1"), std::string::npos);
}

// tests/data/ncu/r3ncu_fp16_b1_step25.raw.csv.xz (a subset of metrics, with ncu's own lines before the header; from
// docs/bench/h200-2026-11-29-issue32b): the rows of the step "Conv2d 25 + ResidualAdd 26" (cuda, fp16, batch 1,
// two kernels: a tensor-core GEMM and its split-K reduction), profiled in both phases of the run (IDs 6, 7 and
// 122, 123). The figures below were read by hand from the CSV (IDs 122 and 123, the last run).
TEST(NcuReport, TheRawPageIsReadByMetricName) {
  const std::string csv = fixture("r3ncu_fp16_b1_step25.raw.csv");
  const std::vector<NcuKernel> kernels = parse_ncu_raw(csv);
  ASSERT_EQ(kernels.size(), 4u);
  const NcuKernel& g = kernels[2];
  EXPECT_EQ(g.id, 122);
  EXPECT_EQ(g.name.rfind("void unnamed>::gemm_tc_kernel<__half, __half, unnamed>::Shape<32, 32, 2, 2>, 1, 0>", 0), 0u)
      << g.name;
  EXPECT_EQ(g.range, "Conv2d 25 + ResidualAdd 26");
  EXPECT_EQ(g.grid, "(25, 1, 3)");
  EXPECT_DOUBLE_EQ(g.duration_ns.value(), 3616);  // "3,616": ncu's thousands separator
  EXPECT_DOUBLE_EQ(g.sm_throughput_pct.value(), 4.39);
  EXPECT_DOUBLE_EQ(g.memory_throughput_pct.value(), 7.41);
  EXPECT_DOUBLE_EQ(g.dram_throughput_pct.value(), 2.02);
  EXPECT_DOUBLE_EQ(g.achieved_occupancy_pct.value(), 5.97);
  EXPECT_DOUBLE_EQ(g.theoretical_occupancy_pct.value(), 56.25);
  // launch__occupancy_limit_: barriers 32, blocks 32, registers 9, shared_mem 9, warps 16 blocks per SM.
  EXPECT_EQ(g.occupancy_limiter, "registers+shared_mem");
  EXPECT_DOUBLE_EQ(g.occupancy_limit_blocks.value(), 9);
  EXPECT_DOUBLE_EQ(g.registers_per_thread.value(), 52);
  EXPECT_DOUBLE_EQ(g.hmma_pipe_pct.value(), 0.43);
  EXPECT_DOUBLE_EQ(g.gmma_pipe_pct.value(), 0);
  // Stalls, largest first, "selected" (1.0: the warp that issued) left out: no_instruction 2.08, wait 1.76,
  // short_scoreboard 0.69.
  ASSERT_GE(g.stalls.size(), 3u);
  EXPECT_EQ(g.stalls[0].reason, "no_instruction");
  EXPECT_DOUBLE_EQ(g.stalls[0].warps_per_issue, 2.08);
  EXPECT_EQ(g.stalls[1].reason, "wait");
  EXPECT_EQ(g.stalls[2].reason, "short_scoreboard");
  for (const NcuStall& s : g.stalls) EXPECT_NE(s.reason, "selected");
  // This subset of metrics has no byte counters, only dram__bytes.sum.per_second (96,778,761,061.95 B/s): bytes are
  // that rate times the duration; L1 and L2 are absent, not zero.
  EXPECT_NEAR(g.bytes.dram.value(), 96778761061.95 * 3616e-9, 1e-3);
  EXPECT_FALSE(g.bytes.l1.has_value());
  EXPECT_FALSE(g.bytes.l2.has_value());
  const NcuKernel& r = kernels[3];
  EXPECT_EQ(r.name, "void unnamed>::splitk_reduce_tc_kernel<__half, 8>(TcGemmParams, int)");
  EXPECT_EQ(r.occupancy_limiter, "registers");  // 6 blocks, warps 8
  EXPECT_EQ(r.stalls.at(0).reason, "long_scoreboard");
  EXPECT_DOUBLE_EQ(r.stalls.at(0).warps_per_issue, 11.07);
}

TEST(NcuReport, TheStepIsItsLastRunSummedAndWeightedByDuration) {
  const NcuStepSummary s = summarise_ncu(parse_ncu_raw(fixture("r3ncu_fp16_b1_step25.raw.csv")));
  EXPECT_EQ(s.runs_in_report, 2);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].id, 122);
  EXPECT_EQ(s.kernels[1].id, 123);
  const NcuKernel& t = s.total;
  EXPECT_EQ(t.name, "2 kernels");
  EXPECT_EQ(t.range, "Conv2d 25 + ResidualAdd 26");
  EXPECT_DOUBLE_EQ(t.duration_ns.value(), 3616 + 3584);
  EXPECT_NEAR(t.sm_throughput_pct.value(), (3616 * 4.39 + 3584 * 0.60) / 7200, 1e-9);
  EXPECT_NEAR(t.memory_throughput_pct.value(), (3616 * 7.41 + 3584 * 2.11) / 7200, 1e-9);
  EXPECT_NEAR(t.achieved_occupancy_pct.value(), (3616 * 5.97 + 3584 * 11.24) / 7200, 1e-9);
  EXPECT_EQ(t.occupancy_limiter, "registers+shared_mem");  // the longer kernel's (the GEMM, 3616 ns)
  EXPECT_NEAR(t.bytes.dram.value(), 96778761061.95 * 3616e-9 + 100642857142.86 * 3584e-9, 1e-3);
  EXPECT_EQ(t.stalls.at(0).reason, "long_scoreboard");  // 11.07 on the reduction outweighs 2.08 on the GEMM
  // long_scoreboard: 0.27 on the GEMM (3616 ns), 11.07 on the reduction (3584 ns).
  EXPECT_NEAR(t.stalls.at(0).warps_per_issue, (3616 * 0.27 + 3584 * 11.07) / 7200, 1e-9);
  // A sequence that does not repeat is one run.
  std::vector<NcuKernel> three = s.kernels;
  three.push_back(s.kernels[0]);
  EXPECT_EQ(summarise_ncu(three).runs_in_report, 1);
  EXPECT_EQ(summarise_ncu(three).kernels.size(), 3u);
  EXPECT_THROW(summarise_ncu({}), Error);
}

TEST(NcuReport, RefusesWhatIsNotARawPage) {
  EXPECT_NE(message_of([] { parse_ncu_raw("==WARNING== No kernels were profiled.\n"); }).find("no kernel was profiled"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_ncu_raw("\"ID\",\"Kernel Name\"\n\"1\",\"k\",\"extra\"\n"); }).find("row 2 has 3"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_ncu_raw("\"ID\",\"Name\"\n\"1\",\"k\"\n"); }).find("no \"Kernel Name\""),
            std::string::npos);
  // The header only (a report whose kernels were all filtered out): no kernel, and the summary refuses it.
  EXPECT_TRUE(parse_ncu_raw("\"ID\",\"Kernel Name\"\n").empty());
}

// The fixtures recorded for the deep dive (tests/data/ncu/README.md: `--set full`, ncu 2025.3.1, H200, fp16 batch 8,
// the step of layer 21 "block5.expand"): each step profiled twice (IDs 0 and 1), the last (ID 1) kept. The figures
// were read by hand from the raw CSV's row of ID 1.
TEST(NcuReport, AFusedCudaBlockFromTheFullSet) {
  std::vector<NcuKernel> kernels = parse_ncu_raw(fixture("deep_cuda_fp16_b8_block5_expand_block.raw.csv"));
  add_ncu_details(fixture("deep_cuda_fp16_b8_block5_expand_block.details.csv"), kernels);
  const NcuStepSummary s = summarise_ncu(kernels);
  EXPECT_EQ(s.runs_in_report, 2);
  ASSERT_EQ(s.kernels.size(), 1u);
  const NcuKernel& k = s.kernels[0];
  EXPECT_EQ(k.id, 1);
  EXPECT_EQ(k.name, "void unnamed>::fused_block_kernel<2, 1>(FusedBlockParams, Geometry)");
  EXPECT_EQ(k.range, "Conv2d 21 + ReLU6 22 + Conv2d 23 + ReLU6 24 + Conv2d 25 + ResidualAdd 26");
  EXPECT_EQ(k.grid, "(224, 1, 1)");
  EXPECT_EQ(k.block, "(256, 1, 1)");
  EXPECT_DOUBLE_EQ(k.duration_ns.value(), 14816);
  EXPECT_DOUBLE_EQ(k.sm_throughput_pct.value(), 26.82);
  EXPECT_DOUBLE_EQ(k.memory_throughput_pct.value(), 18.17);
  EXPECT_DOUBLE_EQ(k.dram_throughput_pct.value(), 0.69);
  EXPECT_DOUBLE_EQ(k.achieved_occupancy_pct.value(), 19.60);
  EXPECT_DOUBLE_EQ(k.theoretical_occupancy_pct.value(), 25);
  EXPECT_EQ(k.occupancy_limiter, "registers");  // 2 blocks per SM (shared_mem 4, warps 8, blocks and barriers 32)
  EXPECT_DOUBLE_EQ(k.occupancy_limit_blocks.value(), 2);
  EXPECT_DOUBLE_EQ(k.registers_per_thread.value(), 128);
  ASSERT_GE(k.stalls.size(), 3u);  // barrier 3.49, wait 1.84, short_scoreboard 0.90 ("selected" 1.0 left out)
  EXPECT_EQ(k.stalls[0].reason, "barrier");
  EXPECT_DOUBLE_EQ(k.stalls[0].warps_per_issue, 3.49);
  EXPECT_EQ(k.stalls[1].reason, "wait");
  EXPECT_EQ(k.stalls[2].reason, "short_scoreboard");
  EXPECT_DOUBLE_EQ(k.hmma_pipe_pct.value(), 1.10);
  EXPECT_DOUBLE_EQ(k.gmma_pipe_pct.value(), 0);
  EXPECT_DOUBLE_EQ(k.bytes.dram.value(), 491264 + 0);             // dram__bytes_read.sum + dram__bytes_write.sum
  EXPECT_DOUBLE_EQ(k.bytes.l2.value(), 337964.0 * 32);            // lts__t_sectors.sum
  EXPECT_DOUBLE_EQ(k.bytes.l1.value(), (308544.0 + 25088) * 32);  // global ld + st sectors (the rest are 0)
  // The details page's advice, the largest estimated speedup first (ID 1: HighPipeUtilization, local 81.58%).
  ASSERT_GE(k.notes.size(), 10u);
  EXPECT_EQ(k.notes[0].rfind("OPT HighPipeUtilization (estimated speedup local 82%): All compute pipelines are "
                             "under-utilized.",
                             0),
            0u)
      << k.notes[0];
  EXPECT_TRUE(s.total.notes.empty());
}

TEST(NcuReport, ACudnnStepFromTheFullSet) {
  const NcuStepSummary s = summarise_ncu(parse_ncu_raw(fixture("deep_cudnn_fp16_b8_block5_expand_auto.raw.csv")));
  ASSERT_EQ(s.kernels.size(), 1u);
  const NcuKernel& k = s.kernels[0];
  EXPECT_EQ(k.name, "cudnn_generated_fort_native_sm80_convFwd_pointwise_pointwise_knob_21_128x128x32_4_0");
  EXPECT_EQ(k.range, "Conv2d 21 + ReLU6 22");
  EXPECT_DOUBLE_EQ(k.duration_ns.value(), 6944);
  EXPECT_DOUBLE_EQ(k.sm_throughput_pct.value(), 12.90);
  EXPECT_DOUBLE_EQ(k.theoretical_occupancy_pct.value(), 12.50);
  EXPECT_EQ(k.occupancy_limiter, "registers");  // 2 blocks (254 registers a thread)
  EXPECT_EQ(k.stalls.at(0).reason, "wait");     // 0.96 ("selected" 1.0 left out)
  EXPECT_DOUBLE_EQ(k.hmma_pipe_pct.value(), 1.61);
  EXPECT_DOUBLE_EQ(k.bytes.dram.value(), 449024);
  EXPECT_DOUBLE_EQ(s.total.duration_ns.value(), 6944);
}

// ---- ncu as a child process, against the stand-in ------------------------------------------------------------

// A program named `ncu` in a folder of the test's that runs the stand-in in `mode`, logging its arguments.
struct FakeNcu {
  TempDir dir;
  std::string path, log;
  explicit FakeNcu(const std::string& mode,
                   const std::string& fixture = kData + "/deep_cuda_fp16_b8_block5_expand_block") {
    path = dir.file("ncu");
    log = dir.file("ncu.log");
    write_file(path,
               "#!/bin/sh\nexec '" + kData + "/fake-ncu.sh' " + mode + " '" + fixture + "' '" + log + "' \"$@\"\n");
    fs::permissions(path, fs::perms::owner_all);
  }
  std::vector<std::vector<std::string>> calls() const {
    std::vector<std::vector<std::string>> out(1);
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line == "--") {
        out.emplace_back();
        continue;
      }
      out.back().push_back(line);
    }
    out.pop_back();
    return out;
  }
};

// The command the ncu-command study makes for layer 1 of a cuda run (its steps renamed as a fusing run names them).
std::vector<std::string> study_command() {
  ProfileConfig pc;
  pc.backend = "cpu-ref";
  pc.height = pc.width = 64;
  pc.warmup = 0;
  pc.iters = 1;
  RunReport r = profile(builtin_mobilenet_v2(), pc);
  r.backend = "cuda";
  r.steps[0].name = "Conv2d 0 + ReLU6 1";
  r.steps[0].layers = {0, 1};
  r.layers[1].step = 0;
  const NcuCommand c = ncu_command(r, 1, "/opt/mnv2/bin/mnv2");
  EXPECT_EQ(c.step_layers, (std::vector<int>{0, 1}));
  return c.argv;
}

TEST(DeepDiveRun, RunsNcuWithClocksLeftAloneAndItsReportInAPrivateFolder) {
  FakeNcu ncu("ok");
  std::vector<std::string> lines;
  NcuRun run;
  run.argv = study_command();
  run.ncu = ncu.path;
  const NcuRunResult r = run_ncu(run, [&](const std::string& line) {
    if (!line.empty()) lines.push_back(line);
    return true;
  });
  ASSERT_EQ(r.summary.kernels.size(), 1u);
  EXPECT_EQ(r.summary.kernels[0].id, 1);
  EXPECT_FALSE(r.summary.kernels[0].notes.empty());  // the details page was read too
  EXPECT_EQ(r.ncu_version, "Version 2025.3.1.0 (build 36398880) (public-release)");
  // Progress: ncu's own lines as they came.
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind("==PROF== Connected to process", 0), 0u);
  // The calls: the profiling run, then --version and the two imports of its report.
  const auto calls = ncu.calls();
  ASSERT_EQ(calls.size(), 4u);
  const std::vector<std::string>& p = calls[0];
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p[0], "--clock-control");
  EXPECT_EQ(p[1], "none");
  // Then the study's arguments, but for -o's value.
  ASSERT_EQ(p.size(), run.argv.size() + 1);
  for (size_t i = 1; i < run.argv.size(); ++i)
    if (run.argv[i - 1] != "-o") EXPECT_EQ(p[i + 1], run.argv[i]) << i;
  const auto o = std::find(p.begin(), p.end(), "-o");
  ASSERT_NE(o, p.end());
  const fs::path report = *(o + 1);
  EXPECT_EQ(report.filename(), "mnv2_cuda_layer1");
  EXPECT_EQ(report.parent_path().filename().string().rfind("mnv2-ncu-", 0), 0u) << report;
  EXPECT_FALSE(fs::exists(report.parent_path())) << "the private folder is removed afterwards";
  EXPECT_EQ(calls[1], (std::vector<std::string>{"--version"}));
  EXPECT_EQ(calls[2], (std::vector<std::string>{"--import", report.string() + ".ncu-rep", "--csv", "--page", "raw",
                                                "--print-units", "base"}));
  EXPECT_EQ(calls[3],
            (std::vector<std::string>{"--import", report.string() + ".ncu-rep", "--csv", "--page", "details"}));
}

TEST(DeepDiveRun, EachFailureIsOneClearLine) {
  NcuRun run;
  run.argv = study_command();
  const auto failure = [&](const std::string& ncu) {
    run.ncu = ncu;
    return message_of([&] { run_ncu(run); });
  };
  // Not installed.
  TempDir empty;
  const std::string missing = failure(empty.file("ncu"));
  EXPECT_NE(missing.find("Nsight Compute's ncu cannot be started"), std::string::npos) << missing;
  EXPECT_NE(missing.find("No such file or directory"), std::string::npos) << missing;
  // The counters not permitted: what an administrator must set.
  const std::string perm = failure(FakeNcu("perm").path);
  EXPECT_EQ(perm, ncu_permission_message());
  EXPECT_NE(perm.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  // ncu (or the program it ran) failing: ncu's error and the program's own last line.
  FakeNcu fail("fail");
  const std::string failed = failure(fail.path);
  EXPECT_NE(failed.find("ncu failed (exit status 1): ==ERROR== The application returned an error code (1)"),
            std::string::npos)
      << failed;
  EXPECT_NE(failed.find("no CUDA-capable device is detected"), std::string::npos) << failed;
  // Nothing profiled: no report.
  const std::string none = failure(FakeNcu("empty").path);
  EXPECT_NE(none.find("ncu profiled no kernel (no report was written)"), std::string::npos) << none;
  // A report without kernels.
  const std::string no_kernels = failure(FakeNcu("nokernels").path);
  EXPECT_NE(no_kernels.find("no kernel was profiled"), std::string::npos) << no_kernels;
  for (const std::string& m : {missing, perm, failed, none, no_kernels})
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(DeepDiveRun, CancelEndsNcuAndWhatItStarted) {
  FakeNcu ncu("slow");
  NcuRun run;
  run.argv = study_command();
  run.ncu = ncu.path;
  bool started = false;
  const std::string m = message_of([&] {
    run_ncu(run, [&](const std::string& line) {
      started = started || !line.empty();
      // Cancel once ncu's program runs: its pid written whole (the stand-in's `echo $! >file` creates the file
      // before it writes the line).
      const std::string pid_file = ncu.log + ".child";
      return !(started && fs::exists(pid_file) && read_file(pid_file).find('\n') != std::string::npos);
    });
  });
  EXPECT_EQ(m, "cancelled");
  // (Without the cancel, run_ncu would return only when the stand-in's 300 s sleep ended, with another message.)
  const pid_t child = std::stoi(read_file(ncu.log + ".child"));
  // The process group went down: the child (reparented, reaped by init or a subreaper) is gone within a moment.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = ::kill(child, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "pid " << child << " still runs";
}

TEST(DeepDive, RefusesCpuRunsAndSaysWhenTheBackendCannotRunHere) {
  ProfileConfig pc;
  pc.backend = "cpu-ref";
  pc.height = pc.width = 64;
  pc.warmup = 0;
  pc.iters = 1;
  RunReport r = profile(builtin_mobilenet_v2(), pc);
  EXPECT_THROW(deep_dive(r, 1, {}), UsageError);
  r.backend = "cuda";
  if (make_backend("cuda")->availability().available) GTEST_SKIP() << "the cuda backend runs here";
  const std::string m = message_of([&] { deep_dive(r, 1, {}); });
  EXPECT_EQ(m.rfind("no deep dive here: the cuda backend cannot run on this machine (", 0), 0u) << m;
}

TEST(DeepDive, TheJsonHoldsEveryFigureByName) {
  DeepDiveResult r;
  r.backend = "cuda";
  r.layer = 25;
  r.step_name = "Conv2d 25 + ResidualAdd 26";
  r.layers = {25, 26};
  r.ncu.summary = summarise_ncu(parse_ncu_raw(fixture("r3ncu_fp16_b1_step25.raw.csv")));
  const json::Json j = json::parse(deep_dive_json(r));
  EXPECT_EQ(j["schema"], "mnv2.deep_dive/1");
  EXPECT_EQ(j["layers"], json::Json({25, 26}));
  EXPECT_DOUBLE_EQ(j["total"]["duration_ns"].get<double>(), 7200);
  EXPECT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["occupancy_limiter"], "registers+shared_mem");
  EXPECT_TRUE(j["kernels"][0]["l1_bytes"].is_null());
  EXPECT_EQ(j["measured_median_ns"], nullptr);
}

// A command line as the ncu-command study prints it (words with spaces single-quoted), split into its words.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, started = false;
  for (const char c : line) {
    if (c == '\'') {
      quoted = !quoted;
      started = true;
    } else if (!quoted && (c == ' ' || c == '\n')) {
      if (started) words.push_back(word);
      word.clear();
      started = false;
    } else {
      word += c;
      started = true;
    }
  }
  if (started) words.push_back(word);
  return words;
}

// The JSON of a whole study's result, as `mnv2 deep-dive --report R --json F` writes it for a fused cuda block: ncu
// (the stand-in) run and its pages imported, the run's measured figures beside them. Written into a TempDir, so that
// under ctest the test reports_match_schemas validates it against resources/schemas/mnv2.deep_dive.schema.json (the
// deep dive itself needs a GPU: no CLI test can write one here); tests/data/ncu/deep_dive.json is a copy of it for the
// schema's mutation test (tests/schemas/test_schemas.py).
TEST(DeepDive, TheJsonOfAStudysResultIsWritten) {
  FakeNcu ncu("ok");
  NcuRun run;
  // The fixture's own command, as the ncu-command study printed it for the recording.
  run.argv = shell_words(read_file(kData + "/deep_cuda_fp16_b8_block5_expand_block.cmd"));
  ASSERT_EQ(run.argv.front(), "ncu");
  const std::string step = "Conv2d 21 + ReLU6 22 + Conv2d 23 + ReLU6 24 + Conv2d 25 + ResidualAdd 26";
  EXPECT_EQ(run.argv[3], step + "/");
  run.ncu = ncu.path;
  DeepDiveResult r;
  r.backend = "cuda";
  r.device = "NVIDIA H200";
  r.layer = 21;
  r.step = 15;
  r.step_name = step;
  r.layers = {21, 22, 23, 24, 25, 26};
  r.layer_names = {"block5.expand",   "block5.expand_relu6", "block5.dw",
                   "block5.dw_relu6", "block5.project",      "block5.add"};
  r.timer = "cuda_event";
  r.measured_median_ns = 7008;
  r.intensity_flop_per_byte = 21.5;
  r.gflops = 1450.2;
  r.ncu = run_ncu(run);
  const std::string text = deep_dive_json(r);
  TempDir out;
  std::ofstream(out.file("deep_dive.json"), std::ios::binary) << text;
  const json::Json j = json::parse(text);
  EXPECT_EQ(j["schema"], "mnv2.deep_dive/1");
  EXPECT_EQ(j["kernels"].size(), 1u);
  EXPECT_FALSE(j["kernels"][0]["notes"].empty());
  EXPECT_EQ(j["ncu_command"][0], ncu.path);
  EXPECT_DOUBLE_EQ(j["measured_median_ns"].get<double>(), 7008);
}

}  // namespace
}  // namespace mnv2::test
