// Writes the fuzzers' seed corpora: tiny valid ONNX models (and a truncated one), tiny images of every
// pixel format the loader converts, and a small valid report. Usage: mnv2_fuzz_seeds DIR (writes
// DIR/onnx_import, DIR/image_decode, DIR/report_reader). The seeds in tests/fuzz/corpus came from it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "mnv2/bench.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "onnx_builder.h"

namespace {

namespace fs = std::filesystem;

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

using mnv2::test::OnnxBuilder;
using mnv2::test::ramp;

void conv_raw(OnnxBuilder& g, const std::string& in, const std::string& out, int64_t cin, int64_t cout, int64_t k) {
  g.init(out + "_w", {cout, cin, k, k}, ramp(static_cast<size_t>(cout * cin * k * k)), /*raw=*/true);
  g.init(out + "_b", {cout}, ramp(static_cast<size_t>(cout)), /*raw=*/true);
  auto& n = g.node("Conv", {in, out + "_w", out + "_b"}, {out});
  OnnxBuilder::attr_ints(n, "kernel_shape", {k, k});
  OnnxBuilder::attr_ints(n, "pads", {1, 1, 1, 1});
}

// Stem conv + BatchNorm + ReLU6, one inverted-residual block (depthwise, projection, residual add), then
// the classifier: GlobalAveragePool, Flatten, Gemm, Softmax. Every op MobileNetV2 uses, at 8x8.
std::string mobilenet_like() {
  OnnxBuilder g(13);
  g.input("x", {-1, 3, 8, 8});
  g.conv("x", "stem", 3, 4, 3, 2, 1, 1);
  g.init("bn_s", {4}, {1.0f, 0.5f, 2.0f, 1.5f});
  g.init("bn_b", {4}, {0.1f, 0.0f, -0.1f, 0.2f});
  g.init("bn_m", {4}, {0.0f, 0.1f, 0.2f, 0.3f});
  g.init("bn_v", {4}, {1.0f, 2.0f, 0.5f, 1.0f});
  g.node("BatchNormalization", {"stem", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"});
  g.init("lo", {}, {0.0f});
  g.init("hi", {}, {6.0f});
  g.node("Clip", {"bn", "lo", "hi"}, {"act"});
  g.conv("act", "dw", 4, 4, 3, 1, 1, 4);
  g.node("Relu", {"dw"}, {"dw_act"});
  g.conv("dw_act", "project", 4, 4, 1, 1, 0, 1);
  g.node("Add", {"project", "act"}, {"sum"});
  g.node("GlobalAveragePool", {"sum"}, {"pool"});
  OnnxBuilder::attr_int(g.node("Flatten", {"pool"}, {"flat"}), "axis", 1);
  g.init("fc_w", {5, 4}, ramp(20));
  g.init("fc_b", {5}, ramp(5));
  OnnxBuilder::attr_int(g.node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}), "transB", 1);
  g.node("Softmax", {"logits"}, {"prob"});
  g.output("prob");
  return g.bytes();
}

// The export style with a computed reshape (Shape, Gather, Unsqueeze, Concat) and MatMul + Add, raw data.
std::string reshape_style() {
  OnnxBuilder g(13);
  g.input("x", {-1, 2, 6, 6});
  conv_raw(g, "x", "c", 2, 3, 3);
  g.node("GlobalAveragePool", {"c"}, {"p"});
  g.node("Shape", {"p"}, {"shape"});
  g.init_i64("zero", {}, {0});
  g.node("Gather", {"shape", "zero"}, {"batch"});
  g.init_i64("axes", {1}, {0});
  g.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  g.init_i64("rest", {1}, {-1});
  OnnxBuilder::attr_int(g.node("Concat", {"batch1", "rest"}, {"target"}), "axis", 0);
  g.node("Reshape", {"p", "target"}, {"flat"});
  g.init("w", {3, 2}, ramp(6), true);
  g.node("MatMul", {"flat", "w"}, {"mm"});
  g.init("b", {2}, {0.5f, -0.5f}, true);
  g.node("Add", {"mm", "b"}, {"y"});
  g.output("y");
  return g.bytes();
}

// Opset 11: fixed input size, AveragePool over the whole map, Squeeze, Dropout and Identity pass-throughs.
std::string opset11_pool() {
  OnnxBuilder g(11);
  g.input("x", {1, 1, 5, 5});
  g.conv("x", "c", 1, 2, 2, 1, 0, 1);
  g.node("Identity", {"c"}, {"c_id"});
  OnnxBuilder::attr_ints(g.node("AveragePool", {"c_id"}, {"p"}), "kernel_shape", {4, 4});
  OnnxBuilder::attr_ints(g.node("Squeeze", {"p"}, {"s"}), "axes", {2, 3});
  g.node("Dropout", {"s"}, {"d"});
  g.init("w", {2, 3}, ramp(6));
  g.node("MatMul", {"d", "w"}, {"y"});
  g.output("y");
  return g.bytes();
}

// PyTorch 2.11's default export style: IR 10, opset 20, Clip bounds as initializers, ReduceMean with axes as
// an input, Reshape with allowzero to the declared batch, Gemm without C, a float16 weight behind a Cast.
std::string torch_export_style() {
  OnnxBuilder g(20, 10);
  g.input("x", {2, 3, 8, 8});
  OnnxBuilder::attr_string(g.conv("x", "stem", 3, 4, 3, 2, 1, 1), "auto_pad", "NOTSET");
  g.init("lo", {}, {0.0f});
  g.init("hi", {}, {6.0f});
  g.node("Clip", {"stem", "lo", "hi"}, {"act"});
  const uint16_t half[8] = {0x3c00, 0xb800, 0x3400, 0x3a00, 0xbc00, 0x3800, 0x2e66, 0xb266};  // 4 x 2 weights
  g.init_raw("proj_w16", {2, 4, 1, 1}, onnx::TensorProto::FLOAT16,
             std::string(reinterpret_cast<const char*>(half), 16));
  OnnxBuilder::attr_int(g.node("Cast", {"proj_w16"}, {"proj_w"}), "to", onnx::TensorProto::FLOAT);
  g.node("Conv", {"act", "proj_w"}, {"proj"});
  g.init_i64("axes", {2}, {-1, -2});
  auto& mean = g.node("ReduceMean", {"proj", "axes"}, {"mean"});
  OnnxBuilder::attr_int(mean, "keepdims", 1);
  OnnxBuilder::attr_int(mean, "noop_with_empty_axes", 0);
  g.init_i64("shape", {2}, {2, 2});
  OnnxBuilder::attr_int(g.node("Reshape", {"mean", "shape"}, {"flat"}), "allowzero", 1);
  g.init("fc_w", {3, 2}, ramp(6));
  OnnxBuilder::attr_int(g.node("Gemm", {"flat", "fc_w"}, {"logits"}), "transB", 1);
  g.output("logits");
  return g.bytes();
}

// Weights in external data: the fuzz entry point resolves locations in its scratch folder, which holds
// kScratchDataFile (float32 0, 1/1024, 2/1024, ...); this model reads two ranges of it.
std::string external_data() {
  OnnxBuilder g(20, 10);
  g.input("x", {-1, 2, 4, 4});
  g.init("w", {3, 2, 1, 1}, {});
  OnnxBuilder::external_entries(*g.find_init("w"), {{"location", "weights.bin"}, {"offset", "0"}, {"length", "24"}});
  g.init("b", {3}, {});
  OnnxBuilder::external_entries(*g.find_init("b"), {{"location", "./weights.bin"}, {"offset", "64"}, {"length", "12"}});
  g.node("Conv", {"x", "w", "b"}, {"c"});
  g.node("GlobalAveragePool", {"c"}, {"p"});
  g.output("p");
  return g.bytes();
}

void write_image(const fs::path& path, const cv::Mat& mat, const std::vector<int>& params = {}) {
  if (!cv::imwrite(path.string(), mat, params)) throw std::runtime_error("cv::imwrite failed for " + path.string());
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A little-endian TIFF as OpenCV writes it, with the type of its ImageWidth and ImageLength entries changed to
// `type` (8 SSHORT, 9 SLONG; the value keeps its bytes, which fit): the tag types finding 13 of issue 30 was about.
std::string tiff_with_side_type(const cv::Mat& mat, uint16_t type, const fs::path& scratch) {
  write_image(scratch, mat);
  std::string b = read_bytes(scratch);
  fs::remove(scratch);
  auto u16 = [&](size_t at) { return static_cast<uint16_t>(uint8_t(b[at]) | uint8_t(b[at + 1]) << 8); };
  if (b.size() < 8 || b[0] != 'I') throw std::runtime_error("OpenCV wrote no little-endian TIFF");
  const size_t ifd = uint8_t(b[4]) | uint8_t(b[5]) << 8 | uint8_t(b[6]) << 16 | size_t(uint8_t(b[7])) << 24;
  for (size_t i = 0, n = u16(ifd); i < n; ++i) {
    const size_t at = ifd + 2 + 12 * i;
    const uint16_t tag = u16(at), old = u16(at + 2);
    if ((tag == 256 || tag == 257) && (old == 3 || old == 4) && (type == 9 || old == 3)) {
      b[at + 2] = static_cast<char>(type & 0xFF);
      b[at + 3] = static_cast<char>(type >> 8);
    }
  }
  return b;
}

// A progressive JPEG written by OpenCV with its last scan repeated `extra` times before the end-of-image marker:
// many scans over a small frame (finding 13 of issue 30: 5,000 empty scans over a large one).
std::string jpeg_with_repeated_scan(const cv::Mat& mat, int extra, const fs::path& scratch) {
  write_image(scratch, mat, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  const std::string b = read_bytes(scratch);
  fs::remove(scratch);
  const size_t last_sos = b.rfind(std::string("\xFF\xDA", 2));
  const size_t eoi = b.rfind(std::string("\xFF\xD9", 2));
  if (last_sos == std::string::npos || eoi == std::string::npos || eoi < last_sos)
    throw std::runtime_error("OpenCV wrote no progressive JPEG");
  std::string out = b.substr(0, eoi);
  for (int i = 0; i < extra; ++i) out += b.substr(last_sos, eoi - last_sos);
  return out + b.substr(eoi);
}

// A small network whose declared sizes are huge: a fixed 65536x65536 input, or a convolution padded by 60,000.
std::string huge_declared(bool pads) {
  OnnxBuilder g(13);
  g.input("x", pads ? std::vector<int64_t>{1, 3, 8, 8} : std::vector<int64_t>{1, 3, 65536, 65536});
  g.conv("x", "c", 3, 4, 3, 1, pads ? 60000 : 1);  // the importer takes pads up to 65536
  g.classifier("c", 4, 5);
  return g.bytes();
}

cv::Mat pattern(int rows, int cols, int type) {
  cv::Mat m(rows, cols, type);
  cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(CV_MAT_DEPTH(type) == CV_16U ? 65535 : 255));
  return m;
}

// A profile of a three-layer model on the cpu backend, with a diff and two kernel records, so that every
// section of the format is present.
std::string small_report() {
  mnv2::Model m;
  m.input_channels = 2;
  m.input_height = m.input_width = 4;
  mnv2::Layer c;
  c.kind = mnv2::LayerKind::Conv2d;
  c.inputs = {mnv2::kNetworkInput};
  c.conv.in_channels = 2;
  c.conv.out_channels = 3;
  c.conv.kernel_h = c.conv.kernel_w = 3;
  c.conv.pad_top = c.conv.pad_left = c.conv.pad_bottom = c.conv.pad_right = 1;
  c.weight = ramp(54);
  c.bias = ramp(3);
  mnv2::Layer r;
  r.index = 1;
  r.kind = mnv2::LayerKind::ReLU6;
  r.inputs = {0};
  mnv2::Layer p;
  p.index = 2;
  p.kind = mnv2::LayerKind::GlobalAveragePool;
  p.inputs = {1};
  m.layers = {c, r, p};
  m.num_classes = 3;
  m.source = "seed.onnx";
  m.checksum = "fnv1a64:0000000000000000";
  mnv2::assign_blocks_and_names(m);
  mnv2::ProfileConfig cfg;
  cfg.height = cfg.width = 4;
  cfg.warmup = 0;
  cfg.iters = 2;
  mnv2::RunReport report = mnv2::profile(m, cfg);
  report.diff = mnv2::diff_backends(m, "cpu", "cpu", mnv2::PrepareConfig{1, 4, 4},
                                    mnv2::random_input(mnv2::Shape{1, 2, 4, 4}, 3));
  mnv2::KernelRecord k;
  k.name = "conv_kernel";
  k.kind = "kernel";
  k.step = 0;
  k.start_ns = 0;
  k.end_ns = 1500;
  k.grid = {2, 1, 1};
  k.block = {128, 1, 1};
  mnv2::KernelRecord copy;
  copy.name = "memcpy HtoD";
  copy.kind = "memcpy";
  copy.start_ns = 1600;
  copy.end_ns = 1700;
  copy.bytes = 128;
  if (report.timeline) report.timeline->records = {k, copy};  // every section of the format present
  report.warnings = {"a warning"};
  return mnv2::json::dump(mnv2::reports_json({report}), 1) + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mnv2_fuzz_seeds DIR\n";
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    const fs::path onnx = dir / "onnx_import", image = dir / "image_decode", report = dir / "report_reader";
    for (const auto& d : {onnx, image, report}) fs::create_directories(d);

    const std::string model = mobilenet_like();
    write_bytes(onnx / "mobilenet_like.onnx", model);
    write_bytes(onnx / "reshape_style.onnx", reshape_style());
    write_bytes(onnx / "opset11_pool.onnx", opset11_pool());
    write_bytes(onnx / "torch_export_style.onnx", torch_export_style());
    write_bytes(onnx / "external_data.onnx", external_data());
    write_bytes(onnx / "mobilenet_like_truncated.onnx", model.substr(0, model.size() / 2));
    write_bytes(onnx / "huge_input.onnx", huge_declared(false));
    write_bytes(onnx / "huge_pads.onnx", huge_declared(true));

    cv::setRNGSeed(7);
    write_image(image / "rgb_4x3.bmp", pattern(3, 4, CV_8UC3));
    write_image(image / "gray_2x2.png", pattern(2, 2, CV_8UC1));
    write_image(image / "rgba_3x2.png", pattern(2, 3, CV_8UC4));
    write_image(image / "rgb16_2x2.png", pattern(2, 2, CV_16UC3));
    write_image(image / "strip_1x16.png", pattern(16, 1, CV_8UC3));
    write_image(image / "one_pixel.jpg", pattern(1, 1, CV_8UC3));
    write_image(image / "rgb_8x8.jpg", pattern(8, 8, CV_8UC3));
    write_image(image / "gray_8x8.jpg", pattern(8, 8, CV_8UC1));
    write_image(image / "progressive_16x16.jpg", pattern(16, 16, CV_8UC3), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    write_image(image / "restarts_32x16.jpg", pattern(16, 32, CV_8UC3), {cv::IMWRITE_JPEG_RST_INTERVAL, 1});
    write_bytes(image / "progressive_120_scans.jpg",
                jpeg_with_repeated_scan(pattern(8, 8, CV_8UC1), 120, image / "scratch.jpg"));
    write_bytes(image / "sides_sshort_4x3.tif", tiff_with_side_type(pattern(3, 4, CV_8UC3), 8, image / "scratch.tif"));
    write_bytes(image / "sides_slong_4x3.tif", tiff_with_side_type(pattern(3, 4, CV_8UC1), 9, image / "scratch.tif"));

    write_bytes(report / "small_report.json", small_report());
    std::cout << "wrote seeds under " << dir.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
