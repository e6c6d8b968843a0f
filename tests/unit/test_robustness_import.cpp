// Hostile ONNX files beyond tests/unit/test_onnx_import.cpp: NaN/Inf weights (load, warn per layer),
// graphs that are not a MobileNetV2-like CNN, absurd declared sizes (refused before anything is allocated
// for them), graphs built to blow up work, and error messages that stay on one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/error.h"
#include "mnv2/labels.h"
#include "mnv2/model.h"
#include "mnv2/studies.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// load_onnx must throw mnv2::Error naming the file, on one line, holding every part.
void expect_refused(const std::string& path, const std::vector<std::string>& parts) {
  try {
    (void)load_onnx(path);
    ADD_FAILURE() << path << " loaded; expected an error containing '" << parts.at(0) << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "the message does not name the file: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "a multi-line message: " << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
  }
}

// Conv(3->4, 3x3, stride 2) -> ReLU6 -> classifier(4 -> 5).
OnnxBuilder small_classifier() {
  OnnxBuilder b;
  b.input("x", {-1, 3, 8, 8});
  b.conv("x", "c", 3, 4, 3, 2, 1);
  b.init("lo", {}, {0.0f});
  b.init("hi", {}, {6.0f});
  b.node("Clip", {"c", "lo", "hi"}, {"r"});
  b.classifier("r", 4, 5);
  return b;
}

Tensor run_cpu(const Model& m) {
  auto net = make_backend("cpu")->prepare(m, PrepareConfig{1, m.input_height, m.input_width, Precision::fp32});
  return net->run(random_input(Shape{1, m.input_channels, m.input_height, m.input_width}, 3));
}

// Every message a model carries, for failure output.
std::string all_warnings(const Model& m) {
  std::string s;
  for (const auto& w : m.warnings) s += "\n  " + w;
  return s;
}

// ---- NaN / Inf weights: load, one warning per affected layer, outputs flagged -------------------------

TEST(RobustImport, NanAndInfWeightsLoadWithAWarningPerLayer) {
  TempDir dir;
  OnnxBuilder b = small_classifier();
  // A NaN in the convolution's weights and an Inf in the classifier's bias.
  auto* w = b.proto().mutable_graph()->mutable_initializer(0);
  ASSERT_EQ(w->name(), "c_w");
  w->set_float_data(5, kNaN);
  for (auto& t : *b.proto().mutable_graph()->mutable_initializer())
    if (t.name() == "fc_b") t.set_float_data(1, -kInf);
  const std::string path = dir.file("nan.onnx");
  b.save(path);

  const Model m = load_onnx(path);
  ASSERT_EQ(m.layers.size(), 4u);
  ASSERT_EQ(m.warnings.size(), 2u) << all_warnings(m);
  EXPECT_EQ(m.warnings[0],
            "weights of layer 0 (stem.conv, ONNX node 'c') contain NaN/Inf values: outputs are not meaningful");
  EXPECT_NE(m.warnings[1].find("weights of layer 3 ("), std::string::npos) << m.warnings[1];
  EXPECT_NE(m.warnings[1].find("ONNX node 'fc'"), std::string::npos) << m.warnings[1];
  EXPECT_NE(m.warnings[1].find("outputs are not meaningful"), std::string::npos) << m.warnings[1];

  // It runs; the logits show the damage instead of hiding it, and ranking them does not crash.
  const Tensor logits = run_cpu(m);
  EXPECT_FALSE(compare(logits.data.data(), logits.data.data(), static_cast<int64_t>(logits.data.size())).finite);
  const auto top = top_k(logits.data.data(), 5, 5, builtin_labels(5));
  EXPECT_EQ(top.size(), 5u);
}

// Finite weights that overflow float at run time: conv 0 (all weights 0.1) keeps a positive input positive,
// conv 1's weights are 1e38, so its output is Inf, and the classifier's mixed-sign weights make NaN of that.
TEST(RobustImport, NonFiniteLogitsNameTheFirstLayerThatProducedThem) {
  TempDir dir;
  const std::string path = dir.file("overflow.onnx");
  overflowing_classifier(5).save(path);
  const Model m = load_onnx(path);
  ASSERT_GE(m.layers.size(), 3u);
  EXPECT_TRUE(m.warnings.empty()) << all_warnings(m);  // every weight is finite: only running shows it
  Tensor ones(Shape{1, 3, 8, 8});
  std::fill(ones.data.begin(), ones.data.end(), 1.0f);
  const std::string expected = "outputs contain NaN/Inf; first produced by layer 1 (" + m.layers[1].name + ")";
  for (const char* backend : {"cpu-ref", "cpu"}) {
    SCOPED_TRACE(backend);
    Classifier classifier;
    const ClassifyResult r = classifier.classify(m, builtin_labels(5), ClassifyConfig{backend}, ones);
    ASSERT_EQ(r.warnings.size(), 1u);
    // The oneDNN backend may fuse layer 1 away; it still warns, and names the layer where it can.
    if (std::string(backend) == "cpu-ref" || r.warnings[0].find("first produced") != std::string::npos)
      EXPECT_EQ(r.warnings[0], expected);
    EXPECT_EQ(r.warnings[0].rfind("outputs contain NaN/Inf; ", 0), 0u) << r.warnings[0];

    // The engine function on its own: finite outputs say nothing.
    auto net = make_backend(backend)->prepare(m, PrepareConfig{1, 8, 8, Precision::fp32});
    const Tensor logits = net->run(ones);
    EXPECT_EQ(nonfinite_origin(m, *net, ones, logits), r.warnings[0]);
    EXPECT_EQ(nonfinite_origin(m, *net, ones, Tensor(Shape{1, 5, 1, 1})), "");
    Tensor nan_input = ones;
    nan_input.data[7] = kNaN;
    EXPECT_EQ(nonfinite_origin(m, *net, nan_input, logits),
              "outputs contain NaN/Inf; the network's input already holds NaN/Inf");
  }
  // A finite run warns about nothing.
  Classifier classifier;
  const Model fine = load_onnx([&] {
    small_classifier().save(dir.file("fine.onnx"));
    return dir.file("fine.onnx");
  }());
  EXPECT_TRUE(classifier.classify(fine, builtin_labels(5), ClassifyConfig{"cpu-ref"}, ones).warnings.empty());
}

TEST(RobustImport, NanInBatchNormParametersWarnsOnTheFoldedConv) {
  for (const char* which : {"scale", "bias", "mean", "var"}) {
    SCOPED_TRACE(which);
    TempDir dir;
    OnnxBuilder b;
    b.input("x", {-1, 2, 4, 4});
    b.conv("x", "c", 2, 3, 1);
    const std::string bad = which;
    b.init("s", {3}, {1.0f, bad == "scale" ? kNaN : 1.0f, 1.0f});
    b.init("bb", {3}, {0.0f, bad == "bias" ? kInf : 0.0f, 0.0f});
    b.init("m", {3}, {0.0f, bad == "mean" ? -kInf : 0.0f, 0.0f});
    b.init("v", {3}, {1.0f, bad == "var" ? kNaN : 1.0f, 1.0f});
    b.node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"y"}, "bn");
    b.output("y");
    const std::string path = dir.file("bn.onnx");
    b.save(path);
    const Model m = load_onnx(path);
    ASSERT_EQ(m.warnings.size(), 1u) << all_warnings(m);
    EXPECT_NE(m.warnings[0].find("weights of layer 0"), std::string::npos) << m.warnings[0];
  }
  // A negative variance is a broken file, not a NaN: still refused.
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {-1, 2, 4, 4});
  b.conv("x", "c", 2, 3, 1);
  for (const char* n : {"s", "bb", "m"}) b.init(n, {3}, {1.0f, 1.0f, 1.0f});
  b.init("v", {3}, {1.0f, -4.0f, 1.0f});
  b.node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"y"}, "bn");
  b.output("y");
  b.save(dir.file("negative_var.onnx"));
  expect_refused(dir.file("negative_var.onnx"), {"'bn'", "not positive"});
}

TEST(RobustImport, FoldingThatOverflowsFloatWarnsInsteadOfMisbehaving) {
  // var = 1e-44 (a float denormal) and epsilon 0: the scale 1/sqrt(var) is 1e22, and weights of 1e20 become
  // 1e42, beyond float. Converting that double to float is undefined behaviour unless handled.
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {-1, 1, 2, 2});
  b.init("w", {1, 1, 1, 1}, {1e20f});
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  b.init("s", {1}, {1.0f});
  b.init("bb", {1}, {0.0f});
  b.init("m", {1}, {0.0f});
  b.init("v", {1}, {1e-44f});
  OnnxBuilder::attr_float(b.node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"y"}, "bn"), "epsilon", 0.0f);
  b.output("y");
  b.save(dir.file("overflow.onnx"));
  const Model m = load_onnx(dir.file("overflow.onnx"));
  ASSERT_EQ(m.warnings.size(), 1u) << all_warnings(m);
  EXPECT_TRUE(std::isinf(m.layers.at(0).weight.at(0)));
}

TEST(RobustImport, DoubleWeightsBeyondFloatRangeBecomeInfAndWarn) {
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {-1, 2, 2, 2});
  b.init_double("w", {1, 2, 1, 1}, {1e300, -0.5});
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output("y");
  b.save(dir.file("double.onnx"));
  const Model m = load_onnx(dir.file("double.onnx"));
  ASSERT_EQ(m.layers.at(0).weight.size(), 2u);
  EXPECT_EQ(m.layers[0].weight[0], kInf);
  EXPECT_EQ(m.layers[0].weight[1], -0.5f);
  ASSERT_EQ(m.warnings.size(), 1u) << all_warnings(m);
}

// ---- graphs that are not a MobileNetV2-like CNN ---------------------------------------------------------
// Policy: the importer takes any graph of supported operations with one 4-D float image input whose single
// output is the last layer's (the profiler times any such CNN); it refuses what it cannot run or would
// run wrongly. `mnv2 classify` additionally refuses a network whose output is not one score per class
// (tests/cli/test_cli_robustness.cpp).

TEST(RobustImport, GraphsThatAreNotMobileNetV2LikeAreRefusedOrLoadAsDocumented) {
  struct Case {
    const char* name;
    std::function<void(OnnxBuilder&)> build;
    std::vector<std::string> refusal;  // empty: loads
  };
  const std::vector<Case> cases = {
      {"a single Linear on the flattened image (loads: a classifier, if a trivial one)",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 4, 4});
         OnnxBuilder::attr_int(b.node("Flatten", {"x"}, {"f"}), "axis", 1);
         b.init("w", {10, 48}, ramp(480));
         OnnxBuilder::attr_int(b.node("Gemm", {"f", "w"}, {"y"}, "fc"), "transB", 1);
         b.output("y");
       },
       {}},
      {"a conv net with no classifier (loads; classify refuses it)",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.conv("x", "c1", 3, 4, 3, 1, 1);
         b.node("Relu", {"c1"}, {"r1"});
         b.conv("r1", "c2", 4, 4, 3, 1, 1);
         b.output("c2");
       },
       {}},
      {"the output is not the last layer",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.conv("x", "c1", 3, 4, 1);
         b.conv("c1", "c2", 4, 4, 1);
         b.output("c1");
       },
       {"graph output 'c1'", "not the last layer"}},
      {"two image inputs",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.input("y", {-1, 3, 8, 8});
         b.node("Add", {"x", "y"}, {"z"});
         b.output("z");
       },
       {"2 non-weight inputs", "'x'", "'y'"}},
      {"no input at all",
       [](OnnxBuilder& b) {
         b.init("k", {1, 1, 1, 1}, {1.0f});
         b.node("Identity", {"k"}, {"y"});
         b.output("y");
       },
       {"0 non-weight inputs"}},
      {"two outputs (a side branch)",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.conv("x", "c1", 3, 4, 1);
         b.conv("c1", "c2", 4, 4, 1);
         b.output("c1");
         b.output("c2");
       },
       {"2 outputs"}},
      {"no layers: the input passed straight through",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.node("Identity", {"x"}, {"y"});
         b.output("y");
       },
       {"no layers"}},
      {"the output is a constant",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.conv("x", "c1", 3, 4, 1);
         b.init("k", {1}, {1.0f});
         b.node("Identity", {"k"}, {"y"});
         b.output("y");
       },
       {"'y'", "not computed by the network"}},
      {"a rank-5 input (video, 3-D convolution)",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 4, 8, 8});
         b.init("w", {2, 3, 1, 1, 1}, ramp(6));
         b.node("Conv", {"x", "w"}, {"y"});
         b.output("y");
       },
       {"4-D"}},
      {"an integer image input",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8}, onnx::TensorProto::INT32);
         b.node("Identity", {"x"}, {"y"});
         b.output("y");
       },
       {"element type", "FLOAT"}},
      {"an operator MobileNetV2 does not use (Sigmoid)",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 3, 8, 8});
         b.conv("x", "c", 3, 2, 1);
         OnnxBuilder::attr_int(b.node("Flatten", {"c"}, {"f"}), "axis", 1);
         b.node("Sigmoid", {"f"}, {"y"}, "gate");
         b.output("y");
       },
       {"'gate'", "(Sigmoid)", "unsupported operator"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    OnnxBuilder b;
    c.build(b);
    const std::string path = dir.file("graph.onnx");
    b.save(path);
    if (c.refusal.empty()) {
      const Model m = load_onnx(path);
      EXPECT_FALSE(m.layers.empty());
      EXPECT_GT(m.num_classes, 0);
      EXPECT_EQ(run_cpu(m).shape.n, 1);
    } else {
      expect_refused(path, c.refusal);
    }
  }
}

// ---- absurd numbers: refused from what the file holds, never allocated ---------------------------------

TEST(RobustImport, AbsurdDeclaredSizesAreRefusedWithoutAllocating) {
  struct Case {
    const char* name;
    std::function<void(OnnxBuilder&)> build;
    std::vector<std::string> refusal;
  };
  const std::vector<Case> cases = {
      {"a weight declaring 2^31 values (8 GiB) with 4 in the file",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 2, 4, 4});
         b.init("w", {1 << 15, 2, 1 << 8, 1 << 7}, {1, 2, 3, 4});
         b.node("Conv", {"x", "w"}, {"y"}, "conv");
         b.output("y");
       },
       {"'w'", "4 values", "needs 2147483648"}},
      {"a weight declaring 2^31 values as raw data of 16 bytes",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 2, 4, 4});
         b.init("w", {1 << 15, 2, 1 << 8, 1 << 7}, {1, 2, 3, 4}, /*raw=*/true);
         b.node("Conv", {"x", "w"}, {"y"}, "conv");
         b.output("y");
       },
       {"'w'", "16 bytes", "needs 2147483648"}},
      {"a weight declaring more values than int64 holds",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 2, 4, 4});
         b.init("w", {int64_t{1} << 40, int64_t{1} << 40, 1, 1}, {1, 2});
         b.node("Conv", {"x", "w"}, {"y"}, "conv");
         b.output("y");
       },
       {"'w'", "too large"}},
      {"a negative dimension",
       [](OnnxBuilder& b) {
         b.input("x", {-1, 2, 4, 4});
         b.init("w", {2, -2, 1, 1}, {1, 2, 3, 4});
         b.node("Conv", {"x", "w"}, {"y"}, "conv");
         b.output("y");
       },
       {"negative dimension"}},
      {"an input of 100000 x 100000 pixels",
       [](OnnxBuilder& b) {
         b.input("x", {1, 3, 100000, 100000});
         b.conv("x", "c", 3, 4, 1);
         b.output("c");
       },
       {"unusable size 100000"}},
      {"an input of 2^21 channels",
       [](OnnxBuilder& b) {
         b.input("x", {1, 1 << 21, 8, 8});
         b.node("Relu", {"x"}, {"y"});
         b.output("y");
       },
       {"channel count"}},
      {"a 100000-pixel convolution kernel",
       [](OnnxBuilder& b) {
         b.input("x", {1, 1, 8, 8});
         b.init("w", {1, 1, 100000, 1}, std::vector<float>(100000, 0.5f));
         b.node("Conv", {"x", "w"}, {"y"}, "conv");
         b.output("y");
       },
       {"unusable shape"}},
      {"strides of 10^12",
       [](OnnxBuilder& b) {
         b.input("x", {1, 1, 8, 8});
         auto& n = b.conv("x", "c", 1, 1, 1);
         n.mutable_attribute(1)->set_ints(0, 1000000000000);
         b.output("c");
       },
       {"strides"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    OnnxBuilder b;
    c.build(b);
    const std::string path = dir.file("absurd.onnx");
    b.save(path);
    const auto t0 = std::chrono::steady_clock::now();
    expect_refused(path, c.refusal);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  }
}

TEST(RobustImport, ShapeArithmeticCannotDoubleItselfIntoGigabytes) {
  // Each Concat joins the previous result with itself: 60 of them would ask for 2^60 values.
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {-1, 2, 4, 4});
  b.conv("x", "c", 2, 2, 1);
  b.node("Shape", {"c"}, {"s0"});
  for (int i = 0; i < 60; ++i) {
    const std::string in = "s" + std::to_string(i), out = "s" + std::to_string(i + 1);
    OnnxBuilder::attr_int(b.node("Concat", {in, in}, {out}, "concat" + std::to_string(i)), "axis", 0);
  }
  b.node("Reshape", {"c", "s60"}, {"y"});
  b.output("y");
  b.save(dir.file("doubling.onnx"));
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(dir.file("doubling.onnx"), {"(Concat)", "more than 1024 values"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(RobustImport, TensOfThousandsOfLayersAreRefusedQuickly) {
  // 20000 ReLUs: a 600 kB file that would cost quadratic time in per-layer passes (layer naming).
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {-1, 1, 2, 2});
  b.conv("x", "r0", 1, 1, 1);
  for (int i = 0; i < 20000; ++i) b.node("Relu", {"r" + std::to_string(i)}, {"r" + std::to_string(i + 1)});
  b.output("r20000");
  b.save(dir.file("deep.onnx"));
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(dir.file("deep.onnx"), {"more than 4096 layers"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);

  // 4000 layers, within the bound: loads in reasonable time.
  OnnxBuilder ok;
  ok.input("x", {-1, 1, 2, 2});
  ok.conv("x", "r0", 1, 1, 1);
  for (int i = 0; i < 4000; ++i) ok.node("Relu", {"r" + std::to_string(i)}, {"r" + std::to_string(i + 1)});
  ok.output("r4000");
  ok.save(dir.file("deep_ok.onnx"));
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(load_onnx(dir.file("deep_ok.onnx")).layers.size(), 4001u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 30.0);

  // 4000 convolutions without activations: each closes a bottleneck block, the worst case for naming.
  OnnxBuilder blocks;
  blocks.input("x", {-1, 1, 2, 2});
  blocks.init("w", {1, 1, 1, 1}, {0.5f});
  for (int i = 0; i < 4000; ++i) blocks.node("Conv", {"c" + std::to_string(i), "w"}, {"c" + std::to_string(i + 1)});
  blocks.proto().mutable_graph()->mutable_node(0)->set_input(0, "x");
  blocks.output("c4000");
  blocks.save(dir.file("blocks.onnx"));
  const auto t2 = std::chrono::steady_clock::now();
  const Model m = load_onnx(dir.file("blocks.onnx"));
  EXPECT_EQ(m.layers.size(), 4000u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count(), 30.0);
}

// ---- messages: one line, whatever the file holds ---------------------------------------------------------

TEST(RobustImport, ErrorsStayOnOneLine) {
  {
    // A node name with line breaks and an escape sequence, on an unsupported operator.
    TempDir dir;
    OnnxBuilder b;
    b.input("x", {-1, 2, 4, 4});
    b.conv("x", "c", 2, 2, 1);
    b.node("Sigmoid", {"c"}, {"y"}, "evil\nname\r\x1b[2J");
    b.output("y");
    b.save(dir.file("names.onnx"));
    expect_refused(dir.file("names.onnx"), {"evil name ", "(Sigmoid)"});
  }
  {
    // The ONNX checker's own messages span lines ("==> Context: ...").
    TempDir dir;
    OnnxBuilder b;
    b.input("x", {-1, 2, 4, 4});
    b.init("w", {2, 2, 1, 1}, ramp(4));
    b.node("Conw", {"x", "w"}, {"y"}, "typo");
    b.output("y");
    b.save(dir.file("checker.onnx"));
    expect_refused(dir.file("checker.onnx"), {"ONNX checker", "Conw"});
  }
  {
    // A warning built from a hostile node name is one line too.
    TempDir dir;
    OnnxBuilder b;
    b.input("x", {-1, 2, 4, 4});
    b.init("w", {2, 2, 1, 1}, {kNaN, 1, 1, 1});
    b.node("Conv", {"x", "w"}, {"y"}, "two\nlines");
    b.output("y");
    b.save(dir.file("warning.onnx"));
    const Model m = load_onnx(dir.file("warning.onnx"));
    ASSERT_EQ(m.warnings.size(), 1u);
    EXPECT_EQ(m.warnings[0].find('\n'), std::string::npos) << m.warnings[0];
  }
}

}  // namespace
}  // namespace mnv2::test
