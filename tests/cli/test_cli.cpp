// End-to-end tests of the mnv2 command-line tool: exit codes, messages and the JSON it prints.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

bool have_gpu() { return !cuda_environment().devices.empty(); }

TEST(Cli, HelpAndUsageErrors) {
  EXPECT_EQ(run_cli({"--help"}).code, 0);
  auto none = run_cli({});
  EXPECT_EQ(none.code, 2) << describe(none);
  auto unknown = run_cli({"frobnicate"});
  EXPECT_EQ(unknown.code, 2) << describe(unknown);
  EXPECT_NE(unknown.err.find("error: unknown command"), std::string::npos) << describe(unknown);
  auto bad_opt = run_cli({"topology", "--nope"});
  EXPECT_EQ(bad_opt.code, 2) << describe(bad_opt);
  auto missing_value = run_cli({"topology", "--format"});
  EXPECT_EQ(missing_value.code, 2) << describe(missing_value);
  auto bad_format = run_cli({"topology", "--model", main_model_path(), "--format", "xml"});
  EXPECT_EQ(bad_format.code, 2) << describe(bad_format);
  auto batch0 = run_cli({"topology", "--model", main_model_path(), "--batch", "0"});
  EXPECT_EQ(batch0.code, 2) << describe(batch0);
  auto bad_size = run_cli({"topology", "--model", main_model_path(), "--input-size", "224xfoo"});
  EXPECT_EQ(bad_size.code, 2) << describe(bad_size);
  auto neg_iters = run_cli({"bench", "--iters", "-3"});
  EXPECT_EQ(neg_iters.code, 2) << describe(neg_iters);
  auto bad_backend =
      run_cli({"classify", "--backend", "tpu", "--model", main_model_path(), shared_path("images/cat.bmp")});
  EXPECT_EQ(bad_backend.code, 2) << describe(bad_backend);
  auto nothing = run_cli({"classify", "--model", main_model_path()});
  EXPECT_EQ(nothing.code, 2) << describe(nothing);
}

TEST(Cli, InfoJson) {
  auto r = run_cli({"info", "--json"});
  ASSERT_EQ(r.code, 0) << describe(r);
  json::Json j = json::parse(r.out);
  // The GPU backends learn their precisions from the plugin: only where it loaded (not in a build without CUDA,
  // nor beside a plugin of another build) does cudnn list all three.
  const json::Json& build = j.at("build");
  const bool plugin_loaded = build.contains("gpu_plugin") && build.at("gpu_plugin").value("loaded", false);
  bool cpu_available = false;
  for (const auto& b : j.at("backends")) {
    const std::string name = b.at("name").get<std::string>();
    if (name == "cpu") cpu_available = b.at("available").get<bool>();
    std::vector<std::string> precisions;
    for (const auto& p : b.at("precisions")) precisions.push_back(p.get<std::string>());
    ASSERT_FALSE(precisions.empty()) << name;
    EXPECT_EQ(precisions.front(), "fp32") << name;  // every backend runs fp32
    if (is_host_backend(name)) EXPECT_EQ(precisions.size(), 1u) << name;
    if (name == "cudnn" && plugin_loaded) EXPECT_EQ(precisions, (std::vector<std::string>{"fp32", "tf32", "fp16"}));
    if (!is_host_backend(name) && !have_gpu()) {
      EXPECT_FALSE(b.at("available").get<bool>()) << name;
      EXPECT_FALSE(b.at("reason").get<std::string>().empty()) << name;
    }
  }
  EXPECT_TRUE(cpu_available);
  // The CPU kernels chosen here and why: CPUID's features, oneDNN's version and ISA, threads.
  const json::Json& cpu = j.at("cpu");
  EXPECT_FALSE(cpu.at("model_name").get<std::string>().empty());
  EXPECT_EQ(cpu.at("onednn_version").get<std::string>().rfind("2.", 0), 0u);
  EXPECT_FALSE(cpu.at("onednn_isa").get<std::string>().empty());
  EXPECT_GE(cpu.at("threads").get<int64_t>(), 1);
  EXPECT_TRUE(cpu.at("cpuid_features").is_array());
  EXPECT_NE(cpu.at("cpu_kernels").get<std::string>().find(cpu.at("onednn_isa").get<std::string>()), std::string::npos);
  auto text = run_cli({"info"}, {"MNV2_CPU_THREADS=1"});
  EXPECT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.out.find("cpu:     "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(", 1 thread; CPUID:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("kernels: cpu oneDNN " + cpu.at("onednn_version").get<std::string>()), std::string::npos)
      << text.out;
}

TEST(Cli, TopologyTableCsvJson) {
  auto table = run_cli({"topology", "--model", main_model_path()});
  ASSERT_EQ(table.code, 0) << describe(table);
  EXPECT_NE(table.out.find("\n0: Conv2d(3, 32, 3, 2, [0, 0, 1, 1], 1)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("99 layers (52 Conv2d, 35 ReLU6, 10 ResidualAdd, 1 GlobalAveragePool, 1 Linear)"),
            std::string::npos)
      << table.out;

  auto csv = run_cli({"topology", "--model", main_model_path(), "--format", "csv"});
  ASSERT_EQ(csv.code, 0) << describe(csv);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 100);  // header + 99 rows

  auto js = run_cli({"topology", "--model", main_model_path(), "--format", "json", "--batch", "2"});
  ASSERT_EQ(js.code, 0) << describe(js);
  json::Json j = json::parse(js.out);
  const auto& layers = j.at("layers");
  ASSERT_EQ(layers.size(), 99u);
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].at("index").get<int64_t>(), static_cast<int64_t>(i));
    EXPECT_FALSE(layers[i].at("kind").get<std::string>().empty());
    EXPECT_FALSE(layers[i].at("name").get<std::string>().empty());
    EXPECT_EQ(layers[i].at("output_shape").size(), 4u);
    EXPECT_GE(layers[i].at("params").get<int64_t>(), 0);
    EXPECT_GE(layers[i].at("macs").get<int64_t>(), 0);
  }
  EXPECT_EQ(layers.back().at("kind").get<std::string>(), "Linear");
  EXPECT_EQ(layers.back().at("output_shape")[0].get<int64_t>(), 2);
  EXPECT_EQ(layers.back().at("output_shape")[1].get<int64_t>(), 1001);
  EXPECT_EQ(j.at("totals").at("Conv2d").get<int64_t>(), 52);
  EXPECT_EQ(j.at("totals").at("blocks").get<int64_t>(), 17);
}

TEST(Cli, ClassifyImagesJson) {
  MNV2_SKIP_WITHOUT_IMAGE_DECODING();
  auto r = run_cli({"classify", "--model", main_model_path(), "--json", shared_path("images/cat.bmp"),
                    shared_path("images/parrot.jpg")});
  ASSERT_EQ(r.code, 0) << describe(r);
  json::Json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json::Json& o = j[i];
    EXPECT_EQ(o.at("backend").get<std::string>(), "cpu");
    EXPECT_EQ(o.at("top5").size(), 5u);
    EXPECT_EQ(o.at("logits").size(), 1001u);
    EXPECT_EQ(o.at("top5")[0].at("index").get<int64_t>(), read_golden(i == 0 ? "cat" : "parrot").top5[0]);
  }
  EXPECT_EQ(j[0].at("top5")[0].at("label").get<std::string>(), "Egyptian cat");
  EXPECT_NE(j[0].at("input").get<std::string>().find("cat.bmp"), std::string::npos);
}

TEST(Cli, ClassifyTensorMatchesGolden) {
  auto r = run_cli({"classify", "--json", "--tensor", shared_path("golden/hot_dog.input.f32")},
                   {"MNV2_MODEL=" + main_model_path()});
  ASSERT_EQ(r.code, 0) << describe(r);
  json::Json j = json::parse(r.out);
  std::vector<float> logits;
  for (const auto& v : j[0].at("logits")) logits.push_back(static_cast<float>(v.get<double>()));
  Golden g = read_golden("hot_dog");
  EXPECT_LT(rel_l2(logits, g.logits), 1e-5);
  auto table = run_cli({"classify", "--top", "3", "--tensor", shared_path("golden/hot_dog.input.f32")},
                       {"MNV2_MODEL=" + main_model_path()});
  ASSERT_EQ(table.code, 0) << describe(table);
  EXPECT_NE(table.out.find("hotdog"), std::string::npos) << table.out;
}

TEST(Cli, RuntimeErrorsExitOne) {
  TempDir tmp;
  write_file(tmp.file("short.f32"), std::string(1000, '\0'));
  auto wrong_tensor = run_cli({"classify", "--model", main_model_path(), "--tensor", tmp.file("short.f32")});
  EXPECT_EQ(wrong_tensor.code, 1) << describe(wrong_tensor);
  EXPECT_NE(wrong_tensor.err.find("short.f32"), std::string::npos) << describe(wrong_tensor);

  write_file(tmp.file("fake.jpg"), "this is not an image");
  auto bad_image = run_cli({"classify", "--model", main_model_path(), tmp.file("fake.jpg")});
  EXPECT_EQ(bad_image.code, 1) << describe(bad_image);
  EXPECT_NE(bad_image.err.find("fake.jpg"), std::string::npos) << describe(bad_image);

  auto missing_image = run_cli({"classify", "--model", main_model_path(), tmp.file("nope.png")});
  EXPECT_EQ(missing_image.code, 1) << describe(missing_image);

  auto missing_model = run_cli({"topology", "--model", tmp.file("nope.onnx")});
  EXPECT_EQ(missing_model.code, 1) << describe(missing_model);
  EXPECT_NE(missing_model.err.find("nope.onnx"), std::string::npos);

  auto missing_env_model = run_cli({"topology"}, {"MNV2_MODEL=" + tmp.file("gone.onnx")});
  EXPECT_EQ(missing_env_model.code, 1) << describe(missing_env_model);
  EXPECT_NE(missing_env_model.err.find("MNV2_MODEL"), std::string::npos);

  write_file(tmp.file("truncated.onnx"), read_file(main_model_path()).substr(0, 5000));
  auto truncated = run_cli({"classify", "--model", tmp.file("truncated.onnx"), shared_path("images/cat.bmp")});
  EXPECT_EQ(truncated.code, 1) << describe(truncated);
  EXPECT_NE(truncated.err.find("truncated.onnx"), std::string::npos) << describe(truncated);

  write_file(tmp.file("labels.txt"), "a\nb\n");
  auto few_labels = run_cli(
      {"classify", "--model", main_model_path(), "--labels", tmp.file("labels.txt"), shared_path("images/cat.bmp")});
  EXPECT_EQ(few_labels.code, 1) << describe(few_labels);
}

TEST(Cli, GpuBackendWithoutGpuIsAClearError) {
  if (have_gpu()) GTEST_SKIP() << "a CUDA device is present; this checks the no-GPU message";
  for (const char* b : {"cudnn", "cuda"}) {
    auto r = run_cli({"classify", "--backend", b, "--model", main_model_path(), shared_path("images/cat.bmp")});
    EXPECT_EQ(r.code, 1) << describe(r);
    EXPECT_NE(r.err.find("not available"), std::string::npos) << describe(r);
  }
}

TEST(Cli, NoModelRunsSyntheticAndSaysSo) {
  // A copy of the program in an empty folder finds no weights/ folder near it.
  TempDir tmp;
  const std::string exe = tmp.file("mnv2");
  std::filesystem::copy_file(MNV2_CLI_PATH, exe);
  std::filesystem::permissions(exe, std::filesystem::perms::owner_all);
  auto info = run_cli({"info"}, {}, exe);
  ASSERT_EQ(info.code, 0) << describe(info);
  EXPECT_NE(info.out.find("synthetic"), std::string::npos) << info.out;

  auto r = run_cli({"classify", "--json", "--tensor", shared_path("golden/cat.input.f32")}, {}, exe);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.err.find("meaningless"), std::string::npos) << describe(r);
  json::Json j = json::parse(r.out);
  ASSERT_EQ(j[0].at("warnings").size(), 1u);
  EXPECT_NE(j[0].at("warnings")[0].get<std::string>().find("meaningless"), std::string::npos);
  auto table = run_cli({"topology"}, {}, exe);
  ASSERT_EQ(table.code, 0) << describe(table);
  EXPECT_EQ(table.out.rfind("WARNING:", 0), 0u) << table.out;
}

TEST(Cli, BenchWritesJsonAndNoPartialFiles) {
  TempDir tmp;
  auto r = run_cli({"bench", "--model", main_model_path(), "--batch", "1,2", "--warmup", "1", "--iters", "3", "--json",
                    tmp.file("bench.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  json::Json j = json::parse_file(tmp.file("bench.json"));
  ASSERT_EQ(j.at("results").size(), 2u);
  EXPECT_GT(j.at("results")[0].at("median_ms").get<double>(), 0.0);
  EXPECT_EQ(j.at("results")[1].at("batch").get<int64_t>(), 2);

  auto bad = run_cli({"bench", "--model", main_model_path(), "--iters", "1", "--json", tmp.file("no/such/dir/b.json")});
  EXPECT_EQ(bad.code, 2) << describe(bad);  // an output path is an argument, checked before the run
  EXPECT_FALSE(std::filesystem::exists(tmp.file("no/such/dir/b.json")));
  // Leftover temporaries would show up beside the target.
  for (const auto& e : std::filesystem::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".mnv2tmp-"), std::string::npos) << e.path();
}

TEST(Cli, ProfileCpuWritesAllReports) {
  TempDir tmp;
  auto r = run_cli({"profile", "--model", main_model_path(), "--backend", "cpu", "--tensor",
                    shared_path("golden/cat.input.f32"), "--batch", "2", "--warmup", "1", "--iters", "3", "--csv",
                    tmp.file("p.csv"), "--json", tmp.file("p.json"), "--trace", tmp.file("p.trace.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("end to end (un-instrumented"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sum of layer medians"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("block17.project"), std::string::npos) << r.out;
  const std::string csv = read_file(tmp.file("p.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 100);
  json::Json j = json::parse_file(tmp.file("p.json"));
  EXPECT_EQ(j.at("runs")[0].at("metadata").at("timer").get<std::string>(), "host_clock");
  EXPECT_EQ(j.at("runs")[0].at("metadata").at("input").get<std::string>(), shared_path("golden/cat.input.f32"));
  json::Json t = json::parse_file(tmp.file("p.trace.json"));
  // A span per step: the oneDNN backend fuses layers, 99 of them run in at most 54 steps.
  EXPECT_GE(t.at("traceEvents").size(), j.at("runs")[0].at("steps").size());
}

TEST(Cli, CompareCpuWithItself) {
  // Two names for one implementation are refused; compare needs distinct backends.
  auto dup = run_cli({"compare", "--backends", "cpu,cpu", "--model", main_model_path()});
  EXPECT_EQ(dup.code, 2) << describe(dup);
  auto one = run_cli({"compare", "--backends", "cpu", "--model", main_model_path()});
  EXPECT_EQ(one.code, 2) << describe(one);
}

TEST(Cli, CompareWithGpuBackendWithoutGpuIsAClearError) {
  if (have_gpu()) GTEST_SKIP() << "a CUDA device is present; this checks the no-GPU message";
  auto r = run_cli({"compare", "--backends", "cpu,cudnn", "--model", main_model_path(), "--iters", "1"});
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find("not available"), std::string::npos) << describe(r);
}

TEST(Cli, ProfileUsageErrors) {
  EXPECT_EQ(run_cli({"profile", "--timing", "sundial"}).code, 2);
  EXPECT_EQ(run_cli({"profile", "--timing", "host"}).code, 2);
  EXPECT_EQ(run_cli({"profile", "--backends", "cpu,cudnn"}).code, 2);
  EXPECT_EQ(run_cli({"profile", "--image", "a.jpg", "--tensor", "b.f32"}).code, 2);
  EXPECT_EQ(run_cli({"profile", "--iters", "0"}).code, 2);
  auto missing = run_cli({"profile", "--model", main_model_path(), "--image", "/nonexistent/x.jpg"});
  EXPECT_EQ(missing.code, 1) << describe(missing);
}

}  // namespace
}  // namespace mnv2::test
