// Engine graph tests: the two shared MobileNetV2 files and the built-in topology import to the 99-layer
// graph; shapes, MACs, params, bytes, descriptions and block names; analyse() refusals on hand-built graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/model.h"
#include "test_support.h"
#include "util/sha256.h"

namespace mnv2 {
namespace {

// Loaded once: each file is 14 MB and goes through the ONNX checker.
const Model& main_model() {
  static const Model m = load_onnx(test::main_model_path());
  return m;
}
const Model& torchvision_model() {
  static const Model m = load_onnx(test::torchvision_model_path());
  return m;
}

int64_t total(const std::vector<LayerStats>& s, int64_t LayerStats::*field) {
  int64_t t = 0;
  for (const auto& x : s) t += x.*field;
  return t;
}

void expect_mobilenet_v2_counts(const Model& m) {
  EXPECT_EQ(m.layers.size(), 99u);
  EXPECT_EQ(count_layers(m, LayerKind::Conv2d), 52);
  EXPECT_EQ(count_layers(m, LayerKind::ReLU6), 35);
  EXPECT_EQ(count_layers(m, LayerKind::ReLU), 0);
  EXPECT_EQ(count_layers(m, LayerKind::ResidualAdd), 10);
  EXPECT_EQ(count_layers(m, LayerKind::GlobalAveragePool), 1);
  EXPECT_EQ(count_layers(m, LayerKind::Linear), 1);
  EXPECT_EQ(m.num_blocks, 17);
  for (size_t i = 0; i < m.layers.size(); ++i) EXPECT_EQ(m.layers[i].index, static_cast<int>(i));
}

// ---------------------------------------------------------------------------------------------------------
// The main (pretrained, TFLite-converted) model.

TEST(ModelMain, Topology) {
  const Model& m = main_model();
  expect_mobilenet_v2_counts(m);
  EXPECT_EQ(m.num_classes, 1001);
  EXPECT_EQ(m.input_channels, 3);
  EXPECT_EQ(m.input_height, 224);
  EXPECT_EQ(m.input_width, 224);
  EXPECT_FALSE(m.synthetic);
  EXPECT_FALSE(m.has_softmax);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_EQ(m.source, test::main_model_path());
  EXPECT_TRUE(std::regex_match(m.checksum, std::regex("sha256:[0-9a-f]{64}"))) << m.checksum;
  const std::string bytes = test::read_file(test::main_model_path());
  EXPECT_EQ(m.checksum, "sha256:" + sha256_hex(bytes));
}

TEST(ModelMain, MetadataAndPreprocess) {
  const Model& m = main_model();
  EXPECT_EQ(m.metadata.at("preprocess.mean"), "0.5,0.5,0.5");
  EXPECT_EQ(m.preprocess.color, "RGB");
  EXPECT_EQ(m.preprocess.resize, 256);
  EXPECT_EQ(m.preprocess.crop, 224);
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(m.preprocess.mean[c], 0.5f);
    EXPECT_FLOAT_EQ(m.preprocess.std[c], 0.5f);
  }
}

TEST(ModelMain, FiguresAt224) {
  const Model& m = main_model();
  const auto s = analyse(m, 1, 224, 224);
  ASSERT_EQ(s.size(), 99u);
  EXPECT_EQ(s.back().output, (Shape{1, 1001, 1, 1}));

  // Stem: 3x3 stride 2 with pads [0, 0, 1, 1]: floor((224 + 1 - 3) / 2) + 1 = 112.
  EXPECT_EQ(s[0].output, (Shape{1, 32, 112, 112}));
  EXPECT_EQ(s[0].macs, int64_t{1} * 32 * 112 * 112 * 3 * 3 * 3);  // 10,838,016
  EXPECT_EQ(s[0].params, 32 * 3 * 3 * 3 + 32);
  EXPECT_EQ(s[0].activation_bytes, int64_t{32} * 112 * 112 * 4);
  EXPECT_EQ(s[0].bytes, (int64_t{3} * 224 * 224 + 896 + int64_t{32} * 112 * 112) * 4);
  // ReLU6: no MACs, reads and writes the map.
  EXPECT_EQ(s[1].macs, 0);
  EXPECT_EQ(s[1].params, 0);
  EXPECT_EQ(s[1].bytes, int64_t{2} * 32 * 112 * 112 * 4);
  // block1.dw: depthwise 3x3, 32 channels: 32 * 112 * 112 * 9.
  EXPECT_EQ(s[2].macs, int64_t{32} * 112 * 112 * 9);  // 3,612,672
  EXPECT_EQ(s[2].params, 32 * 9 + 32);
  // block1.project: 1x1 32 -> 16.
  EXPECT_EQ(s[4].macs, int64_t{16} * 112 * 112 * 32);  // 6,422,528
  // block2.dw: stride 2 -> 56x56, 96 channels.
  EXPECT_EQ(s[7].output, (Shape{1, 96, 56, 56}));
  EXPECT_EQ(s[7].macs, int64_t{96} * 56 * 56 * 9);
  // First residual add: 24 x 56 x 56 additions, reads two maps, writes one.
  EXPECT_EQ(m.layers[15].kind, LayerKind::ResidualAdd);
  EXPECT_EQ(s[15].macs, 24 * 56 * 56);
  EXPECT_EQ(s[15].bytes, int64_t{3} * 24 * 56 * 56 * 4);
  // Head: 1x1 320 -> 1280 at 7x7, the pool sums 1280 x 49, the classifier 1280 x 1001.
  EXPECT_EQ(s[95].macs, int64_t{1280} * 7 * 7 * 320);
  EXPECT_EQ(s[97].macs, 1280 * 49);
  EXPECT_EQ(s[97].output, (Shape{1, 1280, 1, 1}));
  EXPECT_EQ(s[98].macs, 1280 * 1001);
  EXPECT_EQ(s[98].params, 1280 * 1001 + 1001);

  // Whole network: 300,775,552 multiply-accumulates in convolutions and the classifier, plus 279,104
  // additions in the residual adds and the pool.
  int64_t conv_linear = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (m.layers[i].kind == LayerKind::Conv2d || m.layers[i].kind == LayerKind::Linear) conv_linear += s[i].macs;
  EXPECT_EQ(conv_linear, 300775552);
  EXPECT_EQ(total(s, &LayerStats::macs), 301054656);
  EXPECT_EQ(total(s, &LayerStats::params), 3489097);
  int64_t weights = 0;
  for (const Layer& l : m.layers) weights += l.param_count();
  EXPECT_EQ(weights, 3489097);

  // MACs scale with the batch; parameters do not.
  const auto s4 = analyse(m, 4, 224, 224);
  EXPECT_EQ(total(s4, &LayerStats::macs), 4 * 301054656LL);
  EXPECT_EQ(total(s4, &LayerStats::params), 3489097);
  EXPECT_EQ(s4.back().output, (Shape{4, 1001, 1, 1}));
}

TEST(ModelMain, OtherInputSizes) {
  const Model& m = main_model();
  // The pool is global, so any size that survives five stride-2 stages runs.
  EXPECT_EQ(analyse(m, 1, 160, 160)[96].output, (Shape{1, 1280, 5, 5}));
  EXPECT_EQ(analyse(m, 2, 96, 128).back().output, (Shape{2, 1001, 1, 1}));
  EXPECT_EQ(analyse(m, 1, 32, 32)[96].output, (Shape{1, 1280, 1, 1}));
  // 1x1 plus one bottom/right pad is smaller than the stem's 3x3 kernel.
  EXPECT_THROW(analyse(m, 1, 1, 1), Error);
}

TEST(ModelMain, DescribeStrings) {
  const Model& m = main_model();
  EXPECT_EQ(describe(m.layers[0]), "Conv2d(3, 32, 3, 2, [0, 0, 1, 1], 1)");
  EXPECT_EQ(describe(m.layers[1]), "ReLU6()");
  EXPECT_EQ(describe(m.layers[2]), "Conv2d(32, 32, 3, 1, 1, 32)");
  EXPECT_EQ(describe(m.layers[4]), "Conv2d(32, 16, 1, 1, 0, 1)");
  EXPECT_EQ(describe(m.layers[15]), "ResidualAdd(14, 9)");
  EXPECT_EQ(describe(m.layers[97]), "GlobalAveragePool()");
  EXPECT_EQ(describe(m.layers[98]), "Linear(1280, 1001)");
}

TEST(ModelMain, StrideTwoPadsAreAsymmetric) {
  int stride2 = 0;
  for (const Layer& l : main_model().layers) {
    if (l.kind != LayerKind::Conv2d) continue;
    const ConvParams& p = l.conv;
    if (p.stride_h == 2) {
      ++stride2;
      EXPECT_EQ(p.kernel_h, 3) << l.name;
      EXPECT_FALSE(p.symmetric_pads()) << l.name;
      EXPECT_EQ((std::vector<int>{p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}), (std::vector<int>{0, 0, 1, 1}))
          << l.name;
    } else {
      EXPECT_TRUE(p.symmetric_pads()) << l.name;
    }
  }
  EXPECT_EQ(stride2, 5);
}

TEST(ModelMain, BlocksAndNames) {
  const Model& m = main_model();
  const std::vector<std::string> first = {
      "stem.conv",       "stem.relu6",      "block1.dw",           "block1.dw_relu6",
      "block1.project",  "block2.expand",   "block2.expand_relu6", "block2.dw",
      "block2.dw_relu6", "block2.project",  "block3.expand",       "block3.expand_relu6",
      "block3.dw",       "block3.dw_relu6", "block3.project",      "block3.add"};
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(m.layers[i].name, first[i]) << i;
  EXPECT_EQ(m.layers[94].name, "block17.project");
  EXPECT_EQ(m.layers[95].name, "head.conv");
  EXPECT_EQ(m.layers[96].name, "head.relu6");
  EXPECT_EQ(m.layers[97].name, "head.pool");
  EXPECT_EQ(m.layers[98].name, "classifier");
  EXPECT_EQ(m.layers[0].block_name, "stem");
  EXPECT_EQ(m.layers[0].block, 0);
  EXPECT_EQ(m.layers[15].block_name, "block3");
  EXPECT_EQ(m.layers[15].block, 3);
  EXPECT_EQ(m.layers[98].block_name, "head");
  EXPECT_EQ(m.layers[98].block, 18);
  EXPECT_EQ(m.layers[0].source_name, "conv0");  // unnamed nodes go by their output

  // Every bottleneck ends at its projection (or the add after it); 10 of them have an add.
  int with_add = 0;
  std::set<std::string> names;
  for (int b = 1; b <= 17; ++b) {
    std::vector<const Layer*> members;
    for (const Layer& l : m.layers)
      if (l.block == b) members.push_back(&l);
    ASSERT_FALSE(members.empty()) << b;
    const Layer& last = *members.back();
    if (last.kind == LayerKind::ResidualAdd) {
      ++with_add;
      EXPECT_EQ(last.name, "block" + std::to_string(b) + ".add");
    } else {
      EXPECT_EQ(last.name, "block" + std::to_string(b) + ".project");
    }
  }
  EXPECT_EQ(with_add, 10);
  for (const Layer& l : m.layers) EXPECT_TRUE(names.insert(l.name).second) << "duplicate name " << l.name;
}

// ---------------------------------------------------------------------------------------------------------
// The torchvision export: Constant-fed Clip, symmetric pads, Flatten, 1000 classes, named nodes.

TEST(ModelTorchvision, SameTopologyDifferentExportStyle) {
  const Model& t = torchvision_model();
  expect_mobilenet_v2_counts(t);
  EXPECT_EQ(t.num_classes, 1000);
  EXPECT_EQ(describe(t.layers[0]), "Conv2d(3, 32, 3, 2, 1, 1)");
  EXPECT_EQ(describe(t.layers[15]), "ResidualAdd(9, 14)");
  EXPECT_EQ(describe(t.layers[98]), "Linear(1280, 1000)");
  EXPECT_EQ(t.layers[0].source_name, "/features/features.0/features.0.0/Conv");
  for (const Layer& l : t.layers)
    if (l.kind == LayerKind::Conv2d) EXPECT_TRUE(l.conv.symmetric_pads()) << l.name;
  EXPECT_EQ(t.preprocess.mean[0], Preprocess{}.mean[0]);  // no metadata: ImageNet defaults

  // Same shapes as the main model at 224 up to the classifier, and the same structural names.
  const Model& m = main_model();
  const auto st = analyse(t, 1, 224, 224);
  const auto sm = analyse(m, 1, 224, 224);
  for (size_t i = 0; i + 1 < st.size(); ++i) {
    EXPECT_EQ(st[i].output, sm[i].output) << i;
    EXPECT_EQ(t.layers[i].name, m.layers[i].name) << i;
    EXPECT_EQ(t.layers[i].kind, m.layers[i].kind) << i;
  }
  EXPECT_EQ(st.back().output, (Shape{1, 1000, 1, 1}));
}

// ---------------------------------------------------------------------------------------------------------
// The built-in topology.

TEST(ModelBuiltin, MirrorsTheMainModel) {
  const Model b = builtin_mobilenet_v2();
  const Model& m = main_model();
  expect_mobilenet_v2_counts(b);
  EXPECT_EQ(b.num_classes, 1001);
  EXPECT_TRUE(b.synthetic);
  EXPECT_EQ(b.source, "builtin:mobilenet_v2_1.0 (synthetic weights)");
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0],
            "no model file: built-in MobileNetV2 topology with synthetic weights — predictions are meaningless");
  EXPECT_FLOAT_EQ(b.preprocess.mean[0], 0.5f);
  EXPECT_FLOAT_EQ(b.preprocess.std[2], 0.5f);

  const auto sb = analyse(b, 1, 224, 224);
  const auto sm = analyse(m, 1, 224, 224);
  ASSERT_EQ(b.layers.size(), m.layers.size());
  for (size_t i = 0; i < b.layers.size(); ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    EXPECT_EQ(b.layers[i].kind, m.layers[i].kind);
    EXPECT_EQ(b.layers[i].inputs, m.layers[i].inputs);
    EXPECT_EQ(describe(b.layers[i]), describe(m.layers[i]));
    EXPECT_EQ(b.layers[i].name, m.layers[i].name);
    EXPECT_EQ(b.layers[i].block, m.layers[i].block);
    EXPECT_EQ(sb[i].output, sm[i].output);
    EXPECT_EQ(sb[i].macs, sm[i].macs);
    EXPECT_EQ(sb[i].params, sm[i].params);
    EXPECT_EQ(b.layers[i].weight.size(), m.layers[i].weight.size());
    EXPECT_EQ(b.layers[i].bias.size(), m.layers[i].bias.size());
  }
}

TEST(ModelBuiltin, DeterministicPerSeed) {
  const Model a = builtin_mobilenet_v2(7);
  const Model b = builtin_mobilenet_v2(7);
  const Model c = builtin_mobilenet_v2(8);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_NE(a.checksum, c.checksum);
  EXPECT_TRUE(std::regex_match(a.checksum, std::regex("sha256:[0-9a-f]{64}"))) << a.checksum;
  EXPECT_EQ(a.layers[0].weight, b.layers[0].weight);
  EXPECT_NE(a.layers[0].weight, c.layers[0].weight);
  for (const Layer& l : a.layers)
    for (float w : l.weight) ASSERT_TRUE(std::isfinite(w) && std::abs(w) < 2.0f) << l.name;
}

// ---------------------------------------------------------------------------------------------------------
// analyse / describe / helpers on hand-built graphs.

Layer conv_layer(int input, int cin, int cout, int k, int stride, int pad, int groups = 1) {
  Layer l;
  l.kind = LayerKind::Conv2d;
  l.inputs = {input};
  l.conv.in_channels = cin;
  l.conv.out_channels = cout;
  l.conv.kernel_h = l.conv.kernel_w = k;
  l.conv.stride_h = l.conv.stride_w = stride;
  l.conv.pad_top = l.conv.pad_left = l.conv.pad_bottom = l.conv.pad_right = pad;
  l.conv.groups = groups;
  return l;
}

Model tiny_model(std::vector<Layer> layers, int channels = 3) {
  Model m;
  m.input_channels = channels;
  m.layers = std::move(layers);
  for (size_t i = 0; i < m.layers.size(); ++i) m.layers[i].index = static_cast<int>(i);
  return m;
}

template <typename E>
void expect_throw_containing(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one containing '" << part << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(ModelAnalyse, RefusesInputsThatCannotFlow) {
  // Channel mismatch.
  Model m = tiny_model({conv_layer(kNetworkInput, 4, 8, 3, 1, 1)});
  expect_throw_containing<Error>([&] { analyse(m, 1, 8, 8); }, "expects 4 input channels");

  // The map shrinks to nothing: 3x3 valid conv on 2x2.
  m = tiny_model({conv_layer(kNetworkInput, 3, 8, 3, 1, 0)});
  expect_throw_containing<Error>([&] { analyse(m, 1, 2, 2); }, "too small");
  EXPECT_NO_THROW(analyse(m, 1, 3, 3));

  // Linear whose in_features do not match the flattened input.
  Layer fc;
  fc.kind = LayerKind::Linear;
  fc.inputs = {0};
  fc.in_features = 10;
  fc.out_features = 2;
  Layer pool;
  pool.kind = LayerKind::GlobalAveragePool;
  pool.inputs = {kNetworkInput};
  m = tiny_model({pool, fc});
  expect_throw_containing<Error>([&] { analyse(m, 1, 8, 8); }, "expects 10 input features");
  m.layers[1].in_features = 3;
  EXPECT_EQ(analyse(m, 2, 8, 8)[1].output, (Shape{2, 2, 1, 1}));
  EXPECT_EQ(analyse(m, 2, 8, 8)[1].macs, 2 * 3 * 2);
  EXPECT_EQ(analyse(m, 2, 8, 8)[0].macs, 2 * 3 * 64);

  // Residual of different shapes.
  Layer add;
  add.kind = LayerKind::ResidualAdd;
  add.inputs = {0, kNetworkInput};
  m = tiny_model({conv_layer(kNetworkInput, 3, 3, 3, 2, 1), add});
  expect_throw_containing<Error>([&] { analyse(m, 1, 8, 8); }, "different shapes");
  m.layers[0].conv.stride_h = m.layers[0].conv.stride_w = 1;
  EXPECT_EQ(analyse(m, 1, 8, 8)[1].macs, 3 * 64);

  // A non-global AveragePool for this size.
  pool.pool_kernel_h = pool.pool_kernel_w = 7;
  m = tiny_model({pool});
  EXPECT_NO_THROW(analyse(m, 1, 7, 7));
  expect_throw_containing<Error>([&] { analyse(m, 1, 8, 8); }, "does not cover");

  // Inputs that are not earlier layers.
  Layer relu;
  relu.kind = LayerKind::ReLU6;
  relu.inputs = {3};
  m = tiny_model({relu});
  expect_throw_containing<Error>([&] { analyse(m, 1, 8, 8); }, "not an earlier layer");
}

TEST(ModelAnalyse, BadBatchAndSizeAreUsageErrors) {
  const Model m = tiny_model({conv_layer(kNetworkInput, 3, 8, 3, 1, 1)});
  EXPECT_THROW(analyse(m, 0, 8, 8), UsageError);
  EXPECT_THROW(analyse(m, -1, 8, 8), UsageError);
  EXPECT_THROW(analyse(m, 1, 0, 8), UsageError);
  EXPECT_THROW(analyse(m, 1, 8, -5), UsageError);
  EXPECT_THROW(analyse(m, 1, 70000, 8), UsageError);
  EXPECT_THROW(analyse(m, 100000, 8, 8), UsageError);
  EXPECT_NO_THROW(analyse(m, 1, 8, 8));
}

TEST(ModelAnalyse, BytesCountInputsWeightsAndOutput) {
  Model m = tiny_model({conv_layer(kNetworkInput, 3, 8, 1, 1, 0)});
  auto s = analyse(m, 2, 4, 4);
  EXPECT_EQ(s[0].params, 24);
  EXPECT_EQ(s[0].bytes, (2 * 3 * 16 + 24 + 2 * 8 * 16) * 4);
  m.layers[0].bias.assign(8, 0.0f);
  s = analyse(m, 2, 4, 4);
  EXPECT_EQ(s[0].params, 32);
  EXPECT_EQ(s[0].bytes, (2 * 3 * 16 + 32 + 2 * 8 * 16) * 4);
  EXPECT_EQ(s[0].activation_bytes, 2 * 8 * 16 * 4);
}

TEST(ModelDescribe, Formats) {
  Layer c = conv_layer(kNetworkInput, 3, 32, 3, 2, 1);
  EXPECT_EQ(describe(c), "Conv2d(3, 32, 3, 2, 1, 1)");
  c.conv.kernel_w = 1;
  c.conv.stride_w = 1;
  c.conv.pad_left = c.conv.pad_right = 0;
  EXPECT_EQ(describe(c), "Conv2d(3, 32, 3x1, 2x1, [1, 0, 1, 0], 1)");
  Layer r;
  r.kind = LayerKind::ReLU6;
  EXPECT_EQ(describe(r), "ReLU6()");
  r.kind = LayerKind::ReLU;
  r.clip_max = std::numeric_limits<float>::infinity();
  EXPECT_EQ(describe(r), "ReLU()");
  r.clip_min = -0.5f;
  r.clip_max = 2.5f;
  EXPECT_EQ(describe(r), "Clip(-0.5, 2.5)");
  Layer a;
  a.kind = LayerKind::ResidualAdd;
  a.inputs = {5, 9};
  EXPECT_EQ(describe(a), "ResidualAdd(5, 9)");
  Layer p;
  p.kind = LayerKind::GlobalAveragePool;
  EXPECT_EQ(describe(p), "GlobalAveragePool()");
  Layer f;
  f.kind = LayerKind::Linear;
  f.in_features = 1280;
  f.out_features = 1001;
  EXPECT_EQ(describe(f), "Linear(1280, 1001)");
}

TEST(ModelHelpers, KindNamesAndChecksum) {
  EXPECT_STREQ(to_string(LayerKind::Conv2d), "Conv2d");
  EXPECT_STREQ(to_string(LayerKind::ReLU6), "ReLU6");
  EXPECT_STREQ(to_string(LayerKind::ReLU), "ReLU");
  EXPECT_STREQ(to_string(LayerKind::ResidualAdd), "ResidualAdd");
  EXPECT_STREQ(to_string(LayerKind::GlobalAveragePool), "GlobalAveragePool");
  EXPECT_STREQ(to_string(LayerKind::Linear), "Linear");
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(fnv1a64_hex("", 0), "cbf29ce484222325");
  EXPECT_EQ(fnv1a64_hex("a", 1), "af63dc4c8601ec8c");
  EXPECT_EQ(fnv1a64_hex("foobar", 6), "85944171f73967e8");
}

TEST(ModelBlocks, GenericGraphs) {
  // No convolution at all: everything is head.
  Layer pool;
  pool.kind = LayerKind::GlobalAveragePool;
  pool.inputs = {kNetworkInput};
  Layer fc;
  fc.kind = LayerKind::Linear;
  fc.inputs = {0};
  fc.in_features = 3;
  fc.out_features = 2;
  Model m = tiny_model({pool, fc});
  assign_blocks_and_names(m);
  EXPECT_EQ(m.num_blocks, 0);
  EXPECT_EQ(m.layers[0].name, "head.pool");
  EXPECT_EQ(m.layers[0].block_name, "head");
  EXPECT_EQ(m.layers[1].name, "classifier");

  // Stem conv without activation, then two linear convolutions: two blocks of one projection each.
  Layer relu;
  relu.kind = LayerKind::ReLU;
  m = tiny_model(
      {conv_layer(kNetworkInput, 3, 8, 3, 1, 1), conv_layer(0, 8, 8, 1, 1, 0), conv_layer(1, 8, 8, 1, 1, 0)});
  assign_blocks_and_names(m);
  EXPECT_EQ(m.num_blocks, 2);
  EXPECT_EQ(m.layers[0].name, "stem.conv");
  EXPECT_EQ(m.layers[1].name, "block1.project");
  EXPECT_EQ(m.layers[2].name, "block2.project");

  // A block with a full 3x3 expand and plain ReLU, a head with no pool.
  Layer r1 = relu, r2 = relu;
  r1.inputs = {0};
  r2.inputs = {2};
  m = tiny_model({conv_layer(kNetworkInput, 3, 8, 3, 1, 1), r1, conv_layer(1, 8, 16, 3, 1, 1), r2,
                  conv_layer(3, 16, 8, 1, 1, 0), conv_layer(4, 8, 8, 1, 1, 0)});
  m.layers.back().inputs = {4};
  Layer r3 = relu;
  r3.inputs = {5};
  m.layers.push_back(r3);
  m.layers.back().index = 6;
  assign_blocks_and_names(m);
  EXPECT_EQ(m.num_blocks, 1);
  EXPECT_EQ(m.layers[1].name, "stem.relu");
  EXPECT_EQ(m.layers[2].name, "block1.expand");
  EXPECT_EQ(m.layers[3].name, "block1.expand_relu");
  EXPECT_EQ(m.layers[4].name, "block1.project");
  EXPECT_EQ(m.layers[5].name, "head.conv");
  EXPECT_EQ(m.layers[6].name, "head.relu");
  EXPECT_EQ(m.layers[6].block, 2);
}

// Issue 30, finding 14: the least memory a run takes, from the graph's shapes alone (what every backend checks before
// it makes any primitive or buffer): the input, the logits, and the layer whose inputs and output are largest.
TEST(ModelMain, ActivationFloorFromTheShapes) {
  const Model& m = main_model();
  const std::vector<LayerStats> stats = analyse(m, 2, 224, 224);
  const Shape input{2, 3, 224, 224};
  int64_t largest = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    int64_t live = stats[i].output.numel();
    for (int src : m.layers[i].inputs)
      live += src == kNetworkInput ? input.numel() : stats[static_cast<size_t>(src)].output.numel();
    largest = std::max(largest, live);
  }
  EXPECT_EQ(activation_floor_bytes(m, input, stats, 4), (input.numel() + stats.back().output.numel() + largest) * 4);
  EXPECT_EQ(activation_floor_bytes(m, input, stats, 2), activation_floor_bytes(m, input, stats, 4) / 2);
  // The first block's 96-channel expansion at 112x112 and its depthwise output: 2 x 96 x 112 x 112 x 2 values at the
  // least.
  EXPECT_GE(largest, int64_t{2} * 2 * 96 * 112 * 112);
  // The largest input analyse() takes: in the hundreds of GiB, not wrapped around.
  const std::vector<LayerStats> huge = analyse(m, 1, 65536, 65536);
  EXPECT_GT(activation_floor_bytes(m, Shape{1, 3, 65536, 65536}, huge, 4), int64_t{100} << 30);
}

}  // namespace
}  // namespace mnv2
