// The cudnn backend's plan without a GPU (backends/cudnn/cudnn_plan.h): the layout rule of each variant and
// precision, the convolution groups the fused variant tries as one operation graph, the asymmetric pads met by a
// padded copy, the two arenas' offsets (aligned, disjoint, in bounds) and the conversion buffers; and the TF32 rule
// both GPU backends ask (mnv2/gpu_properties.h), with the cudnn backend's kernels those of the hardware.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "backends/cudnn/cudnn_plan.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/model.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

using cudnn_backend::CudnnPlan;
using cudnn_backend::kArenaAlignment;
using cudnn_backend::LayerGroup;
using cudnn_backend::LayerPlan;
using cudnn_backend::plan_cudnn_network;

const Model& model() {
  static const Model m = load_onnx(main_model_path());
  return m;
}

PrepareConfig config(CudnnOptions::Variant variant, Precision precision, int batch = 2, int height = 224,
                     int width = 224, CudnnOptions::Layout layout = CudnnOptions::Layout::automatic) {
  PrepareConfig c{batch, height, width, precision};
  c.cudnn.variant = variant;
  c.cudnn.layout = layout;
  return c;
}

TEST(CudnnPlan, LayoutFollowsTheVariantAndPrecision) {
  using V = CudnnOptions::Variant;
  using L = CudnnOptions::Layout;
  EXPECT_FALSE(plan_cudnn_network(model(), config(V::fused, Precision::fp32)).nhwc);
  EXPECT_TRUE(plan_cudnn_network(model(), config(V::fused, Precision::tf32)).nhwc);
  EXPECT_TRUE(plan_cudnn_network(model(), config(V::fused, Precision::fp16)).nhwc);
  EXPECT_TRUE(plan_cudnn_network(model(), config(V::fused, Precision::fp32, 2, 224, 224, L::nhwc)).nhwc);
  EXPECT_FALSE(plan_cudnn_network(model(), config(V::fused, Precision::fp16, 2, 224, 224, L::nchw)).nhwc);
  for (Precision p : {Precision::fp32, Precision::fp16})
    EXPECT_FALSE(plan_cudnn_network(model(), config(V::naive, p, 2, 224, 224, L::nhwc)).nhwc) << "naive is NCHW";
  const CudnnPlan half = plan_cudnn_network(model(), config(V::fused, Precision::fp16, 2, 224, 224, L::nchw));
  EXPECT_TRUE(half.half);
  EXPECT_EQ(half.element_bytes, 2u);
  EXPECT_TRUE(half.converted());
  EXPECT_FALSE(plan_cudnn_network(model(), config(V::naive, Precision::fp32)).converted());
}

// The steps cover every layer once, in order; the fused variant groups each convolution with its ReLU6 and, for
// the projections of the blocks with a residual, the add (MobileNetV2: 52 convolutions, 35 ReLU6, 10 adds).
TEST(CudnnPlan, GroupsCoverEveryLayerOnceAndFuseConvolutionsWithWhatReadsThem) {
  const size_t n = model().layers.size();
  for (auto variant : {CudnnOptions::Variant::fused, CudnnOptions::Variant::naive}) {
    SCOPED_TRACE(to_string(variant));
    const CudnnPlan plan = plan_cudnn_network(model(), config(variant, Precision::fp32));
    ASSERT_EQ(plan.layers.size(), n);
    std::vector<int> covered;
    for (const LayerGroup& g : plan.groups) covered.insert(covered.end(), g.layers.begin(), g.layers.end());
    std::vector<int> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = static_cast<int>(i);
    EXPECT_EQ(covered, all);
    if (variant == CudnnOptions::Variant::naive) {
      EXPECT_EQ(plan.groups.size(), n);
      for (const LayerGroup& g : plan.groups) EXPECT_EQ(g.conv, -1);
      continue;
    }
    int convs = 0, acts = 0, adds = 0;
    for (const LayerGroup& g : plan.groups) {
      if (g.conv < 0) {
        EXPECT_EQ(g.layers.size(), 1u);
        EXPECT_NE(model().layers[static_cast<size_t>(g.layers[0])].kind, LayerKind::Conv2d);
        continue;
      }
      ++convs;
      EXPECT_EQ(g.layers.front(), g.conv);
      if (g.act >= 0) {
        ++acts;
        EXPECT_EQ(g.act, g.conv + 1);
      }
      if (g.add >= 0) {
        ++adds;
        EXPECT_EQ(g.add, g.layers.back());
        EXPECT_EQ(model().layers[static_cast<size_t>(g.add)].kind, LayerKind::ResidualAdd);
      }
    }
    EXPECT_EQ(convs, 52);
    EXPECT_EQ(acts, 35);
    EXPECT_EQ(adds, 10);
    EXPECT_EQ(plan.groups.size(), n - 35 - 10);
  }
}

// Every buffer of both arenas starts aligned and inside its arena, and no two overlap; the padded copies are where
// the pads are asymmetric (odd sizes too), and their shapes hold the extra rows and columns.
TEST(CudnnPlan, ArenasAreAlignedDisjointAndPadCopiesMeetTheAsymmetricPads) {
  for (const auto& [height, width] : {std::pair{224, 224}, std::pair{193, 257}})
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      SCOPED_TRACE(std::to_string(height) + "x" + std::to_string(width) + " " + to_string(p));
      const CudnnPlan plan = plan_cudnn_network(model(), config(CudnnOptions::Variant::fused, p, 3, height, width));
      std::vector<std::pair<size_t, size_t>> activations, weights;  // [begin, end) bytes
      auto add = [&](std::vector<std::pair<size_t, size_t>>& to, size_t offset, int64_t elements, size_t bytes) {
        EXPECT_EQ(offset % kArenaAlignment, 0u);
        to.emplace_back(offset, offset + static_cast<size_t>(elements) * bytes);
      };
      add(activations, plan.input_offset, plan.input_shape.numel(), plan.element_bytes);
      if (plan.converted()) {
        add(activations, plan.staging_offset, plan.input_shape.numel(), sizeof(float));
        add(activations, plan.readback_offset, 1, sizeof(float));
      }
      for (size_t i = 0; i < plan.layers.size(); ++i) {
        const LayerPlan& lp = plan.layers[i];
        const Layer& layer = model().layers[i];
        add(activations, lp.out_offset, lp.out_shape.numel(), plan.element_bytes);
        if (layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) {
          add(weights, lp.weight_offset, static_cast<int64_t>(layer.weight.size()), plan.element_bytes);
          if (lp.has_bias) add(weights, lp.bias_offset, static_cast<int64_t>(layer.bias.size()), plan.element_bytes);
        }
        if (layer.kind != LayerKind::Conv2d) continue;
        EXPECT_EQ(lp.pad_copy, !layer.conv.symmetric_pads()) << layer.name;
        if (!lp.pad_copy) continue;
        add(activations, lp.pad_offset, lp.padded_shape.numel(), plan.element_bytes);
        EXPECT_EQ(lp.padded_shape.h, lp.in_shape.h + lp.extra_top + lp.extra_bottom);
        EXPECT_EQ(lp.sym_pad_h + lp.extra_top, layer.conv.pad_top);
        EXPECT_EQ(lp.sym_pad_w + lp.extra_right, layer.conv.pad_right);
      }
      for (auto* arena : {&activations, &weights}) {
        std::sort(arena->begin(), arena->end());
        for (size_t i = 1; i < arena->size(); ++i) EXPECT_LE((*arena)[i - 1].second, (*arena)[i].first);
      }
      EXPECT_LE(activations.back().second, plan.activation_bytes);
      EXPECT_LE(weights.back().second, plan.weight_bytes);
    }
}

TEST(CudnnPlan, AMalformedModelIsAnError) {
  Model bad = model();
  bad.layers[3].inputs = {5};  // a later layer
  EXPECT_THROW(plan_cudnn_network(bad, config(CudnnOptions::Variant::fused, Precision::fp32)), Error);
  EXPECT_THROW(plan_cudnn_network(Model{}, config(CudnnOptions::Variant::naive, Precision::fp32)), Error);
}

// One TF32 rule for both GPU backends: the hardware (compute capability 8.0 on), and the code that runs there (the
// cuda backend's kernels' architecture; 0, the hardware's own, for cuDNN's).
TEST(GpuProperties, Tf32RuleReadsTheHardwareAndTheCode) {
  EXPECT_EQ(tf32_refusal(GpuProperties::a100()), "");
  EXPECT_EQ(tf32_refusal(GpuProperties::h200()), "");
  const std::string turing = tf32_refusal(GpuProperties::t4());
  EXPECT_NE(turing.find("compute capability 8.0"), std::string::npos) << turing;
  EXPECT_NE(turing.find("Tesla T4"), std::string::npos) << turing;
  GpuProperties ptx75 = GpuProperties::h200();
  ptx75.code_arch = 75;  // compute_75 PTX JIT-compiled on a Hopper GPU
  const std::string old_code = tf32_refusal(ptx75);
  EXPECT_NE(old_code.find("compute_80"), std::string::npos) << old_code;
  EXPECT_NE(old_code.find("compute_75"), std::string::npos) << old_code;
}

}  // namespace
}  // namespace mnv2::test
