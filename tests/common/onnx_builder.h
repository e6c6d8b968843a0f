// Small ONNX models built in memory for the robustness tests and the fuzz seeds: a few lines per node.
// Header-only, so programs outside mnv2_test_common (the seed generator) can use it too.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/model.h"

namespace mnv2::test {

// The locations of the external data files a model read, in the order first used.
inline std::vector<std::string> external_locations(const Model& m) {
  std::vector<std::string> out;
  for (const ExternalDataFile& f : m.file.external_files) out.push_back(f.location);
  return out;
}

// Deterministic, distinct values for weights.
inline std::vector<float> ramp(size_t n, float scale = 0.1f, float offset = -0.3f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>((i * 7) % 13);
  return v;
}

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 13, int64_t ir_version = 7) {
    m_.set_ir_version(ir_version);
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
  // An initializer of any type from its little-endian bytes (FLOAT16 and BFLOAT16: two per value).
  onnx::TensorProto& init_raw(const std::string& name, const std::vector<int64_t>& dims, int32_t type,
                              const std::string& bytes) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(bytes);
    return *t;
  }
  onnx::TensorProto* find_init(const std::string& name) {
    for (auto& t : *m_.mutable_graph()->mutable_initializer())
      if (t.name() == name) return &t;
    return nullptr;
  }
  // Sets a tensor's external_data entries as given (no checks: the hostile-file tests use this directly).
  static void external_entries(onnx::TensorProto& t, const std::vector<std::pair<std::string, std::string>>& entries) {
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : entries) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
  }
  // Moves a tensor's data into the external file `location` (relative to the model's folder), appended at
  // its end, with offset and (unless !with_length) length entries, as exporters with external data do;
  // save() writes the files beside the model.
  void externalize(onnx::TensorProto& t, const std::string& location, bool with_length = true) {
    std::string bytes = t.raw_data();
    if (!t.has_raw_data()) {
      if (t.data_type() != onnx::TensorProto::FLOAT) throw std::runtime_error("externalize: raw data or FLOAT");
      bytes.resize(static_cast<size_t>(t.float_data_size()) * sizeof(float));
      if (!bytes.empty()) std::memcpy(bytes.data(), t.float_data().data(), bytes.size());
    }
    std::string& file = external_[location];
    std::vector<std::pair<std::string, std::string>> entries = {{"location", location},
                                                                {"offset", std::to_string(file.size())}};
    if (with_length) entries.emplace_back("length", std::to_string(bytes.size()));
    file += bytes;
    t.clear_float_data();
    t.clear_raw_data();
    external_entries(t, entries);
  }
  OnnxBuilder& externalize(const std::string& name, const std::string& location, bool with_length = true) {
    onnx::TensorProto* t = find_init(name);
    if (!t) throw std::runtime_error("externalize: no initializer '" + name + "'");
    externalize(*t, location, with_length);
    return *this;
  }
  const std::map<std::string, std::string>& external_files() const { return external_; }

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
  static void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  // A Constant's "value" tensor; returned so that a test can move it to external data.
  static onnx::TensorProto& attr_tensor(onnx::NodeProto& n, const std::vector<int64_t>& dims,
                                        const std::vector<float>& v) {
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *t;
  }

  onnx::ModelProto& proto() { return m_; }
  std::string bytes() const {
    std::string s;
    if (!m_.SerializeToString(&s)) throw std::runtime_error("cannot serialise the ONNX model");
    return s;
  }
  // Writes the model, and its external data files (see externalize()) into the model's folder.
  void save(const std::string& path) const {
    write(path, bytes());
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    for (const auto& [location, data] : external_) {
      const std::filesystem::path file = folder / location;
      std::filesystem::create_directories(file.parent_path());
      write(file.string(), data);
    }
  }

 private:
  static onnx::TypeProto_Tensor* value_info(onnx::ValueInfoProto* vi, const std::string& name, int32_t type) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    return tt;
  }
  static void write(const std::string& path, const std::string& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
  }

  onnx::ModelProto m_;
  std::map<std::string, std::string> external_;  // external data file contents by location
};

// A three-layer network built in code (conv 3×3 2→3 channels, ReLU6, global pool) on a 2×4×4 input, for reports
// small enough to profile in a test: a network other than MobileNetV2.
inline Model three_layer_model() {
  Model m;
  m.input_channels = 2;
  m.input_height = m.input_width = 4;
  Layer c;
  c.kind = LayerKind::Conv2d;
  c.inputs = {kNetworkInput};
  c.conv.in_channels = 2;
  c.conv.out_channels = 3;
  c.conv.kernel_h = c.conv.kernel_w = 3;
  c.conv.pad_top = c.conv.pad_left = c.conv.pad_bottom = c.conv.pad_right = 1;
  c.weight = ramp(54);
  c.bias = ramp(3);
  Layer r;
  r.index = 1;
  r.kind = LayerKind::ReLU6;
  r.inputs = {0};
  Layer p;
  p.index = 2;
  p.kind = LayerKind::GlobalAveragePool;
  p.inputs = {1};
  m.layers = {c, r, p};
  m.num_classes = 3;
  m.source = "tiny.onnx";
  assign_blocks_and_names(m);
  return m;
}

// Finite weights that overflow float when run: an 8x8 RGB input, conv c1 (weights 0.1, bias 0), conv c2 with
// weights of 1e38 (layer 1's output is the first non-finite one), and a classifier of `classes` outputs.
inline OnnxBuilder overflowing_classifier(int classes) {
  OnnxBuilder b;
  b.input("x", {-1, 3, 8, 8});
  b.conv("x", "c1", 3, 4, 3, 1, 1);
  b.conv("c1", "c2", 4, 4, 1);
  b.classifier("c2", 4, classes);
  for (auto& t : *b.proto().mutable_graph()->mutable_initializer())
    if (t.name() == "c1_w" || t.name() == "c2_w" || t.name() == "c1_b")
      for (int i = 0; i < t.float_data_size(); ++i)
        t.set_float_data(i, t.name() == "c1_w" ? 0.1f : t.name() == "c2_w" ? 1e38f : 0.0f);
  return b;
}

}  // namespace mnv2::test
