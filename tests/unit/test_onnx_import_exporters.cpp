// Models in the forms current exporters write them (PyTorch 2.11's torch.export-based exporter: IR 10,
// opset 18..23, ReduceMean with axes as an input, Clip bounds as initializers, Reshape with allowzero,
// Gemm without C, external data; the TorchScript exporter: Constant -> Clip, GlobalAveragePool, Flatten;
// older opsets; auto_pad; Cast/Identity; 16-bit and double weights). Each form of one small network is
// run on the cpu backend against the same network written in plain explicit form (IR 7, opset 13,
// GlobalAveragePool + Flatten + Gemm, explicit pads, float32 weights in the file). Plus: the library
// checker is skipped (with a warning) exactly for files newer than the library, versions out of range are
// refused, and the importer's own node checks stand in for the checker.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "onnx_builder.h"
#include "test_support.h"
#include "util/sha256.h"

namespace mnv2::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int kSide = 16;  // input 2 x 3 x 16 x 16

enum class Clip { Attributes, Initializers, ConstantNodes, Omitted };
enum class Pool { GlobalAveragePool, ReduceMeanAttribute, ReduceMeanInput };
enum class Flat { Flatten, ReshapeDeclaredBatch, ReshapeMinusOne, Squeeze, None };
enum class Fc { GemmWithC, GemmWithoutC, MatMulAdd };
enum class Pads { Explicit, SameUpper, SameLower, Valid };
enum class Weights { Float, Float16, Float16Cast, BFloat16Cast, DoubleCast };
enum class External { Inline, OneFile, ManyFiles };

struct Form {
  const char* name;
  int64_t ir = 10, opset = 20;
  Clip clip = Clip::Initializers;
  Pool pool = Pool::ReduceMeanInput;
  bool keepdims = true;
  Flat flat = Flat::ReshapeDeclaredBatch;
  Fc fc = Fc::GemmWithoutC;
  Pads pads = Pads::Explicit;
  Weights weights = Weights::Float;
  External external = External::Inline;
  bool pass_through = false;  // Cast(to FLOAT) and Identity on computed tensors
  bool dynamic_batch = false;
};

std::ostream& operator<<(std::ostream& os, const Form& f) { return os << f.name; }

// Weights k/128 with |k| <= 64: exact in float16, bfloat16 and double, so every form holds the same values.
std::vector<float> weights(size_t n, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 37 + salt * 11) % 129) - 64) / 128.0f;
  return v;
}

// float -> binary16 bits for values exactly representable as normal halves (asserted), written
// independently of the importer's decoder.
uint16_t exact_half(float f) {
  if (f == 0.0f) return std::signbit(f) ? 0x8000 : 0;
  int e = 0;
  const double m = std::frexp(std::fabs(static_cast<double>(f)), &e);  // f = m * 2^e, m in [0.5, 1)
  const double mantissa = (m * 2.0 - 1.0) * 1024.0;
  const int exponent = e - 1 + 15;
  if (mantissa != std::floor(mantissa) || exponent < 1 || exponent > 30) throw std::runtime_error("not a half");
  return static_cast<uint16_t>((f < 0 ? 0x8000 : 0) | (exponent << 10) | static_cast<int>(mantissa));
}

std::string encode(const std::vector<float>& v, Weights w) {
  std::string bytes;
  for (float f : v) {
    if (w == Weights::Float16 || w == Weights::Float16Cast) {
      const uint16_t h = exact_half(f);
      bytes.append(reinterpret_cast<const char*>(&h), 2);
    } else if (w == Weights::BFloat16Cast) {
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      if (bits & 0xffffu) throw std::runtime_error("not a bfloat16");
      const uint16_t b = static_cast<uint16_t>(bits >> 16);
      bytes.append(reinterpret_cast<const char*>(&b), 2);
    } else if (w == Weights::DoubleCast) {
      const double d = f;
      bytes.append(reinterpret_cast<const char*>(&d), 8);
    } else {
      bytes.append(reinterpret_cast<const char*>(&f), 4);
    }
  }
  return bytes;
}

struct Bounds {
  float lo, hi;
};

// The clip bounds of the three activations: ReLU6 everywhere, except where bounds are omitted.
Bounds bounds(const Form& f, int which) {
  if (f.clip != Clip::Omitted) return {0.0f, 6.0f};
  if (which == 0) return {-kInf, 6.0f};  // min omitted by an empty name
  if (which == 1) return {0.0f, kInf};   // max omitted by leaving it off
  return {-kInf, kInf};                  // both omitted
}

class Writer {
 public:
  Writer(const Form& f, bool reference) : f_(f), ref_(reference), b_(reference ? 13 : f.opset, reference ? 7 : f.ir) {}

  std::string save(const TempDir& dir, const std::string& file) {
    build();
    const std::string path = dir.file(file);
    b_.save(path);
    return path;
  }

 private:
  bool is(Weights w) const { return !ref_ && f_.weights == w; }

  // A weight initializer `name` (float32 in the reference; in the form's type otherwise, behind a Cast
  // when the form says so).
  void weight(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    const Weights w = ref_ ? Weights::Float : f_.weights;
    if (w == Weights::Float) {
      b_.init(name, dims, v, /*raw=*/true);
    } else {
      const int32_t type = w == Weights::BFloat16Cast ? onnx::TensorProto::BFLOAT16
                           : w == Weights::DoubleCast ? onnx::TensorProto::DOUBLE
                                                      : onnx::TensorProto::FLOAT16;
      const bool cast = w != Weights::Float16;
      b_.init_raw(cast ? name + "_stored" : name, dims, type, encode(v, w));
      if (cast) OnnxBuilder::attr_int(b_.node("Cast", {name + "_stored"}, {name}), "to", onnx::TensorProto::FLOAT);
    }
    if (!ref_ && f_.external != External::Inline) {
      std::string location = "model.onnx.data";
      if (f_.external == External::ManyFiles)
        location = name == "fc_b"                                                ? "c.bin"
                   : name.rfind("project", 0) == 0 || name.rfind("head", 0) == 0 ? "data/b.bin"
                                                                                 : "a.bin";
      // c.bin holds one tensor and gives no length: it runs to the end of the file.
      onnx::TensorProto* t = b_.find_init(w == Weights::Float || w == Weights::Float16 ? name : name + "_stored");
      b_.externalize(*t, location, location != "c.bin");
    }
  }

  void conv(const std::string& in, const std::string& out, int64_t cin, int64_t cout, int64_t k, int64_t stride,
            int64_t group, int salt) {
    weight(out + "_w", {cout, cin / group, k, k}, weights(static_cast<size_t>(cout * (cin / group) * k * k), salt));
    weight(out + "_b", {cout}, weights(static_cast<size_t>(cout), salt + 1));
    auto& n = b_.node("Conv", {in, out + "_w", out + "_b"}, {out}, out);
    OnnxBuilder::attr_ints(n, "kernel_shape", {k, k});
    OnnxBuilder::attr_ints(n, "strides", {stride, stride});
    OnnxBuilder::attr_int(n, "group", group);
    const Pads style = ref_ ? Pads::Explicit : f_.pads;
    const bool same = style == Pads::SameUpper || style == Pads::SameLower;
    if (style == Pads::Explicit || (style == Pads::Valid && k > 1 && stride == 1)) {
      // The pads ONNX gives each auto_pad mode at this size, worked out by hand: the stem (3x3, stride 2,
      // 16x16 input) needs one pixel in total, the 3x3 stride-1 convs two, 1x1 convs none.
      std::vector<int64_t> pads = {k / 2, k / 2, k / 2, k / 2};
      if (stride == 2) {
        if (f_.pads == Pads::SameUpper) pads = {0, 0, 1, 1};
        if (f_.pads == Pads::SameLower) pads = {1, 1, 0, 0};
        if (f_.pads == Pads::Valid) pads = {0, 0, 0, 0};
      }
      OnnxBuilder::attr_ints(n, "pads", pads);
      if (!ref_) OnnxBuilder::attr_string(n, "auto_pad", "NOTSET");  // as torch.export writes it
    } else {
      OnnxBuilder::attr_string(n, "auto_pad",
                               same ? (style == Pads::SameUpper ? "SAME_UPPER" : "SAME_LOWER") : "VALID");
    }
  }

  void clip(const std::string& in, const std::string& out, int which) {
    const Bounds bd = bounds(f_, which);
    const Clip style = ref_ ? Clip::Initializers : f_.clip;
    const std::string lo = out + "_min", hi = out + "_max";
    switch (style) {
      case Clip::Attributes: {
        auto& n = b_.node("Clip", {in}, {out}, out);
        OnnxBuilder::attr_float(n, "min", bd.lo);
        OnnxBuilder::attr_float(n, "max", bd.hi);
        break;
      }
      case Clip::Initializers:
        b_.init(lo, {}, {bd.lo});
        b_.init(hi, {}, {bd.hi});
        b_.node("Clip", {in, lo, hi}, {out}, out);
        break;
      case Clip::ConstantNodes:
        OnnxBuilder::attr_tensor(b_.node("Constant", {}, {lo}), {}, {bd.lo});
        OnnxBuilder::attr_tensor(b_.node("Constant", {}, {hi}), {}, {bd.hi});
        b_.node("Clip", {in, lo, hi}, {out}, out);
        break;
      case Clip::Omitted:
        if (which == 0) {
          b_.init(hi, {}, {bd.hi});
          b_.node("Clip", {in, "", hi}, {out}, out);
        } else if (which == 1) {
          b_.init(lo, {}, {bd.lo});
          b_.node("Clip", {in, lo}, {out}, out);
        } else {
          b_.node("Clip", {in}, {out}, out);
        }
        break;
    }
  }

  // A no-op Cast and Identity on a computed tensor, when the form has them.
  std::string pass(const std::string& in) {
    if (ref_ || !f_.pass_through) return in;
    OnnxBuilder::attr_int(b_.node("Cast", {in}, {in + "_cast"}), "to", onnx::TensorProto::FLOAT);
    b_.node("Identity", {in + "_cast"}, {in + "_id"});
    return in + "_id";
  }

  void build() {
    b_.proto().set_producer_name(ref_ ? "mnv2-test" : "pytorch");
    b_.proto().set_producer_version(ref_ ? "" : "2.11.0+cu130");
    const bool dynamic = !ref_ && f_.dynamic_batch;
    b_.input("x", {dynamic ? -1 : 2, 3, kSide, kSide});
    if (dynamic)
      b_.proto()
          .mutable_graph()
          ->mutable_input(0)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->mutable_dim(0)
          ->set_dim_param("batch");

    conv("x", "stem", 3, 8, 3, 2, 1, 1);
    clip("stem", "a0", 0);
    conv(pass("a0"), "dw", 8, 8, 3, 1, 8, 3);
    clip("dw", "a1", 1);
    conv("a1", "project", 8, 8, 1, 1, 1, 5);
    b_.node("Add", {"project", "a0"}, {"res"}, "residual");
    conv("res", "head", 8, 16, 1, 1, 1, 7);
    clip("head", "a3", 2);
    const std::string features = pass("a3");

    // Pooling and flattening to N x 16.
    const Pool pool = ref_ ? Pool::GlobalAveragePool : f_.pool;
    const bool keep = ref_ || f_.keepdims;
    if (pool == Pool::GlobalAveragePool) {
      b_.node("GlobalAveragePool", {features}, {"pooled"}, "pool");
    } else if (pool == Pool::ReduceMeanAttribute) {
      auto& n = b_.node("ReduceMean", {features}, {"pooled"}, "pool");
      OnnxBuilder::attr_ints(n, "axes", {2, 3});
      OnnxBuilder::attr_int(n, "keepdims", keep ? 1 : 0);
    } else {
      b_.init_i64("mean_axes", {2}, {-1, -2});  // what torch.export writes: negative, last first
      auto& n = b_.node("ReduceMean", {features, "mean_axes"}, {"pooled"}, "pool");
      OnnxBuilder::attr_int(n, "keepdims", keep ? 1 : 0);
      OnnxBuilder::attr_int(n, "noop_with_empty_axes", 0);
    }
    std::string flat = "flat";
    switch (ref_ ? Flat::Flatten : f_.flat) {
      case Flat::Flatten:
        OnnxBuilder::attr_int(b_.node("Flatten", {"pooled"}, {flat}, "flatten"), "axis", 1);
        break;
      case Flat::ReshapeDeclaredBatch:
        b_.init_i64("flat_shape", {2}, {2, 16});
        OnnxBuilder::attr_int(b_.node("Reshape", {"pooled", "flat_shape"}, {flat}, "view"), "allowzero", 1);
        break;
      case Flat::ReshapeMinusOne:
        b_.init_i64("flat_shape", {2}, {-1, 16});
        OnnxBuilder::attr_int(b_.node("Reshape", {"pooled", "flat_shape"}, {flat}, "view"), "allowzero", 1);
        break;
      case Flat::Squeeze:
        b_.init_i64("squeeze_axes", {2}, {3, 2});
        b_.node("Squeeze", {"pooled", "squeeze_axes"}, {flat}, "squeeze");
        break;
      case Flat::None:
        flat = "pooled";
        break;
    }

    // The classifier 16 -> 5; the reference's C is the bias (zeros where the form has none).
    const Fc fc = ref_ ? Fc::GemmWithC : f_.fc;
    const std::vector<float> w = weights(5 * 16, 9);
    const bool has_bias = ref_ ? f_.fc != Fc::GemmWithoutC : fc != Fc::GemmWithoutC;
    const std::vector<float> bias = has_bias ? weights(5, 10) : std::vector<float>(5, 0.0f);
    if (fc == Fc::MatMulAdd) {
      std::vector<float> wt(16 * 5);  // MatMul takes [in, out]
      for (size_t o = 0; o < 5; ++o)
        for (size_t i = 0; i < 16; ++i) wt[i * 5 + o] = w[o * 16 + i];
      weight("fc_w", {16, 5}, wt);
      weight("fc_b", {5}, bias);
      b_.node("MatMul", {flat, "fc_w"}, {"mm"}, "fc");
      b_.node("Add", {"mm", "fc_b"}, {"logits"}, "fc_bias");
    } else {
      weight("fc_w", {5, 16}, w);
      std::vector<std::string> ins = {flat, "fc_w"};
      if (fc == Fc::GemmWithC) {
        weight("fc_b", {5}, bias);
        ins.push_back("fc_b");
      }
      auto& n = b_.node("Gemm", ins, {"logits"}, "fc");
      OnnxBuilder::attr_int(n, "transB", 1);
      if (!ref_) {  // torch.export writes every attribute
        OnnxBuilder::attr_float(n, "alpha", 1.0f);
        OnnxBuilder::attr_float(n, "beta", 1.0f);
        OnnxBuilder::attr_int(n, "transA", 0);
      }
    }
    b_.output("logits");
  }

  const Form& f_;
  bool ref_;
  OnnxBuilder b_;
};

Tensor run_cpu(const Model& m, int batch, uint64_t seed) {
  auto net = make_backend("cpu")->prepare(m, PrepareConfig{batch, kSide, kSide, Precision::fp32});
  return net->run(random_input(Shape{batch, 3, kSide, kSide}, seed));
}

bool newer_than_library(const Form& f) { return f.ir > 8 || f.opset > 17; }

class ExporterForms : public ::testing::TestWithParam<Form> {};

TEST_P(ExporterForms, LoadAndMatchTheExplicitForm) {
  const Form& f = GetParam();
  TempDir dir;
  const std::string path = Writer(f, false).save(dir, "model.onnx");
  TempDir ref_dir;
  const Model ref = load_onnx(Writer(f, true).save(ref_dir, "model.onnx"));
  Model m;
  try {
    m = load_onnx(path);
  } catch (const Error& e) {
    FAIL() << f.name << " refused: " << e.what();
  }

  // The same layers...
  ASSERT_EQ(m.layers.size(), ref.layers.size());
  for (size_t i = 0; i < m.layers.size(); ++i) {
    EXPECT_EQ(describe(m.layers[i]), describe(ref.layers[i])) << "layer " << i;
    EXPECT_EQ(m.layers[i].inputs, ref.layers[i].inputs) << "layer " << i;
    EXPECT_EQ(m.layers[i].weight, ref.layers[i].weight) << "layer " << i;
  }
  EXPECT_EQ(m.num_classes, 5);
  EXPECT_EQ(count_layers(m, LayerKind::GlobalAveragePool), 1);
  // ...and the same logits, at the declared batch and at another one.
  for (int batch : {2, 3}) {
    const Tensor a = run_cpu(m, batch, 11), b = run_cpu(ref, batch, 11);
    ASSERT_EQ(a.data.size(), b.data.size());
    std::vector<double> expected(b.data.begin(), b.data.end());
    EXPECT_LE(rel_l2(a.data, expected), 1e-6) << f.name << " at batch " << batch;
  }

  // The library's checker is skipped, and said to be, exactly for files newer than it knows.
  size_t skipped = 0;
  for (const std::string& w : m.warnings) skipped += w.find("checker was skipped") != std::string::npos;
  EXPECT_EQ(skipped, newer_than_library(f) ? 1u : 0u);
  EXPECT_EQ(m.file.checker_ran, !newer_than_library(f));
  EXPECT_EQ(m.file.ir_version, f.ir);
  EXPECT_EQ(m.file.opset, f.opset);
  EXPECT_EQ(m.file.producer_name, "pytorch");
  EXPECT_EQ(m.file.input_dims, (std::vector<std::string>{f.dynamic_batch ? "batch" : "2", "3", "16", "16"}));
  if (f.external != External::Inline) {
    EXPECT_FALSE(m.file.external_files.empty());
    EXPECT_GT(m.file.external_bytes, 0);
  } else {
    EXPECT_TRUE(m.file.external_files.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Forms, ExporterForms,
    ::testing::Values(
        Form{.name = "torch_export_default", .external = External::OneFile},
        Form{.name = "torch_export_opset18", .ir = 8, .opset = 18},
        Form{.name = "torch_export_opset23", .opset = 23, .external = External::ManyFiles},
        Form{.name = "torch_export_dynamic_batch", .flat = Flat::ReshapeMinusOne, .dynamic_batch = true},
        Form{.name = "reduce_mean_attribute_keepdims0",
             .ir = 7,
             .opset = 13,
             .pool = Pool::ReduceMeanAttribute,
             .keepdims = false,
             .flat = Flat::None,
             .fc = Fc::GemmWithC},
        Form{.name = "reduce_mean_input_keepdims0_matmul_add",
             .keepdims = false,
             .flat = Flat::None,
             .fc = Fc::MatMulAdd},
        Form{.name = "reduce_mean_squeeze", .ir = 9, .opset = 21, .flat = Flat::Squeeze, .fc = Fc::GemmWithC},
        Form{.name = "clip_attributes_opset10",
             .ir = 5,
             .opset = 10,
             .clip = Clip::Attributes,
             .pool = Pool::GlobalAveragePool,
             .flat = Flat::Flatten,
             .fc = Fc::GemmWithC},
        Form{.name = "torchscript_legacy_opset17",
             .ir = 8,
             .opset = 17,
             .clip = Clip::ConstantNodes,
             .pool = Pool::GlobalAveragePool,
             .flat = Flat::Flatten,
             .fc = Fc::GemmWithC},
        Form{.name = "clip_bounds_omitted", .clip = Clip::Omitted},
        Form{.name = "auto_pad_same_upper", .pads = Pads::SameUpper},
        Form{.name = "auto_pad_same_lower", .pads = Pads::SameLower},
        Form{.name = "auto_pad_valid", .pads = Pads::Valid},
        Form{.name = "float16_weights_cast", .weights = Weights::Float16Cast},
        Form{.name = "float16_weights_direct", .weights = Weights::Float16, .external = External::OneFile},
        Form{.name = "bfloat16_weights_cast", .weights = Weights::BFloat16Cast},
        Form{.name = "double_weights_cast_opset13",
             .ir = 7,
             .opset = 13,
             .pool = Pool::GlobalAveragePool,
             .flat = Flat::Flatten,
             .weights = Weights::DoubleCast},
        Form{.name = "cast_and_identity_pass_through", .pass_through = true},
        Form{.name = "external_many_files_float16",
             .fc = Fc::GemmWithC,
             .weights = Weights::Float16Cast,
             .external = External::ManyFiles}),
    [](const ::testing::TestParamInfo<Form>& info) { return std::string(info.param.name); });

// ---- versions ------------------------------------------------------------------------------------------

// Conv -> Relu -> GlobalAveragePool: valid in every opset 7..23.
OnnxBuilder tiny(int64_t opset, int64_t ir) {
  OnnxBuilder b(opset, ir);
  b.input("x", {-1, 2, 4, 4});
  b.conv("x", "c", 2, 3, 1);
  b.node("Relu", {"c"}, {"r"});
  b.node("GlobalAveragePool", {"r"}, {"p"});
  b.output("p");
  if (ir <= 3) {  // IR 3 lists every initializer as a graph input too
    b.input("c_w", {3, 2, 1, 1});
    b.input("c_b", {3});
  }
  return b;
}

std::string refusal(const std::string& path) {
  try {
    (void)load_onnx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExporterVersions, IrAndOpsetOutOfRangeAreRefusedByNumber) {
  struct Case {
    int64_t ir, opset;
    std::vector<std::string> parts;
  };
  for (const Case& c : {Case{2, 13, {"IR version 2 is not supported", "IR versions 3 to 11"}},
                        Case{12, 13, {"IR version 12 is not supported"}},
                        Case{7, 6, {"ai.onnx opset 6 is not supported", "opsets 7 to 23"}},
                        Case{10, 24, {"ai.onnx opset 24 is not supported"}}}) {
    SCOPED_TRACE("IR " + std::to_string(c.ir) + " opset " + std::to_string(c.opset));
    TempDir dir;
    const std::string path = dir.file("m.onnx");
    tiny(c.opset, c.ir).save(path);
    const std::string msg = refusal(path);
    ASSERT_FALSE(msg.empty()) << "loaded";
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const std::string& p : c.parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << "\nmissing: " << p;
  }
  // No IR version at all, and no default-domain operator set.
  TempDir dir;
  OnnxBuilder b = tiny(13, 7);
  b.proto().clear_ir_version();
  b.save(dir.file("no_ir.onnx"));
  EXPECT_NE(refusal(dir.file("no_ir.onnx")).find("no IR version"), std::string::npos);
  OnnxBuilder c = tiny(13, 7);
  c.proto().mutable_opset_import(0)->set_domain("com.example");
  c.save(dir.file("no_opset.onnx"));
  EXPECT_NE(refusal(dir.file("no_opset.onnx")).find("no default ONNX operator set"), std::string::npos);
}

TEST(ExporterVersions, EveryVersionInRangeLoads) {
  for (int64_t ir = 3; ir <= 11; ++ir) {
    for (int64_t opset : {7, 13, 17, 18, 23}) {
      SCOPED_TRACE("IR " + std::to_string(ir) + " opset " + std::to_string(opset));
      TempDir dir;
      tiny(opset, ir).save(dir.file("m.onnx"));
      const Model m = load_onnx(dir.file("m.onnx"));
      EXPECT_EQ(m.layers.size(), 3u);
      const bool newer = ir > 8 || opset > 17;
      EXPECT_EQ(m.file.checker_ran, !newer);
      EXPECT_EQ(m.warnings.size(), newer ? 1u : 0u);
    }
  }
}

TEST(ExporterVersions, CheckerWarningSaysWhatIsNewer) {
  TempDir dir;
  tiny(20, 10).save(dir.file("new.onnx"));
  const Model m = load_onnx(dir.file("new.onnx"));
  ASSERT_EQ(m.warnings.size(), 1u);
  for (const char* part : {"checker was skipped", "IR version 10 > 8", "ai.onnx opset 20 > 17", "own rules"})
    EXPECT_NE(m.warnings[0].find(part), std::string::npos) << m.warnings[0] << "\nmissing: " << part;
  EXPECT_NE(m.file.checker_note.find("skipped"), std::string::npos) << m.file.checker_note;

  // Only the IR version newer; only an operator set newer (of another domain the library knows, too).
  tiny(17, 9).save(dir.file("ir9.onnx"));
  const Model ir9 = load_onnx(dir.file("ir9.onnx"));
  ASSERT_EQ(ir9.warnings.size(), 1u);
  EXPECT_NE(ir9.warnings[0].find("IR version 9 > 8"), std::string::npos) << ir9.warnings[0];
  EXPECT_EQ(ir9.warnings[0].find("opset"), std::string::npos) << ir9.warnings[0];
  OnnxBuilder ml = tiny(13, 8);
  auto* o = ml.proto().add_opset_import();
  o->set_domain("ai.onnx.ml");
  o->set_version(5);
  ml.save(dir.file("ml.onnx"));
  const Model mlm = load_onnx(dir.file("ml.onnx"));
  ASSERT_EQ(mlm.warnings.size(), 1u);
  EXPECT_NE(mlm.warnings[0].find("ai.onnx.ml opset 5 > 3"), std::string::npos) << mlm.warnings[0];

  // Not newer: the checker ran and nothing is said.
  tiny(17, 8).save(dir.file("old.onnx"));
  const Model old = load_onnx(dir.file("old.onnx"));
  EXPECT_TRUE(old.warnings.empty());
  EXPECT_TRUE(old.file.checker_ran);
  EXPECT_NE(old.file.checker_note.find("passed"), std::string::npos) << old.file.checker_note;
}

// With the checker skipped, the importer's own checks refuse what the checker would have.
TEST(ExporterVersions, NodeChecksStandInForTheChecker) {
  struct Case {
    const char* what;
    std::function<void(OnnxBuilder&)> edit;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"a Clip attribute from before opset 11",
       [](OnnxBuilder& b) { OnnxBuilder::attr_float(b.node("Clip", {"c"}, {"y"}, "old_clip"), "min", 0.0f); },
       {"node 'old_clip' (Clip)", "attribute 'min' is not an attribute of Clip in opset 20"}},
      {"ReduceMean axes as an attribute in opset 20",
       [](OnnxBuilder& b) {
         OnnxBuilder::attr_ints(b.node("ReduceMean", {"c"}, {"y"}, "rm"), "axes", {2, 3});
       },
       {"node 'rm' (ReduceMean)", "attribute 'axes'"}},
      {"a misspelt attribute",
       [](OnnxBuilder& b) { OnnxBuilder::attr_int(b.node("Relu", {"c"}, {"y"}, "relu"), "alpha", 1); },
       {"node 'relu' (Relu)", "attribute 'alpha' is not an attribute of Relu"}},
      {"an attribute given twice",
       [](OnnxBuilder& b) {
         auto& n = b.node("Flatten", {"c"}, {"y"}, "flat2");
         OnnxBuilder::attr_int(n, "axis", 1);
         OnnxBuilder::attr_int(n, "axis", 1);
       },
       {"node 'flat2' (Flatten)", "attribute 'axis' is given twice"}},
      {"too many inputs",
       [](OnnxBuilder& b) {
         b.init("k", {1}, {1.0f});
         b.node("Relu", {"c", "k"}, {"y"}, "relu2");
       },
       {"node 'relu2' (Relu)", "has 2 inputs", "takes 1"}},
      {"a reduction over the channels",
       [](OnnxBuilder& b) {
         b.init_i64("axes", {1}, {1});
         b.node("ReduceMean", {"c", "axes"}, {"y"}, "rm_c");
       },
       {"node 'rm_c' (ReduceMean)", "axes [1]", "spatial axes [2, 3]"}},
      {"a reduction over everything",
       [](OnnxBuilder& b) { b.node("ReduceMean", {"c"}, {"y"}, "rm_all"); },
       {"node 'rm_all' (ReduceMean)", "every axis"}},
      {"a Cast of a computed tensor to float16",
       [](OnnxBuilder& b) {
         OnnxBuilder::attr_int(b.node("Cast", {"c"}, {"y"}, "to_half"), "to", onnx::TensorProto::FLOAT16);
       },
       {"node 'to_half' (Cast)", "FLOAT16", "only a Cast to FLOAT"}},
      {"a Reshape to another batch than the declared one",
       [](OnnxBuilder& b) {
         b.node("GlobalAveragePool", {"c"}, {"p"});
         b.init_i64("shape", {2}, {3, 3});
         b.node("Reshape", {"p", "shape"}, {"y"}, "view3");
       },
       {"node 'view3' (Reshape)", "reshape to [3, 3]"}},
      {"a Reshape with allowzero=1 to a zero batch",
       [](OnnxBuilder& b) {
         b.node("GlobalAveragePool", {"c"}, {"p"});
         b.init_i64("shape", {2}, {0, -1});
         OnnxBuilder::attr_int(b.node("Reshape", {"p", "shape"}, {"y"}, "view0"), "allowzero", 1);
       },
       {"node 'view0' (Reshape)", "reshape to [0, -1] is not supported"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir dir;
    OnnxBuilder b(20, 10);
    b.input("x", {2, 2, 4, 4});
    b.conv("x", "c", 2, 3, 1);
    c.edit(b);
    b.output("y");
    const std::string path = dir.file("m.onnx");
    b.save(path);
    const std::string msg = refusal(path);
    ASSERT_FALSE(msg.empty()) << "loaded";
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const std::string& p : c.parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << "\nmissing: " << p;
  }
}

TEST(ExporterOps, ReduceMeanNoopWithEmptyAxesIsTheIdentity) {
  TempDir dir;
  OnnxBuilder b(18, 8);
  b.input("x", {-1, 2, 4, 4});
  b.conv("x", "c", 2, 3, 1);
  OnnxBuilder::attr_int(b.node("ReduceMean", {"c"}, {"same"}, "noop"), "noop_with_empty_axes", 1);
  b.node("GlobalAveragePool", {"same"}, {"p"});
  b.output("p");
  b.save(dir.file("m.onnx"));
  const Model m = load_onnx(dir.file("m.onnx"));
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[1].kind, LayerKind::GlobalAveragePool);
  EXPECT_EQ(m.layers[1].inputs, std::vector<int>{0});
}

TEST(ExporterOps, CastOfConstantsIsFoldedAtLoad) {
  TempDir dir;
  OnnxBuilder b(20, 10);
  b.input("x", {-1, 2, 4, 4});
  b.conv("x", "c", 2, 3, 1);
  // An int64 bound cast to float; a float bound cast to float16 (0.1 rounds to 0.0999755859375) and back.
  b.init_i64("six_i", {}, {6});
  OnnxBuilder::attr_int(b.node("Cast", {"six_i"}, {"six"}), "to", onnx::TensorProto::FLOAT);
  b.init("tenth", {}, {0.1f});
  OnnxBuilder::attr_int(b.node("Cast", {"tenth"}, {"tenth_h"}), "to", onnx::TensorProto::FLOAT16);
  OnnxBuilder::attr_int(b.node("Cast", {"tenth_h"}, {"tenth_f"}), "to", onnx::TensorProto::FLOAT);
  b.node("Clip", {"c", "tenth_f", "six"}, {"y"}, "clip");
  // A float bound truncated to an integer and back: -2.7 -> -2.
  b.init("m27", {}, {-2.7f});
  OnnxBuilder::attr_int(b.node("Cast", {"m27"}, {"m2_i"}), "to", onnx::TensorProto::INT64);
  OnnxBuilder::attr_int(b.node("Cast", {"m2_i"}, {"m2"}), "to", onnx::TensorProto::FLOAT);
  b.node("Clip", {"y", "m2"}, {"z"}, "clip2");
  b.output("z");
  b.save(dir.file("m.onnx"));
  const Model m = load_onnx(dir.file("m.onnx"));
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(m.layers[1].clip_min, 0.0999755859375f);
  EXPECT_EQ(m.layers[1].clip_max, 6.0f);
  EXPECT_EQ(m.layers[2].clip_min, -2.0f);
}

// 16-bit and double initializers decode exactly, subnormal, negative, raw and typed (int32_data) alike.
TEST(ExporterOps, SixteenBitAndDoubleInitializersDecode) {
  struct Case {
    int32_t type;
    std::vector<uint16_t> bits;
    std::vector<float> values;
  };
  const std::vector<Case> cases = {
      {onnx::TensorProto::FLOAT16,
       {0x3c00, 0xc000, 0x3555, 0x0001, 0x8200, 0x7bff},
       {1.0f, -2.0f, 0.333251953125f, 5.9604644775390625e-08f, -3.0517578125e-05f, 65504.0f}},
      {onnx::TensorProto::BFLOAT16,
       {0x3f80, 0xc000, 0x3eab, 0x0001, 0x8200, 0x7f7f},
       {1.0f, -2.0f, 0.333984375f, std::ldexp(1.0f, -133), -std::ldexp(1.0f, -123), 3.3895313892515355e+38f}},
  };
  for (const Case& c : cases) {
    for (bool raw : {true, false}) {
      SCOPED_TRACE(std::string(c.type == onnx::TensorProto::FLOAT16 ? "float16" : "bfloat16") +
                   (raw ? " raw" : " int32_data"));
      TempDir dir;
      OnnxBuilder b(20, 10);
      b.input("x", {-1, 1, 2, 2});
      std::string bytes(c.bits.size() * 2, '\0');
      std::memcpy(bytes.data(), c.bits.data(), bytes.size());
      auto& w = b.init_raw("w", {6, 1, 1, 1}, c.type, bytes);
      if (!raw) {
        // int32_data beside raw_data set to no bytes (some writers emit both): issue 30 saw "has 0 bytes of data".
        w.set_raw_data("");
        for (uint16_t v : c.bits) w.add_int32_data(v);
      }
      b.node("Conv", {"x", "w"}, {"y"}, "conv");
      b.output("y");
      b.save(dir.file("m.onnx"));
      const Model m = load_onnx(dir.file("m.onnx"));
      ASSERT_EQ(m.layers.at(0).weight.size(), c.values.size());
      for (size_t i = 0; i < c.values.size(); ++i) EXPECT_EQ(m.layers[0].weight[i], c.values[i]) << i;
    }
  }
  // Doubles round to the nearest float.
  TempDir dir;
  OnnxBuilder b(20, 10);
  b.input("x", {-1, 1, 2, 2});
  const std::vector<double> d = {0.1, -1e-3, 3.0};
  std::string bytes(d.size() * 8, '\0');
  std::memcpy(bytes.data(), d.data(), bytes.size());
  b.init_raw("w", {3, 1, 1, 1}, onnx::TensorProto::DOUBLE, bytes);
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output("y");
  b.save(dir.file("m.onnx"));
  const Model m = load_onnx(dir.file("m.onnx"));
  EXPECT_EQ(m.layers.at(0).weight, (std::vector<float>{0.1f, -1e-3f, 3.0f}));
}

TEST(ExporterOps, SameLowerAtAnotherSizeIsRefusedByAnalyse) {
  TempDir dir;
  OnnxBuilder b(20, 10);
  b.input("x", {1, 2, 8, 8});
  b.init("w", {3, 2, 3, 3}, ramp(54));
  auto& n = b.node("Conv", {"x", "w"}, {"y"}, "same_lower");
  OnnxBuilder::attr_ints(n, "strides", {2, 2});
  OnnxBuilder::attr_string(n, "auto_pad", "SAME_LOWER");
  b.output("y");
  b.save(dir.file("m.onnx"));
  const Model m = load_onnx(dir.file("m.onnx"));
  const ConvParams& p = m.layers.at(0).conv;
  EXPECT_EQ((std::vector<int>{p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}), (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(p.auto_pad, AutoPad::SameLower);
  EXPECT_EQ(analyse(m, 1, 8, 8)[0].output, (Shape{1, 3, 4, 4}));
  EXPECT_EQ(analyse(m, 4, 16, 12)[0].output, (Shape{4, 3, 8, 6}));
  EXPECT_THROW((void)analyse(m, 1, 9, 8), Error);
  // The cpu backend prepares through the same check.
  EXPECT_THROW((void)make_backend("cpu")->prepare(m, PrepareConfig{1, 8, 9, Precision::fp32}), Error);
}

// Two exports with the same graph file and different weights in the external file: the same .onnx checksum
// (SHA-256 of its bytes), different checksums of their external data files (SHA-256 of each whole file).
TEST(ExporterOps, ChecksumCoversExternalData) {
  TempDir a, b;
  for (const TempDir* d : {&a, &b}) {
    OnnxBuilder m(20, 10);
    m.input("x", {-1, 2, 4, 4});
    m.init("w", {3, 2, 1, 1}, d == &a ? ramp(6) : ramp(6, 0.2f));
    m.node("Conv", {"x", "w"}, {"y"}, "conv");
    m.output("y");
    m.externalize("w", "weights.bin");
    m.save(d->file("m.onnx"));
  }
  ASSERT_EQ(read_file(a.file("m.onnx")), read_file(b.file("m.onnx")));
  const Model ma = load_onnx(a.file("m.onnx")), mb = load_onnx(b.file("m.onnx"));
  EXPECT_EQ(ma.checksum, mb.checksum);
  EXPECT_EQ(ma.checksum, "sha256:" + sha256_hex(read_file(a.file("m.onnx"))));
  ASSERT_EQ(ma.file.external_files.size(), 1u);
  ASSERT_EQ(mb.file.external_files.size(), 1u);
  EXPECT_EQ(ma.file.external_files[0].location, "weights.bin");
  EXPECT_EQ(ma.file.external_files[0].checksum, "sha256:" + sha256_hex(read_file(a.file("weights.bin"))));
  EXPECT_NE(ma.file.external_files[0].checksum, mb.file.external_files[0].checksum);
  EXPECT_EQ(ma.file.external_bytes, 24);
}

}  // namespace
}  // namespace mnv2::test
