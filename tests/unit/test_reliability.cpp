// The reliability checks (mnv2/reliability.h) on synthetic inputs, one check at a time; the host probe on
// fake and absent /proc files; reliability in the JSON report (round trip, older reports, refusals), the CSV
// and the bench files; and the cpu backends' thread count as a PrepareConfig field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/reliability.h"
#include "mnv2/report.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

Summary spread(double median, double p90, double cv, int n = 100) {
  Summary s;
  s.n = n;
  s.median = s.mean = median;
  s.min = median * 0.9;
  s.max = p90 * 1.2;
  s.p10 = median * 0.95;
  s.p90 = p90;
  s.p95 = s.p99 = p90 * 1.1;
  s.cv = cv;
  s.stddev = cv * median;
  return s;
}

const ReliabilityFinding* find(const Reliability& r, const std::string& code) {
  for (const auto& f : r.findings)
    if (f.code == code) return &f;
  return nullptr;
}

ReliabilityInputs quiet() {
  ReliabilityInputs in;
  in.end_to_end = spread(4.0, 4.1, 0.01);
  return in;
}

TEST(Reliability, QuietRunIsOk) {
  const Reliability r = assess_reliability(quiet());
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.verdict(), Verdict::ok);
  EXPECT_EQ(r.summary(), "");
}

TEST(Reliability, EndToEndCv) {
  ReliabilityInputs in = quiet();
  in.end_to_end = spread(20.9, 22.0, 0.80);
  Reliability r = assess_reliability(in);
  const ReliabilityFinding* f = find(r, "e2e_cv");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::unreliable);
  EXPECT_EQ(f->reason, "end-to-end CV 80% (> 10%)");
  EXPECT_DOUBLE_EQ(f->value, 0.80);
  EXPECT_EQ(r.verdict(), Verdict::unreliable);
  EXPECT_EQ(r.summary().rfind("unreliable: end-to-end CV 80% (> 10%)", 0), 0u) << r.summary();

  in.end_to_end = spread(4.0, 4.1, 0.07);
  r = assess_reliability(in);
  ASSERT_NE(find(r, "e2e_cv"), nullptr);
  EXPECT_EQ(find(r, "e2e_cv")->verdict, Verdict::noted);
  EXPECT_EQ(r.verdict(), Verdict::noted);

  in.end_to_end = spread(4.0, 4.1, 0.8, 1);  // one run says nothing about spread
  EXPECT_TRUE(assess_reliability(in).findings.empty());
}

TEST(Reliability, EndToEndTail) {
  ReliabilityInputs in = quiet();
  in.end_to_end = spread(20.9, 305.0, 0.04);  // the tester's busy 2-core machine
  const Reliability rel1 = assess_reliability(in);
  const ReliabilityFinding* f = find(rel1, "e2e_tail");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::unreliable);
  EXPECT_NE(f->reason.find("14.59x the median"), std::string::npos) << f->reason;
  in.end_to_end = spread(4.0, 5.0, 0.04);  // 1.25x: a note
  EXPECT_EQ(find(assess_reliability(in), "e2e_tail")->verdict, Verdict::noted);
  in.end_to_end = spread(4.0, 4.6, 0.04);  // 1.15x: nothing
  EXPECT_EQ(find(assess_reliability(in), "e2e_tail"), nullptr);
}

TEST(Reliability, NoisySteps) {
  ReliabilityInputs in = quiet();
  in.steps = {{"block1.expand", 0.20, 0.60}, {"block2.dw", 0.10, 0.30}, {"head.fc", 0.50, 0.02}, {"tiny", 0.20, 0.24}};
  const Reliability rel2 = assess_reliability(in);
  const ReliabilityFinding* f = find(rel2, "step_cv");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::unreliable);  // 30% of the time in steps over 25% CV
  EXPECT_NEAR(f->value, 0.30, 1e-12);
  EXPECT_NE(f->reason.find("2 steps carrying 30%"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("worst: block1.expand"), std::string::npos) << f->reason;
  in.steps = {{"a", 0.06, 0.9}, {"b", 0.94, 0.01}};
  EXPECT_EQ(find(assess_reliability(in), "step_cv")->verdict, Verdict::noted);
  in.steps = {{"a", 0.02, 0.9}, {"b", 0.98, 0.01}};  // too little of the time to matter
  EXPECT_EQ(find(assess_reliability(in), "step_cv"), nullptr);
}

TEST(Reliability, SmClock) {
  ReliabilityInputs in = quiet();
  in.gpu = true;
  in.other_gpu_processes = 0;
  in.sm_clock_start_mhz = in.sm_clock_max_mhz = 1980;
  in.sm_clock_end_mhz = in.sm_clock_min_mhz = 1710;
  const Reliability rel3 = assess_reliability(in);
  const ReliabilityFinding* f = find(rel3, "sm_clock");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::unreliable);
  EXPECT_NE(f->reason.find("between 1710 and 1980 MHz"), std::string::npos) << f->reason;
  in.sm_clock_end_mhz = in.sm_clock_min_mhz = 1965;  // one boost step: nothing
  EXPECT_EQ(find(assess_reliability(in), "sm_clock"), nullptr);
  in.sm_clock_end_mhz = in.sm_clock_min_mhz = 1920;  // 3%: a note
  EXPECT_EQ(find(assess_reliability(in), "sm_clock")->verdict, Verdict::noted);
  in.sm_clock_start_mhz = in.sm_clock_end_mhz = in.sm_clock_min_mhz = in.sm_clock_max_mhz = -1;
  EXPECT_EQ(find(assess_reliability(in), "sm_clock")->verdict, Verdict::unknown);
  EXPECT_EQ(assess_reliability(in).verdict(), Verdict::unknown);
  in.gpu = false;  // a host run has no clock to check
  EXPECT_EQ(find(assess_reliability(in), "sm_clock"), nullptr);
}

TEST(Reliability, OtherGpuProcesses) {
  ReliabilityInputs in = quiet();
  in.gpu = true;
  in.sm_clock_start_mhz = in.sm_clock_end_mhz = in.sm_clock_min_mhz = in.sm_clock_max_mhz = 1980;
  in.other_gpu_processes = 2;
  in.other_gpu_process_ids = "4242, 4343";
  const Reliability rel4 = assess_reliability(in);
  const ReliabilityFinding* f = find(rel4, "gpu_processes");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::unreliable);
  EXPECT_NE(f->reason.find("2 other processes hold"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("4242, 4343"), std::string::npos) << f->reason;
  in.other_gpu_processes = 0;
  EXPECT_TRUE(assess_reliability(in).findings.empty());
  in.other_gpu_processes.reset();  // no NVML
  EXPECT_EQ(find(assess_reliability(in), "gpu_processes")->verdict, Verdict::unknown);
}

TEST(Reliability, HostContention) {
  ReliabilityInputs in = quiet();
  HostContention h;
  h.cpu_time_known = true;
  h.wall_s = 3;
  h.cpus = 2;
  h.others_cores = 1.9;
  h.load_average = 1.5;
  in.threads_used = 2;
  in.host = h;
  const Reliability rel5 = assess_reliability(in);
  const ReliabilityFinding* f = find(rel5, "host_busy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::unreliable);
  EXPECT_EQ(f->reason, "host busy: other processes used 1.9 of 2 cores while the run kept 2 threads busy (0 free)");
  // One thread leaves a core free: 0.9 core of others fits in it.
  in.threads_used = 1;
  in.host->others_cores = 0.9;
  EXPECT_EQ(find(assess_reliability(in), "host_busy"), nullptr);
  in.host->others_cores = 1.3;  // 0.3 over the free core: a note
  EXPECT_EQ(find(assess_reliability(in), "host_busy")->verdict, Verdict::noted);
  // Too short a span for jiffies to say anything.
  in.host->wall_s = 0.05;
  in.host->others_cores = 5;
  EXPECT_EQ(find(assess_reliability(in), "host_busy"), nullptr);
}

TEST(Reliability, LoadAverageDecidesOnlyWithoutCpuTime) {
  ReliabilityInputs in = quiet();
  HostContention h;
  h.cpus = 2;
  h.load_average = 4.2;
  h.cpu_time_known = false;
  h.problem = "/proc/self/stat unreadable";
  in.threads_used = 2;
  in.host = h;
  Reliability r = assess_reliability(in);
  EXPECT_EQ(find(r, "host_busy")->verdict, Verdict::unknown);
  EXPECT_NE(find(r, "host_busy")->reason.find("/proc/self/stat unreadable"), std::string::npos);
  ASSERT_NE(find(r, "host_load"), nullptr);
  EXPECT_EQ(find(r, "host_load")->verdict, Verdict::unreliable);
  EXPECT_NE(find(r, "host_load")->reason.find("load average 4.20 on 2 cores"), std::string::npos);
  in.host->cpu_time_known = true;  // the CPU time measured: the load average is a note beside it
  in.host->wall_s = 2;
  in.host->others_cores = 0;
  r = assess_reliability(in);
  EXPECT_EQ(find(r, "host_load")->verdict, Verdict::noted);
  EXPECT_EQ(r.verdict(), Verdict::noted);
}

TEST(Reliability, VerdictNamesRoundTrip) {
  for (Verdict v : {Verdict::ok, Verdict::unknown, Verdict::noted, Verdict::unreliable})
    EXPECT_EQ(parse_verdict(to_string(v)), v);
  EXPECT_THROW(parse_verdict("bad"), Error);
}

// ---- the host probe ---------------------------------------------------------------------------------

void write_proc(const std::string& dir, long long busy_jiffies, long long self_jiffies) {
  std::filesystem::create_directories(dir + "/self");
  // user nice system idle iowait irq softirq steal: busy = user + system + steal here
  write_file(dir + "/stat", "cpu  " + std::to_string(busy_jiffies - 10) + " 0 5 99999 0 0 0 5 0 0\ncpu0 1 0 0 0\n" +
                                "cpu1 1 0 0 0\nintr 1\n");
  // Field 14 and 15 (utime, stime) after "pid (comm with ) spaces) state".
  write_file(dir + "/self/stat",
             "77 (a b) c) R 1 2 3 4 5 6 7 8 9 10 " + std::to_string(self_jiffies) + " 0 0 0 20 0 1 0 100 1000 100\n");
  write_file(dir + "/loadavg", "2.50 1.00 0.50 3/200 77\n");
}

TEST(Reliability, HostProbeReadsFakeProc) {
  TempDir tmp;
  const std::string proc = tmp.path() + "/proc";
  const long hz = sysconf(_SC_CLK_TCK);
  write_proc(proc, 1000, 100);
  HostContentionProbe probe(proc);
  probe.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  // Over the span: every CPU busy for 1.5 s x hz more, this process 0.3 s x hz of it.
  write_proc(proc, 1000 + hz * 3 / 2, 100 + hz * 3 / 10);
  const HostContention h = probe.stop();
  ASSERT_TRUE(h.cpu_time_known) << h.problem;
  EXPECT_EQ(h.cpus, 2);
  EXPECT_NEAR(h.load_average, 2.5, 1e-9);
  EXPECT_GE(h.wall_s, 0.4);
  // Others: 1.2 CPU seconds over the span (a little over 0.4 s).
  EXPECT_NEAR(h.others_cores * h.wall_s, 1.2, 0.02);
}

TEST(Reliability, HostProbeWithoutProcSaysUnknown) {
  TempDir tmp;
  HostContentionProbe probe(tmp.path() + "/absent");
  probe.start();
  const HostContention h = probe.stop();
  EXPECT_FALSE(h.cpu_time_known);
  EXPECT_EQ(h.load_average, -1);
  EXPECT_NE(h.problem.find("absent/stat unreadable"), std::string::npos) << h.problem;
  ReliabilityInputs in = quiet();
  in.host = h;
  EXPECT_EQ(assess_reliability(in).verdict(), Verdict::unknown);

  // A garbled self/stat is unknown too, never a throw.
  const std::string proc = tmp.path() + "/garbled";
  write_proc(proc, 10, 1);
  write_file(proc + "/self/stat", "no parenthesis here\n");
  HostContentionProbe garbled(proc);
  garbled.start();
  EXPECT_FALSE(garbled.stop().cpu_time_known);
}

TEST(Reliability, HostProbeOnThisMachine) {
  HostContentionProbe probe;
  probe.start();
  const HostContention h = probe.stop();
  if (!h.cpu_time_known) GTEST_SKIP() << "no readable /proc here: " << h.problem;
  EXPECT_GT(h.cpus, 0);
  EXPECT_GE(h.others_cores, 0);
}

// ---- reports ------------------------------------------------------------------------------------------

RunReport small_report(int threads) {
  static const Model model = builtin_mobilenet_v2();
  ProfileConfig cfg;
  cfg.height = cfg.width = 32;
  cfg.warmup = 0;
  cfg.iters = 3;
  cfg.cpu_threads = threads;
  return profile(model, cfg);
}

TEST(Reliability, ReportCarriesThreadsAndFindings) {
  RunReport r = small_report(1);
  EXPECT_EQ(r.config.cpu_threads, 1);
  EXPECT_NE(r.backend_description.find("1 thread"), std::string::npos) << r.backend_description;
  // Every host run has its host check made (or said unknown); the verdict is whatever the machine gave.
  r.reliability.findings = {{"e2e_cv", Verdict::unreliable, "end-to-end CV 80% (> 10%)", 0.8, 0.1},
                            {"host_busy", Verdict::unknown, "host CPU use of other processes unknown", 0, 0.5}};
  const std::vector<RunReport> back = reports_from_json(json::parse(reports_json_text({r})));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].config.cpu_threads, 1);
  ASSERT_EQ(back[0].reliability.findings.size(), 2u);
  EXPECT_EQ(back[0].reliability.findings[0].code, "e2e_cv");
  EXPECT_EQ(back[0].reliability.findings[0].verdict, Verdict::unreliable);
  EXPECT_EQ(back[0].reliability.findings[0].reason, "end-to-end CV 80% (> 10%)");
  EXPECT_DOUBLE_EQ(back[0].reliability.findings[0].value, 0.8);
  EXPECT_EQ(back[0].reliability.findings[1].verdict, Verdict::unknown);
  EXPECT_EQ(back[0].reliability.verdict(), Verdict::unreliable);
  // The CSV says the verdict on every row.
  const std::string csv = report_csv({r});
  EXPECT_NE(csv.find(",reliability\n"), std::string::npos);
  EXPECT_NE(csv.find(",unreliable\n"), std::string::npos);
}

TEST(Reliability, OldReportsOpenAndBadOnesAreRefused) {
  RunReport r = small_report(2);
  r.reliability.findings = {{"e2e_tail", Verdict::noted, "p90", 1.3, 1.5}};
  json::Json j = reports_json({r});
  // Written before the fields existed: no findings, threads unknown (0).
  json::Json old = j;
  old["runs"][0].erase("reliability");
  old["runs"][0]["metadata"].erase("cpu_threads");
  const std::vector<RunReport> back = reports_from_json(old);
  EXPECT_TRUE(back[0].reliability.findings.empty());
  EXPECT_EQ(back[0].config.cpu_threads, 0);

  auto refused = [&](const std::function<void(json::Json&)>& spoil, const std::string& words) {
    json::Json bad = j;
    spoil(bad["runs"][0]);
    try {
      reports_from_json(bad);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([](json::Json& run) { run["reliability"]["findings"][0]["verdict"] = "fine"; }, "fine");
  refused([](json::Json& run) { run["reliability"]["findings"][0]["verdict"] = "ok"; }, "verdict ok");
  refused([](json::Json& run) { run["reliability"]["verdict"] = "ok"; }, "does not match");
  refused([](json::Json& run) { run["reliability"]["findings"][0]["code"] = ""; }, "empty code");
  refused([](json::Json& run) { run["reliability"]["findings"][0]["value"] = "x"; }, "value");
  refused([](json::Json& run) { run["metadata"]["cpu_threads"] = -1; }, "cpu_threads");
  refused([](json::Json& run) { run["metadata"]["cpu_threads"] = 5000; }, "cpu_threads");
}

TEST(Reliability, BenchFilesCarryThreadsAndVerdict) {
  static const Model model = builtin_mobilenet_v2();
  BenchConfig c;
  c.height = c.width = 32;
  c.warmup = 0;
  c.iters = 3;
  c.cpu_threads = 1;
  const BenchResult b = run_bench(model, c);
  EXPECT_EQ(b.config.cpu_threads, 1);
  EXPECT_NE(b.backend_description.find("1 thread"), std::string::npos) << b.backend_description;
  const json::Json j = json::parse(bench_json({b}, report_model(model, "test")));
  const json::Json& row = j["results"][0];
  EXPECT_EQ(row["cpu_threads"].get<int>(), 1);
  EXPECT_EQ(row["reliability"]["verdict"].get<std::string>(), to_string(b.reliability.verdict()));
  const std::string csv = bench_csv({b});
  EXPECT_NE(csv.find(",cpu_threads,reliability\n"), std::string::npos);
  EXPECT_NE(csv.find(std::string(",1,") + to_string(b.reliability.verdict()) + "\n"), std::string::npos) << csv;
}

TEST(Reliability, ThreadCountIsAPrepareField) {
  static const Model model = builtin_mobilenet_v2();
  for (const char* name : {"cpu", "cpu-ref"}) {
    auto backend = make_backend(name);
    PrepareConfig pc{1, 32, 32, Precision::fp32};
    pc.cpu_threads = 3;
    auto net = backend->prepare(model, pc);
    EXPECT_EQ(net->config().cpu_threads, 3) << name;
    EXPECT_NE(net->description().find("3 threads"), std::string::npos) << net->description();
    pc.cpu_threads = 0;  // the default, resolved
    EXPECT_GE(backend->prepare(model, pc)->config().cpu_threads, 1) << name;
    for (int bad : {-1, 4097}) {
      pc.cpu_threads = bad;
      EXPECT_THROW(backend->prepare(model, pc), UsageError) << name << " " << bad;
    }
  }
}

}  // namespace
}  // namespace mnv2::test
