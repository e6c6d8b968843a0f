// Every run option of the engine's table (mnv2/options.h) round-trips through the CLI: given as a flag or taken
// from its environment variable, it is in the report with its value and source, the run says on its first line
// what it took from the environment, the flags and help come from the table, and --ncu-command repeats the
// options that are not defaults. (The app's half of the round trip is tests/ui/test_run_settings_options.cpp.)
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/device.h"
#include "mnv2/options.h"
#include "mnv2/report.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// A valid non-default value of every per-run option that a cpu profile accepts (exec graph and reduced
// precisions are refused by the cpu backend: they keep their defaults).
std::map<std::string, std::string> cpu_run_values() {
  std::map<std::string, std::string> v;
  for (const OptionSpec& s : option_table()) {
    if (!s.per_run || s.name == "backend" || s.name == "exec" || s.name == "precision" || s.name == "threads") continue;
    switch (s.type) {
      case OptionType::choice:
        for (const std::string& c : s.choices)
          if (c != s.default_value) {
            v[s.name] = c;
            break;
          }
        break;
      case OptionType::integer:
        v[s.name] = s.name == "iters" ? "2" : s.name == "warmup" ? "1" : "2";
        break;
      case OptionType::size:
        v[s.name] = "64x48";
        break;
      case OptionType::text:
        v[s.name] = "128x64";
        break;
      case OptionType::path:
        break;
    }
  }
  return v;
}

TEST(CliOptions, EveryRunOptionRoundTripsThroughAReportWithItsSource) {
  TempDir tmp;
  const std::map<std::string, std::string> values = cpu_run_values();
  std::vector<std::string> args = {"profile", "--model", main_model_path(), "--backend",
                                   "cpu-ref", "--json",  tmp.file("r.json")};
  for (const auto& [name, value] : values) {
    args.push_back("--" + name);
    args.push_back(value);
  }
  // threads from the environment, and a cuda option both from the environment and a flag (the flag wins).
  const CliResult r = run_cli(args, {"MNV2_CPU_THREADS=1", "MNV2_CUDA_FUSE=block"});
  ASSERT_EQ(r.code, 0) << describe(r);
  // The first line says what came from the environment (the flag's cuda-fusion did not).
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "options from the environment: threads=1 ($MNV2_CPU_THREADS)") << r.out;

  const std::vector<RunReport> reports = read_reports_file(tmp.file("r.json"));
  ASSERT_EQ(reports.size(), 1u);
  const OptionValues& o = reports[0].options;
  for (const auto& [name, value] : values) {
    EXPECT_EQ(o.at(name).value, value) << name;
    EXPECT_EQ(o.at(name).source, OptionSource::flag) << name;
  }
  EXPECT_EQ(o.at("threads"), (OptionValue{"1", OptionSource::environment}));
  EXPECT_EQ(o.at("backend"), (OptionValue{"cpu-ref", OptionSource::flag}));
  EXPECT_EQ(o.at("precision"), (OptionValue{"fp32", OptionSource::default_value}));
  // What ran agrees with what was asked.
  EXPECT_EQ(reports[0].config.batch, 2);
  EXPECT_EQ(reports[0].config.height, 64);
  EXPECT_EQ(reports[0].config.width, 48);
  EXPECT_EQ(reports[0].config.cuda.fusion, parse_cuda_fusion(values.at("cuda-fusion")));
  EXPECT_EQ(reports[0].config.cudnn.layout, CudnnOptions::Layout::nchw);
  EXPECT_EQ(reports[0].config.cpu_threads, 1);

  // The same run again, options from the environment only: the sources say so.
  const CliResult e = run_cli({"profile", "--model", main_model_path(), "--backend", "cpu-ref", "--input-size", "32",
                               "--warmup", "0", "--iters", "1", "--json", tmp.file("e.json")},
                              {"MNV2_CUDA_FUSE=block", "MNV2_CUDA_PDL=off"});
  ASSERT_EQ(e.code, 0) << describe(e);
  EXPECT_NE(e.out.find("cuda-fusion=block ($MNV2_CUDA_FUSE), cuda-pdl=off ($MNV2_CUDA_PDL)"), std::string::npos)
      << e.out;
  const OptionValues& eo = read_reports_file(tmp.file("e.json"))[0].options;
  EXPECT_EQ(eo.at("cuda-fusion"), (OptionValue{"block", OptionSource::environment}));
  EXPECT_EQ(eo.at("cuda-pdl"), (OptionValue{"off", OptionSource::environment}));
  EXPECT_EQ(eo.at("cuda-splitk").source, OptionSource::default_value);

  // The comparability check names an option both runs' backend honours, with its source (threads), and not the
  // cuda options the cpu reference ignores (tests/unit/test_options.cpp shows them for cuda runs).
  const CliResult runs = run_cli({"runs", tmp.file("r.json"), tmp.file("e.json")});
  ASSERT_EQ(runs.code, 0) << describe(runs);
  EXPECT_NE(runs.out.find("threads 1 (environment) -> "), std::string::npos) << runs.out;
  EXPECT_EQ(runs.out.find("cuda-fusion"), std::string::npos) << runs.out;
}

TEST(CliOptions, FlagsAndHelpComeFromTheTable) {
  const CliResult help = run_cli({"profile", "--help"});
  ASSERT_EQ(help.code, 0) << describe(help);
  for (const OptionSpec& s : option_table()) {
    EXPECT_NE(help.out.find("--" + s.name), std::string::npos) << s.name;
    if (!s.env.empty()) EXPECT_NE(help.out.find("$" + s.env), std::string::npos) << s.env;
  }
  // A bad environment value is a usage error naming the variable, before any work.
  const CliResult bad = run_cli({"profile", "--backend", "cpu-ref"}, {"MNV2_CUDA_SPLITK=sometimes"});
  EXPECT_EQ(bad.code, 2) << describe(bad);
  EXPECT_NE(bad.err.find("$MNV2_CUDA_SPLITK must be one of separate, in_kernel"), std::string::npos) << bad.err;
}

// --device names the GPU of every GPU command; a bad one is refused with the reason, never a crash or device 0.
TEST(CliOptions, EveryGpuCommandTakesADeviceAndRefusesOneThisMachineDoesNotShow) {
  for (const char* command : {"profile", "roofline", "compare", "bench", "classify", "memory", "eval", "lab"}) {
    const CliResult help = run_cli({command, "--help"});
    EXPECT_NE(help.out.find("--device"), std::string::npos) << command;
  }
  for (const char* bad : {"-1", "x", "2000"}) {
    const CliResult r = run_cli({"profile", "--model", main_model_path(), "--backend", "cuda", "--device", bad});
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("--device"), std::string::npos) << r.err;
  }
  // An ordinal past the machine's GPUs: where there is a GPU, the message lists them; without one, it says why.
  const int missing = static_cast<int>(cuda_environment().devices.size());
  const CliResult r = run_cli({"profile", "--model", main_model_path(), "--backend", "cuda", "--batch", "1", "--iters",
                               "1", "--warmup", "0", "--device", std::to_string(missing)});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.signaled) << describe(r);
  if (missing > 0) {
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("--device " + std::to_string(missing) + ": this machine shows"), std::string::npos) << r.err;
  }
}

TEST(CliOptions, TheNcuCommandRepeatsEveryOptionThatIsNotADefault) {
  const CliResult r =
      run_cli({"profile", "--model", main_model_path(), "--backend", "cuda", "--ncu-command", "5", "--batch", "4",
               "--cuda-pdl", "off", "--cuda-splitk", "in_kernel", "--cudnn-layout", "nhwc"},
              {"MNV2_CUDA_FUSE=block", "MNV2_GPU_PLUGIN=/nonexistent/plugin.so"});
  ASSERT_EQ(r.code, 0) << describe(r);
  for (const char* want : {"--cuda-pdl off", "--cuda-splitk in_kernel", "--cuda-fusion block", "--batch 4"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  EXPECT_EQ(r.out.find("--cudnn-layout"), std::string::npos) << "the cuda backend ignores it\n" << r.out;
}

}  // namespace
}  // namespace mnv2::test
