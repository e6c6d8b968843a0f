// Tests of class labels (built-in ImageNet lists, labels files) and top-k ranking of logits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/labels.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

TEST(Labels, Builtin1001StartsWithBackground) {
  const std::vector<std::string> labels = builtin_labels(1001);
  ASSERT_EQ(labels.size(), 1001u);
  EXPECT_EQ(labels[0], "background");
  EXPECT_EQ(labels[1], "tench, Tinca tinca");
  EXPECT_EQ(labels[286], "Egyptian cat");
  EXPECT_EQ(labels[1000], "toilet tissue, toilet paper, bathroom tissue");
  for (const std::string& l : labels) {
    EXPECT_FALSE(l.empty());
    EXPECT_EQ(l.find('\r'), std::string::npos);
  }
}

TEST(Labels, Builtin1000DropsBackground) {
  const std::vector<std::string> labels = builtin_labels(1000);
  ASSERT_EQ(labels.size(), 1000u);
  EXPECT_EQ(labels[0], "tench, Tinca tinca");
  EXPECT_EQ(labels[285], "Egyptian cat");
  EXPECT_EQ(labels[999], "toilet tissue, toilet paper, bathroom tissue");
}

TEST(Labels, BuiltinMatchesTheSharedLabelsFile) {
  EXPECT_EQ(builtin_labels(1001), read_labels_file(shared_path("weights/imagenet_labels_1001.txt")));
}

TEST(Labels, OtherCountsGetNumberedNames) {
  const std::vector<std::string> labels = builtin_labels(10);
  ASSERT_EQ(labels.size(), 10u);
  EXPECT_EQ(labels[0], "class 0");
  EXPECT_EQ(labels[9], "class 9");
  EXPECT_TRUE(builtin_labels(0).empty());
  EXPECT_THROW(builtin_labels(-1), UsageError);
}

// labels_source() says in words what builtin_labels() (or a --labels file) gives.
TEST(Labels, SourceSaysWhereTheNamesComeFrom) {
  EXPECT_EQ(labels_source(1001), "built-in ImageNet, 1001 classes (background first)");
  EXPECT_EQ(builtin_labels(1001)[0], "background");
  EXPECT_EQ(labels_source(1000), "built-in ImageNet, 1000 classes");
  EXPECT_NE(builtin_labels(1000)[0], "background");
  EXPECT_EQ(labels_source(10), "generated names 'class 0'..'class 9' (no built-in list has 10 classes)");
  EXPECT_EQ(builtin_labels(10)[9], "class 9");
  EXPECT_EQ(labels_source(1000, "my/labels.txt"), "file my/labels.txt");
}

TEST(Labels, ReadsFilesWithAnyLineEnding) {
  TempDir dir;
  write_file(dir.file("unix.txt"), "cat\ndog\nbird\n");
  write_file(dir.file("dos.txt"), "cat\r\ndog\r\nbird\r\n");
  write_file(dir.file("no_newline.txt"), "cat\ndog\nbird");
  write_file(dir.file("bom.txt"),
             "\xEF\xBB\xBF"
             "cat\ndog\nbird\n");
  const std::vector<std::string> want = {"cat", "dog", "bird"};
  for (const char* name : {"unix.txt", "dos.txt", "no_newline.txt", "bom.txt"}) {
    EXPECT_EQ(read_labels_file(dir.file(name)), want) << name;
  }
  // A blank line inside the list is a (blank) label: positions are class indices.
  write_file(dir.file("gap.txt"), "a\n\nc\n");
  EXPECT_EQ(read_labels_file(dir.file("gap.txt")), (std::vector<std::string>{"a", "", "c"}));
}

TEST(Labels, FileErrorsNameTheFile) {
  TempDir dir;
  write_file(dir.file("empty.txt"), "");
  write_file(dir.file("blank.txt"), "\n  \r\n\n");
  for (const std::string& path : {dir.file("missing.txt"), dir.file("empty.txt"), dir.file("blank.txt"), dir.path()}) {
    try {
      read_labels_file(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(LabelsTopK, OrdersByProbabilityWithTiesByIndex) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  const std::vector<std::string> labels = {"a", "b", "c", "d", "e"};
  const std::vector<Prediction> top = top_k(logits.data(), 5, 3, labels);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].index, 1);
  EXPECT_EQ(top[1].index, 3);
  EXPECT_EQ(top[2].index, 2);
  EXPECT_EQ(top[0].label, "b");
  EXPECT_EQ(top[1].label, "d");
  EXPECT_DOUBLE_EQ(top[0].prob, top[1].prob);
  EXPECT_DOUBLE_EQ(top[2].logit, 2.0);

  double denominator = 0;
  for (float x : logits) denominator += std::exp(static_cast<double>(x));
  EXPECT_NEAR(top[0].prob, std::exp(3.0) / denominator, 1e-15);
}

TEST(LabelsTopK, ProbabilitiesSumToOneAndKIsClamped) {
  std::vector<float> logits(1001);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i)) * 7.0f;
  const std::vector<Prediction> all = top_k(logits.data(), 1001, 5000, builtin_labels(1001));
  ASSERT_EQ(all.size(), 1001u);
  double sum = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    sum += all[i].prob;
    if (i > 0) EXPECT_GE(all[i - 1].prob, all[i].prob);
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_TRUE(top_k(logits.data(), 1001, 0, {}).empty());
  EXPECT_TRUE(top_k(logits.data(), 1001, -3, {}).empty());
  EXPECT_TRUE(top_k(nullptr, 0, 5, {}).empty());
}

TEST(LabelsTopK, LargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {1000.0f, 999.0f, -1000.0f};
  const std::vector<Prediction> top = top_k(logits.data(), 3, 3, {});
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].index, 0);
  EXPECT_NEAR(top[0].prob, 1.0 / (1.0 + std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(top[1].prob, std::exp(-1.0) / (1.0 + std::exp(-1.0)), 1e-12);
  EXPECT_EQ(top[2].prob, 0.0);
}

TEST(LabelsTopK, ShortLabelListFallsBackToClassNumbers) {
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f};
  const std::vector<Prediction> top = top_k(logits.data(), 3, 2, {"only"});
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].label, "class 1");
  EXPECT_EQ(top[1].label, "class 2");
}

TEST(LabelsTopK, NonFiniteLogitsGiveDefinedResults) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  {
    const std::vector<float> logits = {1.0f, kInf, 2.0f, kInf};
    const std::vector<Prediction> top = top_k(logits.data(), 4, 4, {});
    EXPECT_EQ(top[0].index, 1);
    EXPECT_EQ(top[1].index, 3);
    EXPECT_DOUBLE_EQ(top[0].prob, 0.5);
    EXPECT_DOUBLE_EQ(top[2].prob, 0.0);
  }
  {
    // Garbage in must look like garbage out, and NaN must not upset the sort.
    const std::vector<float> logits = {nan, 3.0f, nan, 1.0f, 2.0f};
    const std::vector<Prediction> top = top_k(logits.data(), 5, 5, {});
    ASSERT_EQ(top.size(), 5u);
    EXPECT_EQ(top[0].index, 1);
    EXPECT_EQ(top[1].index, 4);
    EXPECT_EQ(top[2].index, 3);
    EXPECT_EQ(top[3].index, 0);
    EXPECT_EQ(top[4].index, 2);
    for (const Prediction& p : top) EXPECT_TRUE(std::isnan(p.prob));
  }
}

TEST(LabelsTopK, RejectsBadArguments) {
  EXPECT_THROW(top_k(nullptr, 3, 1, {}), UsageError);
  const float x = 1.0f;
  EXPECT_THROW(top_k(&x, -1, 1, {}), UsageError);
}

}  // namespace
}  // namespace mnv2::test
