// The engine's studies that both front ends call: the one compare/precision rule (resolve_compare) over every
// backend x precision this build knows, the alignment of two runs' fused steps, and the classifier-head check.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/studies.h"

namespace mnv2 {
namespace {

const Precision kModes[] = {Precision::fp32, Precision::tf32, Precision::fp16};

TEST(CompareRule, TheReferenceAloneFallsBackAndEveryOtherBackendRunsTheModeAskedFor) {
  const std::vector<std::string> names = backend_names();
  ASSERT_GE(names.size(), 4u);  // cpu, cpu-ref, cudnn, cuda
  for (Precision p : kModes) {
    for (const std::string& reference : names) {
      for (const std::string& other : names) {
        if (other == reference) continue;
        SCOPED_TRACE(reference + " vs " + other + " in " + to_string(p));
        const bool reference_has = make_backend(reference)->supports(p);
        const bool other_has = make_backend(other)->supports(p);
        if (!other_has) {
          try {
            resolve_compare({reference, other}, p);
            ADD_FAILURE() << "a compared backend without the mode must be refused";
          } catch (const UsageError& e) {
            const std::string text = e.what();
            EXPECT_NE(text.find(other), std::string::npos) << text;
            EXPECT_NE(text.find(to_string(p)), std::string::npos) << text;
          }
          continue;
        }
        const CompareRule rule = resolve_compare({reference, other}, p);
        ASSERT_EQ(rule.run.size(), 2u);
        EXPECT_EQ(rule.requested, p);
        EXPECT_EQ(rule.judged, p);  // diffs are judged in the mode asked for, whatever the reference ran
        EXPECT_EQ(rule.run[1], p);
        EXPECT_EQ(rule.run[0], reference_has ? p : Precision::fp32);
        EXPECT_EQ(rule.run[0], reference_precision(reference, p));
        EXPECT_EQ(rule.notes.size(), reference_has ? 0u : 1u);
        if (!reference_has) EXPECT_NE(rule.notes.front().find(reference + " runs fp32"), std::string::npos);
      }
    }
  }
}

// The app's Compare runs every available backend: the selection is whatever resolve_compare accepts, each
// backend left out named with its reason, for every mode and with the backends' own answers or a front end's.
TEST(CompareRule, SelectingEveryAvailableBackendLeavesOutOnlyWhatTheRuleRefuses) {
  const std::vector<std::string> names = backend_names();
  for (Precision p : kModes) {
    SCOPED_TRACE(to_string(p));
    const CompareSelection s = select_compare(names, p);
    EXPECT_EQ(s.backends.size() + s.left_out.size(), names.size());
    EXPECT_EQ(s.backends.front(), names.front());  // the reference is never left out
    EXPECT_NO_THROW(resolve_compare(s.backends, p));
    for (const std::string& gone : s.left_out) {
      EXPECT_FALSE(make_backend(gone)->supports(p)) << gone;
      EXPECT_THROW(resolve_compare({names.front(), gone}, p), UsageError);
      bool named = false;
      for (const std::string& n : s.rule.notes) named = named || n.rfind(gone + " is left out", 0) == 0;
      EXPECT_TRUE(named) << gone;
    }
  }
  // With a front end's answers (the app's backend list): cpu the reference, cuda without tf32 left out.
  auto answers = [](const std::string& b, Precision q) {
    return q == Precision::fp32 || b == "cudnn" || (b == "cuda" && q == Precision::fp16);
  };
  const CompareSelection tf32 = select_compare({"cpu", "cudnn", "cuda"}, Precision::tf32, answers);
  EXPECT_EQ(tf32.backends, (std::vector<std::string>{"cpu", "cudnn"}));
  EXPECT_EQ(tf32.left_out, std::vector<std::string>{"cuda"});
  ASSERT_EQ(tf32.rule.notes.size(), 2u);
  EXPECT_EQ(tf32.rule.notes[0], "cpu runs fp32 as the reference (it has no tf32 mode)");
  EXPECT_NE(tf32.rule.notes[1].find("cuda is left out"), std::string::npos);
  EXPECT_EQ(tf32.rule.run, (std::vector<Precision>{Precision::fp32, Precision::tf32}));
  EXPECT_THROW(select_compare({}, Precision::fp32), UsageError);
}

TEST(CompareRule, FloatIsAlwaysComparableAndOneBackendIsItsOwnReference) {
  for (const std::string& name : backend_names()) {
    const CompareRule rule = resolve_compare({name}, Precision::fp32);
    EXPECT_EQ(rule.run, std::vector<Precision>{Precision::fp32});
    EXPECT_TRUE(rule.notes.empty());
  }
  // The CPU backends have no reduced mode: alone, they run fp32 and say so.
  const CompareRule cpu = resolve_compare({"cpu"}, Precision::fp16);
  EXPECT_EQ(cpu.run, std::vector<Precision>{Precision::fp32});
  EXPECT_EQ(cpu.judged, Precision::fp16);
  ASSERT_EQ(cpu.notes.size(), 1u);
}

TEST(CompareRule, RefusesNoBackendUnknownNamesAndRepeats) {
  EXPECT_THROW(resolve_compare({}, Precision::fp32), UsageError);
  EXPECT_THROW(resolve_compare({"cpu", "tpu"}, Precision::fp32), UsageError);
  try {
    resolve_compare({"cpu-ref", "cpu", "cpu-ref"}, Precision::fp32);
    ADD_FAILURE() << "a repeated backend must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
  }
}

StepProfile step(std::vector<int> layers, double median) {
  StepProfile s;
  s.layers = std::move(layers);
  s.time_ns.median = median;
  s.time_ns.p10 = median - 1;
  s.time_ns.p90 = median + 1;
  return s;
}

RunReport report(int layers, std::vector<StepProfile> steps) {
  RunReport r;
  for (int l = 0; l < layers; ++l) r.layers.push_back(LayerProfile{l, -1, ""});
  r.steps = std::move(steps);
  return r;
}

TEST(AlignRuns, SegmentsAreTheUnionOfFusedStepsOnEitherSide) {
  // a fuses 0+1 and 3+4; b fuses 1+2; so 0..2 is one segment, 3..4 another, 5 alone.
  const RunReport a = report(6, {step({0, 1}, 10), step({2}, 5), step({3, 4}, 7), step({5}, 1)});
  const RunReport b = report(6, {step({0}, 2), step({1, 2}, 20), step({3}, 3), step({4}, 4), step({5}, 2)});
  const std::vector<AlignedSegment> s = align_runs(a, b);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].layers, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s[0].first_layer, 0);
  EXPECT_DOUBLE_EQ(s[0].median_a, 15);
  EXPECT_DOUBLE_EQ(s[0].median_b, 22);
  EXPECT_EQ(s[0].steps_a, 2);
  EXPECT_EQ(s[0].steps_b, 2);
  EXPECT_DOUBLE_EQ(s[0].p10_a, 13);
  EXPECT_DOUBLE_EQ(s[0].p90_b, 24);
  EXPECT_EQ(s[1].layers, (std::vector<int>{3, 4}));
  EXPECT_DOUBLE_EQ(s[1].median_a, 7);
  EXPECT_DOUBLE_EQ(s[1].median_b, 7);
  EXPECT_EQ(s[2].layers, (std::vector<int>{5}));
}

TEST(AlignRuns, ComparesOnlyTheLayersBothReportsHave) {
  const RunReport a = report(3, {step({0}, 1), step({1, 2}, 2)});
  const RunReport b = report(2, {step({0}, 1), step({1}, 2)});
  const std::vector<AlignedSegment> s = align_runs(a, b);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].layers, std::vector<int>{1});  // layer 2 is beyond b
  EXPECT_DOUBLE_EQ(s[1].median_a, 2);
}

TEST(ClassifierHead, AMapOutputIsNamedAndAVectorIsFine) {
  const Model m = builtin_mobilenet_v2();
  EXPECT_TRUE(classifier_head_problem(m, 224, 224).empty());
  Model features = m;
  while (!features.layers.empty() && features.layers.back().kind != LayerKind::Conv2d) features.layers.pop_back();
  const std::string problem = classifier_head_problem(features, 224, 224);
  EXPECT_NE(problem.find("classifier head"), std::string::npos) << problem;
  EXPECT_NE(problem.find("x7x7"), std::string::npos) << problem;
}

}  // namespace
}  // namespace mnv2
