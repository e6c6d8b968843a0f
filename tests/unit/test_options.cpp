// The run-option table (mnv2/options.h): every option well formed, the one precedence rule, the environment's
// values through a front end's lookup, the options a profile records and a report keeps, and the
// comparability check's findings for options that differ.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/options.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"
#include "mnv2/sweep.h"

namespace mnv2::test {
namespace {

// A valid value other than the default for every option (what a round trip sets).
std::string other_value(const OptionSpec& s) {
  switch (s.type) {
    case OptionType::choice:
      for (const std::string& c : s.choices)
        if (c != s.default_value) return c;
      return s.default_value;
    case OptionType::integer:
      return std::to_string(s.min + 1 > 1 ? s.min + 1 : 1);
    case OptionType::size:
      return "96x64";
    case OptionType::text:
      return "128x64";
    case OptionType::path:
      return "/tmp/somewhere";
  }
  return {};
}

std::vector<RunReport> read_reports_text(const std::string& text) { return reports_from_json(json::Json::parse(text)); }

std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Options, EveryOptionIsWellFormed) {
  std::set<std::string> names, envs;
  for (const OptionSpec& s : option_table()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(names.insert(s.name).second) << "named twice";
    EXPECT_FALSE(s.help.empty());
    EXPECT_NE(s.help.back(), '.');
    if (!s.env.empty()) EXPECT_TRUE(envs.insert(s.env).second) << s.env << " mapped twice";
    if (s.type == OptionType::choice) {
      EXPECT_GE(s.choices.size(), 2u);
      EXPECT_NE(std::find(s.choices.begin(), s.choices.end(), s.default_value), s.choices.end());
    }
    for (const std::string& b : s.backends)
      EXPECT_TRUE(b == "cpu" || b == "cpu-ref" || b == "cudnn" || b == "cuda") << b;
    EXPECT_EQ(find_option(s.name), &s);
  }
  EXPECT_NO_THROW(OptionValues());
  EXPECT_EQ(find_option("no-such"), nullptr);
  // Every backend option of PrepareConfig is in the table.
  for (const char* n : {"backend",          "precision",    "batch",       "input-size",
                        "warmup",           "iters",        "timing",      "exec",
                        "threads",          "cuda-variant", "cuda-fusion", "cuda-graph",
                        "cuda-gemm-tile",   "cuda-pdl",     "cuda-splitk", "cudnn-variant",
                        "cudnn-graph",      "cudnn-layout", "model",       "cache-dir",
                        "cudnn-plan-cache", "cupti",        "lab-dir"})
    EXPECT_NE(find_option(n), nullptr) << n;
}

TEST(Options, FlagOverEnvironmentOverSavedOverDefault) {
  OptionValues v;
  EXPECT_EQ(v.value("cuda-fusion"), "auto");
  EXPECT_EQ(v.at("cuda-fusion").source, OptionSource::default_value);
  v.offer("cuda-fusion", "expand_dw", OptionSource::saved);
  EXPECT_EQ(v.value("cuda-fusion"), "expand_dw");
  v.offer_environment(env_of({{"MNV2_CUDA_FUSE", "block"}}));
  EXPECT_EQ(v.value("cuda-fusion"), "block");
  EXPECT_EQ(v.at("cuda-fusion").source, OptionSource::environment);
  v.offer("cuda-fusion", "expand_dw", OptionSource::saved);  // weaker: ignored
  EXPECT_EQ(v.value("cuda-fusion"), "block");
  v.offer("cuda-fusion", "none", OptionSource::flag);
  EXPECT_EQ(v.value("cuda-fusion"), "none");
  EXPECT_EQ(v.at("cuda-fusion").source, OptionSource::flag);
  v.offer_environment(env_of({{"MNV2_CUDA_FUSE", "block"}}));  // the flag stays
  EXPECT_EQ(v.value("cuda-fusion"), "none");
  // A command's own default is a default.
  OptionValues bench({{"warmup", "5"}, {"iters", "50"}});
  EXPECT_EQ(bench.value("warmup"), "5");
  EXPECT_EQ(bench.at("iters").source, OptionSource::default_value);
}

TEST(Options, BadValuesNameTheOptionAndWhereTheyCameFrom) {
  OptionValues v;
  auto message = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { v.offer("batch", "0", OptionSource::flag); }).find("--batch"), std::string::npos);
  EXPECT_NE(message([&] { v.offer("batch", "2x", OptionSource::flag); }).find("must be an integer"), std::string::npos);
  EXPECT_NE(message([&] { v.offer("cuda-fusion", "all", OptionSource::saved); }).find("saved setting cuda-fusion"),
            std::string::npos);
  const std::string env = message([&] { v.offer_environment(env_of({{"MNV2_CPU_THREADS", "two"}})); });
  EXPECT_NE(env.find("$MNV2_CPU_THREADS"), std::string::npos) << env;
  EXPECT_NE(message([&] { v.offer("input-size", "12xx", OptionSource::flag); }), "no error");
  EXPECT_THROW(v.offer("no-such", "1", OptionSource::flag), Error);
  // A value the variable holds as another (MNV2_DISABLE_CUPTI=1 turns CUPTI off, 0 leaves it on); empty is unset.
  OptionValues c;
  c.offer_environment(env_of({{"MNV2_DISABLE_CUPTI", "1"}, {"MNV2_CUDA_GRAPH", ""}}));
  EXPECT_EQ(c.value("cupti"), "off");
  EXPECT_EQ(c.at("cuda-graph").source, OptionSource::default_value);
  OptionValues d;
  d.offer_environment(env_of({{"MNV2_DISABLE_CUPTI", "0"}}));
  EXPECT_EQ(d.value("cupti"), "auto");
}

TEST(Options, PrepareConfigTakesEveryBackendOption) {
  OptionValues v;
  for (const OptionSpec& s : option_table())
    if (s.per_run) v.offer(s.name, other_value(s), OptionSource::flag);
  const PrepareConfig p = prepare_config_of(v, {224, 224});
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(std::pair(p.height, p.width), std::pair(96, 64));
  EXPECT_EQ(p.precision, Precision::tf32);
  EXPECT_EQ(p.cpu_threads, 2);
  EXPECT_EQ(p.cuda.variant, CudaOptions::Variant::baseline);
  EXPECT_EQ(p.cuda.fusion, CudaOptions::Fusion::none);  // the first value that is not the default (auto)
  EXPECT_EQ(p.cuda.graph, CudaOptions::Graph::on);
  EXPECT_EQ(p.cuda.gemm_tile, "128x64");
  EXPECT_EQ(p.cuda.pdl, CudaOptions::Pdl::on);
  EXPECT_EQ(p.cuda.splitk, CudaOptions::SplitK::in_kernel);
  EXPECT_EQ(p.cudnn.variant, CudnnOptions::Variant::naive);
  EXPECT_EQ(p.cudnn.graph, CudnnOptions::Graph::on);
  EXPECT_EQ(p.cudnn.layout, CudnnOptions::Layout::nchw);
  // The flags that reproduce them: the non-defaults the backend honours.
  const std::vector<std::string> flags = option_flags(v, "cuda");
  auto has = [&flags](const std::string& f) { return std::find(flags.begin(), flags.end(), f) != flags.end(); };
  EXPECT_TRUE(has("--cuda-fusion") && has("--cuda-pdl") && has("--cuda-splitk") && has("--batch"));
  EXPECT_FALSE(has("--cudnn-layout") || has("--threads") || has("--backend"));
}

// A report keeps every per-run option with its source, and reads it back; an old one reads as "unknown".
TEST(Options, ReportsKeepValuesAndSources) {
  ProfileConfig c;
  c.backend = "cuda";
  c.options.offer("cuda-fusion", "block", OptionSource::environment);
  c.options.offer("batch", "8", OptionSource::flag);
  c.options.offer("cuda-pdl", "off", OptionSource::saved);
  c.batch = 8;
  c.cuda.fusion = CudaOptions::Fusion::block;
  c.cuda.pdl = CudaOptions::Pdl::off;
  c.cuda.splitk = CudaOptions::SplitK::in_kernel;  // set by a caller without a source: recorded as a flag
  c.cudnn.layout = CudnnOptions::Layout::nhwc;     // an option the cuda backend ignores: recorded as asked
  RunReport r;
  r.backend = "cuda";
  r.timer = "cuda_event";
  r.config = c;
  r.options = options_of(c);
  EXPECT_EQ(r.options.at("cuda-fusion"), (OptionValue{"block", OptionSource::environment}));
  EXPECT_EQ(r.options.at("batch"), (OptionValue{"8", OptionSource::flag}));
  EXPECT_EQ(r.options.at("cuda-pdl"), (OptionValue{"off", OptionSource::saved}));
  EXPECT_EQ(r.options.at("cuda-splitk"), (OptionValue{"in_kernel", OptionSource::flag}));
  EXPECT_EQ(r.options.at("cudnn-layout"), (OptionValue{"auto", OptionSource::default_value}));
  EXPECT_EQ(r.options.at("iters").source, OptionSource::default_value);

  const std::vector<RunReport> back = read_reports_text(reports_json_text({r}));
  ASSERT_EQ(back.size(), 1u);
  for (const OptionSpec& s : option_table())
    if (s.per_run) EXPECT_EQ(back[0].options.at(s.name), r.options.at(s.name)) << s.name;
  // The cuda options reach the configuration (a saved --cuda-fusion block run is told from a default one).
  EXPECT_EQ(back[0].config.cuda.fusion, CudaOptions::Fusion::block);
  EXPECT_EQ(back[0].config.cuda.pdl, CudaOptions::Pdl::off);

  // Without the options object (an older report): the metadata's values, source unknown.
  json::Json j = json::Json::parse(reports_json_text({r}));
  j["runs"][0]["metadata"].erase("options");
  const std::vector<RunReport> old = read_reports_text(j.dump());
  EXPECT_EQ(old[0].options.at("batch"), (OptionValue{"8", OptionSource::unknown}));
  EXPECT_EQ(old[0].options.at("cuda-fusion").source, OptionSource::unknown);

  // A bad value in the object is an error naming it.
  j = json::Json::parse(reports_json_text({r}));
  j["runs"][0]["metadata"]["options"]["cuda-fusion"]["value"] = "sideways";
  try {
    read_reports_text(j.dump());
    ADD_FAILURE() << "a bad option value was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("options.cuda-fusion"), std::string::npos) << e.what();
  }
}

// The comparability finding about cuda-fusion between a and b, or null where there is none.
std::optional<SettingDifference> fusion_finding(const RunReport& a, const RunReport& b) {
  for (const SettingDifference& d : compare_settings(a, b).differences)
    if (d.setting == "cuda-fusion") return d;
  return std::nullopt;
}

TEST(Options, TheComparabilityCheckNamesEveryDifferentOption) {
  RunReport a;
  a.backend = "cuda";
  a.config.backend = "cuda";
  a.options = options_of(a.config);
  RunReport b = a;
  b.config.cuda.fusion = CudaOptions::Fusion::block;
  b.config.options.offer("cuda-fusion", "block", OptionSource::environment);
  b.options = options_of(b.config);
  const std::optional<SettingDifference> asked = fusion_finding(a, b);
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->a, "auto");
  EXPECT_EQ(asked->b, "block (environment)");
  // The value auto resolved to is shown; asked differently but the same plan ran is said so, and two auto runs
  // that resolved differently (another GPU) are a finding.
  a.resolved_options = {{"cuda-fusion", "auto", "block", "auto: block on sm_90, ..."}};
  b.resolved_options = {{"cuda-fusion", "block", "block", "as asked"}};
  const std::optional<SettingDifference> same = fusion_finding(a, b);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->a, "auto → block");
  EXPECT_NE(same->consequence.find("the same value ran (block)"), std::string::npos) << same->consequence;
  RunReport other = a;
  other.resolved_options = {{"cuda-fusion", "auto", "none", "auto: no measurement of the plans on sm_86 ..."}};
  const std::optional<SettingDifference> apart = fusion_finding(a, other);
  ASSERT_TRUE(apart);
  EXPECT_EQ(apart->a, "auto → block");
  EXPECT_EQ(apart->b, "auto → none");
  EXPECT_FALSE(fusion_finding(a, a));
  // Options neither backend honours are not findings.
  RunReport x = a, y = a;
  x.backend = y.backend = x.config.backend = y.config.backend = "cpu";
  y.config.options.offer("cudnn-layout", "nhwc", OptionSource::flag);
  y.options = options_of(y.config);
  x.options = options_of(x.config);
  for (const SettingDifference& d : compare_settings(x, y).differences) EXPECT_NE(d.setting, "cudnn-layout");
}

}  // namespace
}  // namespace mnv2::test
