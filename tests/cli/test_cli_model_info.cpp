// `mnv2 info` on a model file (format, producer, input, classes, labels, checker, external data), models
// found in the XDG data folders, and refusals of hostile external data, end to end.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;

const std::string kExport = "tv_w035_96_c10_default";

std::string export_file(const std::string& suffix) {
  return std::string(MNV2_TEST_DATA_DIR) + "/pytorch_export/" + kExport + suffix;
}

// The line `sha256sum PATH` prints ("<64 hex>  PATH\n"), or "" where the tool cannot be run.
std::string sha256sum_line(const std::string& path) {
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[256];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return ::pclose(p) == 0 ? out : std::string();
}

void expect_has(const std::string& text, const std::vector<std::string>& parts, const CliResult& r) {
  for (const std::string& p : parts)
    EXPECT_NE(text.find(p), std::string::npos) << "missing: " << p << "\n" << describe(r);
}

TEST(CliModelInfo, TextShowsWhatTheFileDeclares) {
  auto r = run_cli({"info", "--model", export_file(".onnx")});
  ASSERT_EQ(r.code, 0) << describe(r);
  expect_has(r.out,
             {"model:   " + export_file(".onnx") + " (--model)", "  format: ONNX IR 10, opset 20\n",
              "  producer: pytorch 2.11.0+cu130\n", "  input: x [2, 3, 96, 96]\n", "  classes: 10\n",
              "  labels: generated names 'class 0'..'class 9' (no built-in list has 10 classes)\n",
              "  checker: skipped: the model is newer than the ONNX 1.12.0 library knows (IR version 10 > 8, ai.onnx "
              "opset 20 > 17)\n",
              "  external data: " + kExport + ".onnx.data (1604544 bytes read)\n", "WARNING: the ONNX 1.12.0"},
             r);

  // The shared model: the checker ran, and the built-in ImageNet names apply.
  auto shared = run_cli({"info", "--model", main_model_path()});
  ASSERT_EQ(shared.code, 0) << describe(shared);
  expect_has(shared.out,
             {"  checker: passed (ONNX 1.12.0 library)\n", "  classes: 1001\n",
              "  labels: built-in ImageNet, 1001 classes (background first)\n"},
             shared);
  EXPECT_EQ(shared.out.find("WARNING"), std::string::npos) << describe(shared);

  // The checksums as `sha256sum` prints them (the shared model's verified with it; the file is fixed), the
  // external data file's from its folder.
  expect_has(
      shared.out,
      {"  sha256: c29da1d5a35febf4084409fa92f1c495a39e39e1da57dda26e5a3930b83f94dd  " + main_model_path() + "\n"},
      shared);
  for (const std::string& path : {main_model_path(), export_file(".onnx"), export_file(".onnx.data")}) {
    const std::string line = sha256sum_line(path);
    if (line.empty()) continue;  // no sha256sum here
    expect_has(path == main_model_path() ? shared.out : r.out, {"  sha256: " + line},
               path == main_model_path() ? shared : r);
  }
}

TEST(CliModelInfo, JsonAndLabelsFile) {
  TempDir tmp;
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += "digit " + std::to_string(i) + "\n";
  write_file(tmp.file("ten.txt"), ten);
  auto r = run_cli({"info", "--model", export_file(".onnx"), "--labels", tmp.file("ten.txt"), "--json"});
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::Json j = json::parse(r.out);
  const json::Json& f = j.at("model").at("file");
  EXPECT_EQ(f.at("ir_version").get<int64_t>(), 10);
  EXPECT_EQ(f.at("opset").get<int64_t>(), 20);
  EXPECT_EQ(f.at("producer_name").get<std::string>(), "pytorch");
  EXPECT_EQ(f.at("producer_version").get<std::string>(), "2.11.0+cu130");
  EXPECT_EQ(f.at("input").at("name").get<std::string>(), "x");
  ASSERT_EQ(f.at("input").at("shape").size(), 4u);
  EXPECT_EQ(f.at("input").at("shape")[3].get<int64_t>(), 96);
  EXPECT_EQ(f.at("classes").get<int64_t>(), 10);
  EXPECT_EQ(f.at("labels").get<std::string>(), "file " + tmp.file("ten.txt"));
  EXPECT_FALSE(f.at("checker").at("ran").get<bool>());
  EXPECT_EQ(f.at("external_data").at("files")[0].get<std::string>(), kExport + ".onnx.data");
  const std::string data_sum = f.at("external_data").at("checksums").at(kExport + ".onnx.data").get<std::string>();
  EXPECT_EQ(data_sum.size(), 7u + 64u) << data_sum;
  EXPECT_EQ(data_sum.rfind("sha256:", 0), 0u) << data_sum;
  const std::string line = sha256sum_line(export_file(".onnx.data"));
  if (!line.empty()) EXPECT_EQ(data_sum, "sha256:" + line.substr(0, 64));
  EXPECT_EQ(f.at("checksum").get<std::string>().rfind("sha256:", 0), 0u);
  ASSERT_EQ(j.at("model").at("warnings").size(), 1u);

  // A labels file of the wrong length is an error naming it.
  write_file(tmp.file("three.txt"), "a\nb\nc\n");
  auto wrong = run_cli({"info", "--model", export_file(".onnx"), "--labels", tmp.file("three.txt")});
  EXPECT_EQ(wrong.code, 1) << describe(wrong);
  expect_has(wrong.err, {"error: " + tmp.file("three.txt"), "10 classes"}, wrong);
}

TEST(CliModelInfo, UnreadableModelIsReportedAfterEverythingElse) {
  TempDir tmp;
  write_file(tmp.file("broken.onnx"), "not a model");
  for (bool as_json : {false, true}) {
    std::vector<std::string> args = {"info", "--model", tmp.file("broken.onnx")};
    if (as_json) args.push_back("--json");
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 1) << describe(r);
    EXPECT_FALSE(r.signaled) << describe(r);
    if (as_json) {
      const json::Json j = json::parse(r.out);
      EXPECT_NE(j.at("model").at("error").get<std::string>().find("not a valid ONNX model"), std::string::npos)
          << describe(r);
    } else {
      expect_has(r.out, {"backends:", "model:   " + tmp.file("broken.onnx")}, r);
      expect_has(r.err, {"error: " + tmp.file("broken.onnx") + ": not a valid ONNX model"}, r);
    }
  }
}

// An installed program (no weights folder near it) finds a model the user placed in
// ~/.local/share/mnv2-profiler/ ($XDG_DATA_HOME/mnv2-profiler/), external data beside it.
TEST(CliModelInfo, ModelPlacedInTheUserDataFolderIsFound) {
  TempDir tmp;
  const std::string exe = tmp.file("bin/mnv2");
  fs::create_directories(tmp.file("bin"));
  fs::copy_file(MNV2_CLI_PATH, exe);
  fs::permissions(exe, fs::perms::owner_all);
  const std::string data = tmp.file("home/.local/share/mnv2-profiler");
  fs::create_directories(data);
  for (const char* suffix : {".onnx", ".onnx.data"}) fs::copy_file(export_file(suffix), data + "/" + kExport + suffix);

  const std::vector<std::string> env = {"HOME=" + tmp.file("home"), "XDG_DATA_HOME="};
  auto info = run_cli({"info"}, env, exe);
  ASSERT_EQ(info.code, 0) << describe(info);
  expect_has(info.out, {"model:   " + data + "/" + kExport + ".onnx (data folder " + data + ")", "  classes: 10\n"},
             info);

  auto r = run_cli({"classify", "--json", "--tensor", export_file(".input.f32"), "--input-size", "96x96"}, env, exe);
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::Json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].at("top5")[0].at("index").get<int64_t>(), 0);  // PyTorch's top class for image 0
}

TEST(CliModelInfo, HostileExternalDataIsAOneLineError) {
  TempDir tmp;
  write_file(tmp.file("secret.bin"), std::string(24, '\0'));
  fs::create_directories(tmp.file("m"));
  OnnxBuilder b(20, 10);
  b.input("x", {1, 2, 4, 4});
  b.init("w", {3, 2, 1, 1}, {});
  OnnxBuilder::external_entries(*b.find_init("w"), {{"location", "../secret.bin"}});
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output("y");
  b.save(tmp.file("m/m.onnx"));
  for (const char* command : {"info", "topology"}) {
    auto r = run_cli({command, "--model", tmp.file("m/m.onnx")});
    EXPECT_EQ(r.code, 1) << describe(r);
    EXPECT_FALSE(r.signaled) << describe(r);
    expect_has(r.err,
               {"error: " + tmp.file("m/m.onnx") +
                ": initializer 'w': external data location '../secret.bin' contains '..'; external data must lie "
                "inside the model's folder\n"},
               r);
  }
}

}  // namespace
}  // namespace mnv2::test
