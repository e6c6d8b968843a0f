// Helpers shared by the test programs: where shared/ is, golden files, small ONNX models built in memory.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "mnv2/image.h"
#include "mnv2/json_io.h"
#include "mnv2/options.h"

namespace mnv2::test {

// A test whose subject is a decoded image file skips in a build without image decoding (the GPU machine's
// bundle, MNV2_WITH_OPENCV_CODECS=OFF), saying so; CI's build decodes, so there it always runs.
#define MNV2_SKIP_WITHOUT_IMAGE_DECODING() \
  if (!::mnv2::image_decoding_available()) \
  GTEST_SKIP() << "this build decodes no image files ('mnv2 info': image decoding none)"

// The shared data folder: env MNV2_SHARED_DIR, else the CMake cache variable MNV2_SHARED_DIR.
std::string shared_dir();
std::string shared_path(const std::string& relative);  // shared_dir() + "/" + relative
std::string main_model_path();                         // shared/weights/mobilenet_v2_1.0_224.onnx
std::string torchvision_model_path();                  // shared/weights/mobilenet_v2_torchvision_random.onnx

// Golden images: cat, cat_720p, grace_hopper, hot_dog, parrot (and torchvision_random for the 2nd model).
std::vector<std::string> golden_image_names();
struct Golden {
  std::vector<float> input;    // 1x3x224x224
  std::vector<double> logits;  // float64 reference
  std::vector<int> top5;       // indices
  std::string image;           // image file name ("" for torchvision_random)
};
Golden read_golden(const std::string& name);

// A fresh temporary directory, removed by the destructor; with MNV2_TEST_REPORTS_DIR set (ctest), the .json and
// .csv files the program wrote into it are first copied there for reports_match_schemas.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A file the test writes itself (a fixture, a tampered report): never taken for one the program wrote.
void write_file(const std::string& path, const std::string& bytes);
// With MNV2_TEST_REPORTS_DIR set (ctest), what a command printed is kept there for reports_match_schemas,
// which validates what it recognises as a report (JSON by its format or shape, CSV by its header).
void keep_report_text(const std::string& text);
std::string read_file(const std::string& path);

// Serialises a ModelProto to a file.
void save_model(const onnx::ModelProto& model, const std::string& path);

// rel L2 of a float vector against a double reference.
double rel_l2(const std::vector<float>& a, const std::vector<double>& ref);

// The 8-bit RGB image (HWC) a normalised [1, 3, height, width] tensor was made from: for each value the byte
// whose normalised value under `n` is nearest. `max_abs` (if given) gets the largest difference left, 0 where
// the tensor came from n's own table (the golden inputs: within 1e-6, ImageU8 tests).
std::vector<uint8_t> bytes_of_normalised(const std::vector<float>& nchw, int height, int width,
                                         const InputNormaliser& n, double* max_abs = nullptr);

// A test that sets the environment plays a front end: the engine sees the variables through the process
// settings a front end derives from them (app/common/environment.h), refreshed here after each change.
inline void sync_process_settings_from_environment() {
  OptionValues v;
  frontend::offer_environment(v);
  set_process_settings(frontend::process_settings_of(v));
}
inline int synced_setenv(const char* name, const char* value, int overwrite) {
  const int rc = ::setenv(name, value, overwrite);
  sync_process_settings_from_environment();
  return rc;
}
inline int synced_unsetenv(const char* name) {
  const int rc = ::unsetenv(name);
  sync_process_settings_from_environment();
  return rc;
}

// Changes the engine's process settings (mnv2/options.h: what a front end passes in from the environment and
// its options) for as long as it lives.
class ScopedSettings {
 public:
  explicit ScopedSettings(const std::function<void(ProcessSettings&)>& change) : saved_(process_settings()) {
    ProcessSettings s = saved_;
    change(s);
    set_process_settings(s);
  }
  ~ScopedSettings() { set_process_settings(saved_); }
  ScopedSettings(const ScopedSettings&) = delete;
  ScopedSettings& operator=(const ScopedSettings&) = delete;

 private:
  ProcessSettings saved_;
};

}  // namespace mnv2::test
