#include "test_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mnv2/tensor.h"

namespace mnv2::test {

std::string shared_dir() {
  if (const char* env = std::getenv("MNV2_SHARED_DIR"); env && *env) return env;
  return MNV2_SHARED_DIR_DEFAULT;
}
std::string shared_path(const std::string& relative) { return shared_dir() + "/" + relative; }
std::string main_model_path() { return shared_path("weights/mobilenet_v2_1.0_224.onnx"); }
std::string torchvision_model_path() { return shared_path("weights/mobilenet_v2_torchvision_random.onnx"); }

std::vector<std::string> golden_image_names() { return {"cat", "cat_720p", "grace_hopper", "hot_dog", "parrot"}; }

Golden read_golden(const std::string& name) {
  Golden g;
  json::Json j = json::parse_file(shared_path("golden/" + name + ".json"));
  for (const json::Json& v : j.at("logits")) g.logits.push_back(v.get<double>());
  for (const json::Json& t : j.at("top5")) g.top5.push_back(static_cast<int>(t.at("index").get<int64_t>()));
  if (j.contains("image")) g.image = j.at("image").get<std::string>();
  Tensor t = read_tensor_file(shared_path("golden/" + name + ".input.f32"), Shape{1, 3, 224, 224});
  g.input = std::move(t.data);
  return g;
}

TempDir::TempDir() {
  std::random_device rd;
  auto base = std::filesystem::temp_directory_path();
  for (int i = 0; i < 100; ++i) {
    auto p = base / ("mnv2-test-" + std::to_string(rd()));
    if (std::filesystem::create_directory(p)) {
      path_ = p.string();
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory");
}
namespace {

// Files a test wrote itself (fixtures, tampered copies of a report): not the program's reports.
std::mutex g_test_written_mutex;
std::set<std::string> g_test_written;

// A name for a kept copy: unique in the folder, naming the test that wrote it.
std::string kept_name(const std::string& file_name) {
  static std::atomic<int> counter{0};
  std::string name = std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    name += std::string(info->test_suite_name()) + "." + info->name() + "-";
  return name + file_name;
}

// With MNV2_TEST_REPORTS_DIR set (ctest sets it, tests/CMakeLists.txt), every .json and .csv file the program
// wrote into the folder is copied there before the folder goes, so that the test reports_match_schemas can
// validate every report the tests wrote against the schemas (scripts/validate-reports.py).
void keep_reports(const std::string& folder) {
  const char* keep = std::getenv("MNV2_TEST_REPORTS_DIR");
  if (keep == nullptr || *keep == 0) return;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::filesystem::path& p = it->path();
    if (!it->is_regular_file(ec) || it->is_symlink(ec) || (p.extension() != ".json" && p.extension() != ".csv"))
      continue;
    {
      std::lock_guard<std::mutex> lock(g_test_written_mutex);
      if (g_test_written.count(p.lexically_normal().string())) continue;
    }
    std::error_code copy_ec;
    std::filesystem::copy_file(p, std::filesystem::path(keep) / kept_name(p.filename().string()), copy_ec);
  }
}

}  // namespace

TempDir::~TempDir() {
  keep_reports(path_);
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void keep_report_text(const std::string& text) {
  const char* keep = std::getenv("MNV2_TEST_REPORTS_DIR");
  if (keep == nullptr || *keep == 0 || text.empty()) return;
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && (text[first] == '{' || text[first] == '[');
  std::ofstream out(std::filesystem::path(keep) / kept_name(json ? "stdout.json" : "stdout.csv"), std::ios::binary);
  out << text;
}

void write_file(const std::string& path, const std::string& bytes) {
  {
    std::lock_guard<std::mutex> lock(g_test_written_mutex);
    g_test_written.insert(std::filesystem::path(path).lexically_normal().string());
  }
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void save_model(const onnx::ModelProto& model, const std::string& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("cannot serialise model");
  write_file(path, bytes);
}

double rel_l2(const std::vector<float>& a, const std::vector<double>& ref) {
  if (a.size() != ref.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = double(a[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

std::vector<uint8_t> bytes_of_normalised(const std::vector<float>& nchw, int height, int width,
                                         const InputNormaliser& n, double* max_abs) {
  const size_t plane = static_cast<size_t>(height) * static_cast<size_t>(width);
  if (nchw.size() != plane * 3) throw std::runtime_error("bytes_of_normalised: not a 3-channel image");
  std::vector<uint8_t> hwc(plane * 3);
  double worst = 0;
  for (size_t c = 0; c < 3; ++c) {
    const auto& table = n.value[c];
    for (size_t px = 0; px < plane; ++px) {
      const double v = nchw[c * plane + px];
      int best = 0;
      for (int b = 1; b < 256; ++b)
        if (std::fabs(table[static_cast<size_t>(b)] - v) < std::fabs(table[static_cast<size_t>(best)] - v)) best = b;
      worst = std::max(worst, std::fabs(table[static_cast<size_t>(best)] - v));
      hwc[px * 3 + static_cast<size_t>(n.source[c])] = static_cast<uint8_t>(best);
    }
  }
  if (max_abs != nullptr) *max_abs = worst;
  return hwc;
}

}  // namespace mnv2::test
