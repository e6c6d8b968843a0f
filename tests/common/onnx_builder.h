// Small ONNX models built in memory for the robustness tests and the fuzz seeds: a few lines per node.
// Header-only, so programs outside mnv2_test_common (the seed generator) can use it too.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mnv2::test {

// Deterministic, distinct values for weights.
inline std::vector<float> ramp(size_t n, float scale = 0.1f, float offset = -0.3f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>((i * 7) % 13);
  return v;
}

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 13) {
    m_.set_ir_version(7);
    m_.set_producer_name("mnv2-test");
    auto* op = m_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m_.mutable_graph()->set_name("test");
  }

  // dims: -1 is the symbolic batch "N", -2 an open spatial size.
  OnnxBuilder& input(const std::string& name, const std::vector<int64_t>& dims,
                     int32_t type = onnx::TensorProto::FLOAT) {
    auto* tt = value_info(m_.mutable_graph()->add_input(), name, type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d == -1)
        dim->set_dim_param("N");
      else if (d == -2)
        dim->set_dim_param("S" + std::to_string(shape->dim_size()));
      else
        dim->set_dim_value(d);
    }
    return *this;
  }
  OnnxBuilder& output(const std::string& name) {
    value_info(m_.mutable_graph()->add_output(), name, onnx::TensorProto::FLOAT)->mutable_shape();
    return *this;
  }
  onnx::TensorProto& init(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v,
                          bool raw = false) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    if (raw) {
      std::string bytes(v.size() * sizeof(float), '\0');
      if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
      t->set_raw_data(bytes);
    } else {
      for (float x : v) t->add_float_data(x);
    }
    return *t;
  }
  onnx::TensorProto& init_double(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<double>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::DOUBLE);
    for (int64_t d : dims) t->add_dims(d);
    for (double x : v) t->add_double_data(x);
    return *t;
  }
  onnx::TensorProto& init_i64(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    return *t;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? out.at(0) + "_node" : name);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return *n;
  }
  // Conv named `out` with initializers "<out>_w" and (unless !bias) "<out>_b", weights from ramp().
  onnx::NodeProto& conv(const std::string& in, const std::string& out, int64_t cin, int64_t cout, int64_t k,
                        int64_t stride = 1, int64_t pad = 0, int64_t group = 1, bool bias = true) {
    init(out + "_w", {cout, cin / group, k, k}, ramp(static_cast<size_t>(cout * (cin / group) * k * k)));
    std::vector<std::string> ins = {in, out + "_w"};
    if (bias) {
      init(out + "_b", {cout}, ramp(static_cast<size_t>(cout), 0.05f, 0.1f));
      ins.push_back(out + "_b");
    }
    auto& n = node("Conv", ins, {out}, out);
    attr_ints(n, "kernel_shape", {k, k});
    attr_ints(n, "strides", {stride, stride});
    attr_ints(n, "pads", {pad, pad, pad, pad});
    attr_int(n, "group", group);
    return n;
  }
  // GlobalAveragePool, Flatten and Gemm (transB) from `in` (channels) to `classes`, output "logits".
  void classifier(const std::string& in, int64_t channels, int64_t classes) {
    node("GlobalAveragePool", {in}, {"pooled"});
    attr_int(node("Flatten", {"pooled"}, {"flat"}), "axis", 1);
    init("fc_w", {classes, channels}, ramp(static_cast<size_t>(classes * channels)));
    init("fc_b", {classes}, ramp(static_cast<size_t>(classes), 0.02f));
    attr_int(node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}, "fc"), "transB", 1);
    output("logits");
  }

  static void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  onnx::ModelProto& proto() { return m_; }
  std::string bytes() const {
    std::string s;
    if (!m_.SerializeToString(&s)) throw std::runtime_error("cannot serialise the ONNX model");
    return s;
  }
  void save(const std::string& path) const {
    const std::string b = bytes();
    std::ofstream out(path, std::ios::binary);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
  }

 private:
  static onnx::TypeProto_Tensor* value_info(onnx::ValueInfoProto* vi, const std::string& name, int32_t type) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    return tt;
  }
  onnx::ModelProto m_;
};

}  // namespace mnv2::test
