// A real export of PyTorch 2.11's default exporter (torch.export: IR 10, opset 20, weights in an external
// .onnx.data file; see tests/data/pytorch_export/README.md) against PyTorch's own float64 logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/labels.h"
#include "mnv2/model.h"
#include "mnv2/model_summary.h"
#include "mnv2/tensor.h"
#include "test_support.h"
#include "util/sha256.h"

namespace mnv2::test {
namespace {

constexpr int kBatch = 2, kSide = 96, kClasses = 10;

std::string export_path(const std::string& suffix) {
  return std::string(MNV2_TEST_DATA_DIR) + "/pytorch_export/tv_w035_96_c10_default" + suffix;
}

std::vector<double> read_f64(const std::string& path, size_t count) {
  const std::string bytes = read_file(path);
  if (bytes.size() != count * sizeof(double)) throw std::runtime_error(path + ": unexpected size");
  std::vector<double> v(count);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// Indices of the k largest, ties by lower index.
std::vector<int> top_indices(const std::vector<double>& v, int k) {
  std::vector<int> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v[a] > v[b]; });
  order.resize(static_cast<size_t>(k));
  return order;
}

TEST(PytorchExport, LoadsAsTheNinetyNineLayerTopology) {
  const Model m = load_onnx(export_path(".onnx"));
  EXPECT_EQ(m.layers.size(), 99u);
  EXPECT_EQ(count_layers(m, LayerKind::Conv2d), 52);
  EXPECT_EQ(count_layers(m, LayerKind::ReLU6), 35);
  EXPECT_EQ(count_layers(m, LayerKind::ResidualAdd), 10);
  EXPECT_EQ(count_layers(m, LayerKind::GlobalAveragePool), 1);
  EXPECT_EQ(count_layers(m, LayerKind::Linear), 1);
  EXPECT_EQ(m.num_blocks, 17);
  EXPECT_EQ(m.num_classes, kClasses);
  EXPECT_EQ(m.input_height, kSide);
  EXPECT_EQ(m.file.ir_version, 10);
  EXPECT_EQ(m.file.opset, 20);
  EXPECT_EQ(m.file.producer_name, "pytorch");
  EXPECT_EQ(m.file.input_name, "x");
  EXPECT_EQ(m.file.input_dims, (std::vector<std::string>{"2", "3", "96", "96"}));
  ASSERT_EQ(m.file.external_files.size(), 1u);
  EXPECT_EQ(m.file.external_files[0].location, "tv_w035_96_c10_default.onnx.data");
  EXPECT_EQ(m.file.external_files[0].checksum, "sha256:" + sha256_hex(read_file(export_path(".onnx.data"))));
  EXPECT_EQ(m.file.external_bytes, 1604544);
  EXPECT_FALSE(m.file.checker_ran);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("checker was skipped"), std::string::npos) << m.warnings[0];
}

TEST(PytorchExport, CpuLogitsMatchPytorchFloat64) {
  const Model m = load_onnx(export_path(".onnx"));
  const Tensor input = read_tensor_file(export_path(".input.f32"), Shape{kBatch, 3, kSide, kSide});
  const std::vector<double> ref = read_f64(export_path(".logits.f64"), kBatch * kClasses);
  auto net = make_backend("cpu")->prepare(m, PrepareConfig{kBatch, kSide, kSide, Precision::fp32});
  const Tensor logits = net->run(input);
  ASSERT_EQ(logits.data.size(), ref.size());
  const double err = rel_l2(logits.data, ref);
  std::printf("[ pytorch  ] tv_w035_96_c10_default: cpu vs PyTorch float64 relative L2 %.3e\n", err);
  EXPECT_LE(err, 1e-5);
  for (int n = 0; n < kBatch; ++n) {
    const std::vector<double> want(ref.begin() + n * kClasses, ref.begin() + (n + 1) * kClasses);
    const auto got = top_k(logits.data.data() + n * kClasses, kClasses, 5, builtin_labels(kClasses));
    std::vector<int> got_idx;
    for (const auto& p : got) got_idx.push_back(p.index);
    EXPECT_EQ(got_idx, top_indices(want, 5)) << "image " << n;
  }

  // The file reshapes to [2, 1280] (the batch it was exported at); any batch runs, one image alone gives
  // the same logits as in the pair.
  auto single = make_backend("cpu")->prepare(m, PrepareConfig{1, kSide, kSide, Precision::fp32});
  Tensor second(Shape{1, 3, kSide, kSide});
  std::copy(input.data.begin() + static_cast<std::ptrdiff_t>(input.data.size() / 2), input.data.end(),
            second.data.begin());
  const Tensor alone = single->run(second);
  const std::vector<double> pair_row(logits.data.begin() + kClasses, logits.data.end());
  EXPECT_LE(rel_l2(alone.data, pair_row), 1e-6);
}

// What `mnv2 info` and the app's Topology header show for it.
TEST(PytorchExport, SummaryRowsAndJson) {
  const Model m = load_onnx(export_path(".onnx"));
  const std::string labels = labels_source(m.num_classes);
  const auto rows = model_summary_rows(m, labels);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"format", "ONNX IR 10, opset 20"},
      {"producer", "pytorch 2.11.0+cu130"},
      {"input", "x [2, 3, 96, 96]"},
      {"classes", "10"},
      {"labels", "generated names 'class 0'..'class 9' (no built-in list has 10 classes)"},
      {"checker", m.file.checker_note},
      {"sha256", m.checksum.substr(7) + "  " + export_path(".onnx")},
      {"external data", "tv_w035_96_c10_default.onnx.data (1604544 bytes read)"},
      {"sha256", m.file.external_files.at(0).checksum.substr(7) + "  " + export_path(".onnx.data")}};
  EXPECT_EQ(rows, want);
  EXPECT_EQ(m.file.checker_note.rfind("skipped: ", 0), 0u) << m.file.checker_note;

  const json::Json j = model_summary_json(m, labels);
  EXPECT_EQ(j.at("ir_version").get<int64_t>(), 10);
  EXPECT_EQ(j.at("opset").get<int64_t>(), 20);
  EXPECT_EQ(j.at("producer_name").get<std::string>(), "pytorch");
  EXPECT_EQ(j.at("input").at("name").get<std::string>(), "x");
  EXPECT_EQ(j.at("input").at("shape").at(2).get<int64_t>(), 96);
  EXPECT_FALSE(j.at("checker").at("ran").get<bool>());
  EXPECT_EQ(j.at("external_data").at("bytes").get<int64_t>(), 1604544);

  // Symbolic dimensions are shown by name; the built-in model says it has no file.
  EXPECT_EQ(format_input_shape({"batch", "3", "224", "?"}), "[batch, 3, 224, ?]");
  const Model builtin = builtin_mobilenet_v2();
  const auto b = model_summary_rows(builtin, labels_source(builtin.num_classes));
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b[0], (std::pair<std::string, std::string>{"format", "built-in topology (no file)"}));
  EXPECT_TRUE(model_summary_json(builtin, "").at("ir_version").is_null());
}

}  // namespace
}  // namespace mnv2::test
