// The cudnn backend's options and plan cache without a GPU: option names and parsers, the cache file reader
// (good, bad, truncated, oversized files), atomic merging writes, the report round trip of the options and the
// "cudnn-variant" comparability note.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "backends/cudnn/plan_cache.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/options.h"
#include "mnv2/studies.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

using cudnn_backend::CachedPlan;
using cudnn_backend::PlanCache;

TEST(CudnnOptions, NamesRoundTripAndBadNamesAreUsageErrors) {
  for (auto v : {CudnnOptions::Variant::fused, CudnnOptions::Variant::naive})
    EXPECT_EQ(parse_cudnn_variant(to_string(v)), v);
  for (auto g : {CudnnOptions::Graph::automatic, CudnnOptions::Graph::on, CudnnOptions::Graph::off})
    EXPECT_EQ(parse_cudnn_graph(to_string(g)), g);
  for (auto l : {CudnnOptions::Layout::automatic, CudnnOptions::Layout::nchw, CudnnOptions::Layout::nhwc})
    EXPECT_EQ(parse_cudnn_layout(to_string(l)), l);
  EXPECT_EQ(parse_cudnn_variant("NAIVE"), CudnnOptions::Variant::naive);
  try {
    parse_cudnn_variant("fast");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fused, naive"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_cudnn_graph("always"), UsageError);
  EXPECT_THROW(parse_cudnn_layout(""), UsageError);
  const CudnnOptions defaults;
  EXPECT_EQ(defaults.variant, CudnnOptions::Variant::fused);
  EXPECT_EQ(defaults.graph, CudnnOptions::Graph::automatic);
  EXPECT_EQ(PrepareConfig{}.cudnn, defaults);
}

PlanCache sample_cache() {
  PlanCache c;
  c.put("cudnn 9.14.0 | NVIDIA H200 cc9.0 | fp16 | half nhwc x=1x3x224x224 conv+bias+relu(0,6)",
        CachedPlan{42, {{1, 3}, {7, 0}}, 1024, 0.0123});
  c.put("k2", CachedPlan{0, {}, 0, -1});
  return c;
}

TEST(CudnnPlanCache, DumpParsesBackExactly) {
  const PlanCache c = sample_cache();
  const PlanCache back = PlanCache::parse(c.dump());
  ASSERT_EQ(back.size(), 2u);
  const CachedPlan* p = back.find("k2");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, (CachedPlan{0, {}, 0, -1}));
  EXPECT_EQ(back.dump(), c.dump());
}

TEST(CudnnPlanCache, MalformedTextIsRefusedByTheParser) {
  const std::string good = sample_cache().dump();
  for (
      const std::string& bad : {
          std::string(""),
          std::string("not json"),
          good.substr(0, good.size() / 2),  // truncated
          std::string(R"({"format": "something else", "version": 1, "entries": {}})"),
          std::string(R"({"format": "mnv2-cudnn-plan-cache", "version": 99, "entries": {}})"),
          std::string(R"({"format": "mnv2-cudnn-plan-cache", "version": 1, "entries": []})"),
          std::string(
              R"({"format": "mnv2-cudnn-plan-cache", "version": 1, "entries": {"k": {"engine": -1, "knobs": [], "workspace_bytes": 0}}})"),
          std::string(
              R"({"format": "mnv2-cudnn-plan-cache", "version": 1, "entries": {"k": {"engine": 1, "knobs": [[1]], "workspace_bytes": 0}}})"),
          std::string(
              R"({"format": "mnv2-cudnn-plan-cache", "version": 1, "entries": {"k": {"engine": "1", "knobs": [], "workspace_bytes": 0}}})"),
      }) {
    SCOPED_TRACE(bad.substr(0, 80));
    EXPECT_THROW(PlanCache::parse(bad), Error);
  }
}

TEST(CudnnPlanCache, BadFilesAreIgnoredWithAWarningNeverAThrow) {
  TempDir tmp;
  std::string warning;
  EXPECT_EQ(PlanCache::load(tmp.file("missing.json"), &warning).size(), 0u);
  EXPECT_TRUE(warning.empty()) << warning;  // no file yet: nothing to warn about
  const std::string good = sample_cache().dump();
  { std::ofstream(tmp.file("truncated.json")) << good.substr(0, good.size() - 10); }
  EXPECT_EQ(PlanCache::load(tmp.file("truncated.json"), &warning).size(), 0u);
  EXPECT_NE(warning.find("ignored"), std::string::npos) << warning;
  warning.clear();
  {
    std::ofstream big(tmp.file("big.json"));
    big << std::string(5 * 1024 * 1024, ' ');  // over the 4 MiB bound
  }
  EXPECT_EQ(PlanCache::load(tmp.file("big.json"), &warning).size(), 0u);
  EXPECT_NE(warning.find("ignored"), std::string::npos) << warning;
  warning.clear();
  std::filesystem::create_directories(tmp.file("dir.json"));
  EXPECT_EQ(PlanCache::load(tmp.file("dir.json"), &warning).size(), 0u);
  EXPECT_FALSE(warning.empty());
}

TEST(CudnnPlanCache, SaveMergesWithTheFileAndReplacesACorruptOne) {
  TempDir tmp;
  const std::string path = tmp.file("sub/plans.json");  // the folder is created
  PlanCache a;
  a.put("a", CachedPlan{1, {{2, 3}}, 0, 0.5});
  a.save(path);
  PlanCache b;
  b.put("b", CachedPlan{2, {}, 64, 0.25});
  b.save(path);
  std::string warning;
  PlanCache both = PlanCache::load(path, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_EQ(both.size(), 2u);
  { std::ofstream(path, std::ios::trunc) << "{garbage"; }
  b.save(path);  // a corrupt file is replaced, not a reason to fail
  EXPECT_EQ(PlanCache::load(path, &warning).size(), 1u);
  EXPECT_TRUE(warning.empty()) << warning;
  // The file and its writers' lock (kept: removing a lock file races the next writer's open); no temporary.
  for (const auto& entry : std::filesystem::directory_iterator(tmp.file("sub")))
    EXPECT_TRUE(entry.path().filename() == "plans.json" || entry.path().filename() == ".plans.json.lock")
        << "a temporary left behind: " << entry.path();
}

TEST(CudnnPlanCache, FileLocationFollowsTheOption) {
  {
    ScopedSettings s([](ProcessSettings& p) { p.cudnn_plan_cache = "/tmp/x/plans.json"; });
    EXPECT_EQ(cudnn_backend::plan_cache_file(), "/tmp/x/plans.json");
  }
  {
    ScopedSettings s([](ProcessSettings& p) { p.cudnn_plan_cache = "off"; });
    EXPECT_EQ(cudnn_backend::plan_cache_file(), "");
  }
  ScopedSettings s([](ProcessSettings& p) {
    p.cudnn_plan_cache.clear();
    p.cache_dir.clear();
    p.home = "/home/someone";
    p.xdg_cache_home.clear();
  });
  EXPECT_EQ(cudnn_backend::plan_cache_file(), "/home/someone/.cache/mnv2-profiler/cudnn_plans.json");
  // $MNV2_CUDNN_PLAN_CACHE is the option's variable, read by the front ends.
  OptionValues v;
  v.offer_environment([](const char* n) { return std::string(n) == "MNV2_CUDNN_PLAN_CACHE" ? "off" : nullptr; });
  EXPECT_EQ(v.value("cudnn-plan-cache"), "off");
  EXPECT_EQ(v.at("cudnn-plan-cache").source, OptionSource::environment);
}

TEST(CudnnOptions, ComparabilityNotesDifferentCudnnOptions) {
  RunReport a;
  a.backend = "cudnn";
  RunReport b = a;
  b.config.cudnn.variant = CudnnOptions::Variant::naive;
  bool noted = false;
  for (const SettingDifference& d : compare_settings(a, b).differences)
    if (d.setting == "cudnn-variant") {  // one finding per option of the table (mnv2/options.h)
      noted = true;
      EXPECT_EQ(d.weight, SettingDifference::Weight::note);
      EXPECT_EQ(d.a, "fused");
      EXPECT_EQ(d.b, "naive (flag)");  // set by its caller, not a default
    }
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace mnv2::test
