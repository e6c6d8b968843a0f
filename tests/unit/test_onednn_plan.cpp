// The cpu backend's step plan as plain data (engine/backends/cpu/onednn_plan.h), on the real network and on
// small graphs: which layers a convolution absorbs, and that the caller decides the depthwise fusion.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/onednn_plan.h"
#include "mnv2/model.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

std::vector<std::string> names(const Model& m, const std::vector<cpu::FusedGroup>& groups) {
  std::vector<std::string> out;
  for (const cpu::FusedGroup& g : groups) out.push_back(cpu::group_name(m, g));
  return out;
}

TEST(OnednnPlan, MobileNetV2GroupsEachConvolutionWithItsEpilogue) {
  const Model m = load_onnx(main_model_path());
  const std::vector<cpu::FusedGroup> groups = cpu::plan_groups(m);
  ASSERT_EQ(groups.size(), 54u);  // 52 convolutions, the pool, the classifier
  const std::vector<std::string> n = names(m, groups);
  EXPECT_EQ(n[0], "Conv2d 0 + ReLU6 1");
  EXPECT_EQ(n[2], "Conv2d 4");  // block1.project: linear
  EXPECT_EQ(n[8], "Conv2d 14 + ResidualAdd 15");
  EXPECT_EQ(n[52], "GlobalAveragePool 97");
  EXPECT_EQ(n[53], "Linear 98");
  EXPECT_EQ(groups[8].residual, 9);  // block2.project's output
  int adds = 0;
  for (const cpu::FusedGroup& g : groups) {
    adds += g.add >= 0 ? 1 : 0;
    EXPECT_EQ(g.depthwise, -1);  // no caller asked for it
  }
  EXPECT_EQ(adds, 10);
}

TEST(OnednnPlan, DepthwiseFusionIsTheCallersChoice) {
  const Model m = load_onnx(main_model_path());
  std::vector<std::vector<int>> asked;
  const auto groups = cpu::plan_groups(m, [&](const cpu::FusedGroup& candidate) {
    asked.push_back(candidate.layers);
    return candidate.anchor() == 5;  // block2's expansion only
  });
  // Every expansion of blocks 2..17 is a candidate (block1 has none; the stem is not pointwise).
  ASSERT_EQ(asked.size(), 16u);
  EXPECT_EQ(asked[0], (std::vector<int>{5, 6, 7, 8}));
  EXPECT_EQ(groups.size(), 53u);
  EXPECT_EQ(cpu::group_name(m, groups[3]), "Conv2d 5 + ReLU6 6 + Conv2d 7 + ReLU6 8");
  EXPECT_EQ(groups[3].depthwise, 7);
  EXPECT_EQ(groups[3].depthwise_clip, 8);
  EXPECT_EQ(groups[3].output(), 8);
  EXPECT_EQ(cpu::group_name(m, groups[4]), "Conv2d 9");

  const auto all = cpu::plan_groups(m, [](const cpu::FusedGroup&) { return true; });
  EXPECT_EQ(all.size(), 38u);
}

// A depthwise convolution whose input has other readers, or that is not 3x3, is not absorbed; an add is,
// where its other operand comes from before the group.
TEST(OnednnPlan, OnlySoleReadersAreAbsorbed) {
  Model m;
  m.input_channels = 4;
  auto conv = [&](int input, int groups, int k) {
    Layer l;
    l.kind = LayerKind::Conv2d;
    l.inputs = {input};
    l.conv.in_channels = l.conv.out_channels = 4;
    l.conv.groups = groups;
    l.conv.kernel_h = l.conv.kernel_w = k;
    l.conv.pad_top = l.conv.pad_left = l.conv.pad_bottom = l.conv.pad_right = k / 2;
    m.layers.push_back(l);
  };
  auto clip = [&](int input) {
    Layer l;
    l.kind = LayerKind::ReLU6;
    l.inputs = {input};
    m.layers.push_back(l);
  };
  conv(kNetworkInput, 1, 1);  // 0
  clip(0);                    // 1: read by 2 and 4
  conv(1, 4, 3);              // 2: depthwise, but its input has another reader
  clip(2);                    // 3
  Layer add;
  add.kind = LayerKind::ResidualAdd;
  add.inputs = {3, 1};
  m.layers.push_back(add);  // 4
  conv(4, 1, 1);            // 5
  clip(5);                  // 6
  conv(6, 4, 5);            // 7: depthwise 5x5, not oneDNN's dw post-op
  for (size_t i = 0; i < m.layers.size(); ++i) m.layers[i].index = static_cast<int>(i);
  const auto groups = cpu::plan_groups(m, [](const cpu::FusedGroup&) { return true; });
  EXPECT_EQ(names(m, groups), (std::vector<std::string>{"Conv2d 0 + ReLU6 1", "Conv2d 2 + ReLU6 3 + ResidualAdd 4",
                                                        "Conv2d 5 + ReLU6 6", "Conv2d 7"}));
  EXPECT_EQ(groups[1].residual, 1);
}

}  // namespace
}  // namespace mnv2::test
