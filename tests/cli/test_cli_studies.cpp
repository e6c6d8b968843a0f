// The studies from the command line: eval over a tiny labelled set built from the shared photographs and
// their golden top-1, and the Nsight Compute command of --ncu-command.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {
namespace fs = std::filesystem;

// One sub-folder per golden top-1 class index, each photograph in its class.
void build_class_folders(const std::string& root) {
  for (const auto& name : golden_image_names()) {
    const Golden g = read_golden(name);
    const fs::path dir = fs::path(root) / std::to_string(g.top5.front());
    fs::create_directories(dir);
    fs::copy_file(shared_path("images/" + g.image), dir / g.image);
  }
}

TEST(CliEval, ClassFoldersFromTheGoldenTop1) {
  MNV2_SKIP_WITHOUT_IMAGE_DECODING();
  TempDir d;
  build_class_folders(d.file("set"));
  auto r = run_cli(
      {"eval", "--model", main_model_path(), "--images", d.file("set"), "--batch", "2", "--json", d.file("eval.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("top-1 100.00% (5/5), top-5 100.00% (5/5)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("5/5 images"), std::string::npos) << r.err;  // progress
  const json::Json j = json::parse_file(d.file("eval.json"));
  EXPECT_EQ(j.at("schema").get<std::string>(), "mnv2.eval/1");
  EXPECT_EQ(j.at("images").get<int64_t>(), 5);
  EXPECT_EQ(j.at("top1").get<double>(), 1.0);
  EXPECT_GT(j.at("images_per_s").get<double>(), 0.0);
  EXPECT_TRUE(j.at("misclassified").empty());
}

TEST(CliEval, ListFileWithAWrongLabelAndAnUnreadableImage) {
  MNV2_SKIP_WITHOUT_IMAGE_DECODING();
  TempDir d;
  std::string list;
  for (const auto& name : golden_image_names()) {
    const Golden g = read_golden(name);
    // grace_hopper gets a wrong label: it must come back as misclassified, with its path.
    list += g.image + " " + std::to_string(name == "grace_hopper" ? 1 : g.top5.front()) + "\n";
  }
  // The images folder: links to the shared images (followed: the folder is the user's own arrangement) and a
  // broken file. A list names files beneath it only.
  fs::create_directories(d.file("set"));
  for (const auto& name : golden_image_names()) {
    const std::string image = read_golden(name).image;
    fs::create_symlink(shared_path("images/" + image), d.file("set/" + image));
  }
  write_file(d.file("set/broken.jpg"), "not a jpeg");
  list += "broken.jpg 3\n";
  write_file(d.file("list.txt"), list);
  auto r = run_cli({"eval", "--model", main_model_path(), "--images", d.file("set"), "--list", d.file("list.txt")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("top-1 80.00% (4/5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("misclassified (1):\n  " + d.file("set/grace_hopper.bmp") + ": label 1 (tench"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("skipped (1):\n  " + d.file("set/broken.jpg")), std::string::npos) << r.out;
  // A name outside the folder is refused naming the line, before any image is read.
  write_file(d.file("outside.txt"), "cat.bmp 286\n" + shared_path("images/cat.bmp") + " 286\n../list.txt 1\n");
  auto outside =
      run_cli({"eval", "--model", main_model_path(), "--images", d.file("set"), "--list", d.file("outside.txt")});
  EXPECT_EQ(outside.code, 1) << describe(outside);
  EXPECT_NE(outside.err.find(d.file("outside.txt") + ":2: '" + shared_path("images/cat.bmp") + "' is an absolute path"),
            std::string::npos)
      << describe(outside);
}

// The golden inputs (.f32, already preprocessed) as the set: how a machine without image codecs (the GPU
// machine) evaluates. A file holding two images is skipped with the reason.
TEST(CliEval, PreprocessedTensorFilesAsTheSet) {
  TempDir d;
  std::string list;
  for (const auto& name : golden_image_names()) {
    fs::create_symlink(shared_path("golden/" + name + ".input.f32"), d.file(name + ".input.f32"));
    list += name + ".input.f32 " + std::to_string(read_golden(name).top5.front()) + "\n";
  }
  const std::string one = read_file(shared_path("golden/cat.input.f32"));
  write_file(d.file("two.F32"), one + one);
  list += "two.F32 286\n";
  write_file(d.file("list.txt"), list);
  auto r = run_cli(
      {"eval", "--model", main_model_path(), "--images", d.path(), "--list", d.file("list.txt"), "--batch", "3"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("top-1 100.00% (5/5), top-5 100.00% (5/5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped (1):\n  " + d.file("two.F32") + ": holds 2 preprocessed images"), std::string::npos)
      << r.out;
}

TEST(CliEval, BadInputIsNamed) {
  TempDir d;
  auto missing = run_cli({"eval", "--model", main_model_path(), "--images", d.file("nope")});
  EXPECT_EQ(missing.code, 1) << describe(missing);
  EXPECT_NE(missing.err.find(d.file("nope")), std::string::npos) << describe(missing);
  write_file(d.file("list.txt"), "cat.bmp 286\nparrot.jpg\n");
  auto bad_line =
      run_cli({"eval", "--model", main_model_path(), "--images", shared_path("images"), "--list", d.file("list.txt")});
  EXPECT_EQ(bad_line.code, 1) << describe(bad_line);
  EXPECT_NE(bad_line.err.find(d.file("list.txt") + ":2:"), std::string::npos) << describe(bad_line);
  fs::create_directories(d.file("set/not a class"));
  auto bad_folder = run_cli({"eval", "--model", main_model_path(), "--images", d.file("set")});
  EXPECT_EQ(bad_folder.code, 1) << describe(bad_folder);
  EXPECT_NE(bad_folder.err.find("not a class"), std::string::npos) << describe(bad_folder);
  EXPECT_EQ(run_cli({"eval"}).code, 2);
  EXPECT_FALSE(fs::exists(d.file("e.json")));
}

// A --list that is a FIFO: refused at once naming it (exit 1), never waited on for a writer.
TEST(CliEval, AListThatIsAFifoIsRefusedWithoutHanging) {
  TempDir d;
  ASSERT_EQ(mkfifo(d.file("list.fifo").c_str(), 0600), 0);
  const CliResult r =
      run_cli({"eval", "--model", main_model_path(), "--images", shared_path("images"), "--list", d.file("list.fifo")},
              {}, MNV2_CLI_PATH, 30);
  EXPECT_NE(r.code, 124) << "waited on the FIFO: " << describe(r);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(
      r.err.find(d.file("list.fifo") + ": cannot read evaluation list (it is a FIFO (named pipe), not a regular file)"),
      std::string::npos)
      << describe(r);
}

TEST(CliNcu, PrintsTheCommandForOneLayer) {
  TempDir d;
  auto r =
      run_cli({"profile", "--backend", "cudnn", "--model", main_model_path(), "--batch", "4", "--ncu-command", "7"});
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::string exe = fs::canonical(MNV2_CLI_PATH).string();
  EXPECT_EQ(r.out, "ncu --nvtx --nvtx-include 'Conv2d 7/' --set full -f -o mnv2_cudnn_layer7 " + exe +
                       " profile --backend cudnn --model " + main_model_path() +
                       " --batch 4 --input-size 224x224 --warmup 0 --iters 1 --timing event\n")
      << describe(r);
  // The run's input goes into the command as given: an image where this build decodes, else a tensor.
  const bool decodes = image_decoding_available();
  const std::string input_flag = decodes ? "--image" : "--tensor";
  const std::string input = shared_path(decodes ? "images/cat.bmp" : "golden/cat.input.f32");
  auto by_name = run_cli(
      {"profile", "--backend", "cudnn", "--model", main_model_path(), input_flag, input, "--ncu-command", "stem.conv"});
  ASSERT_EQ(by_name.code, 0) << describe(by_name);
  EXPECT_NE(by_name.out.find("'Conv2d 0/'"), std::string::npos) << by_name.out;
  EXPECT_NE(by_name.out.find(input_flag + " " + input), std::string::npos) << by_name.out;
  EXPECT_EQ(run_cli({"profile", "--backend", "cpu", "--model", main_model_path(), "--ncu-command", "7"}).code, 2);
  EXPECT_EQ(run_cli({"profile", "--backend", "cpu-ref", "--model", main_model_path(), "--ncu-command", "7"}).code, 2);
  EXPECT_EQ(run_cli({"profile", "--backend", "cudnn", "--model", main_model_path(), "--ncu-command", "999"}).code, 2);
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

TEST(CliMemory, PerLayerTableAndReports) {
  TempDir d;
  auto r = run_cli(
      {"memory", "--model", main_model_path(), "--batch", "2", "--csv", d.file("m.csv"), "--json", d.file("m.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(
      r.out.find("0    stem.conv              Conv2d             2x32x112x112                3211264           3584"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("held by the cpu backend: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in 106 tensors"), std::string::npos) << r.out;
  const json::Json j = json::parse_file(d.file("m.json"));
  EXPECT_EQ(j.at("model").at("weight_bytes").get<int64_t>(), 3489097 * 4);
  EXPECT_GT(j.at("held").at("tensors").get<int64_t>(), 0);
  EXPECT_EQ(run_cli({"memory", "--backend", "tpu"}).code, 2);
  auto gpu = run_cli({"memory", "--model", main_model_path(), "--backend", "cudnn", "--json", d.file("g.json")});
  if (gpu.code != 0) {  // no GPU here: a clear error and no file
    EXPECT_EQ(gpu.code, 1) << describe(gpu);
    EXPECT_FALSE(fs::exists(d.file("g.json")));
  }
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

TEST(CliBench, SweepOverInputAndBatchSizesWritesCsv) {
  TempDir d;
  auto r = run_cli({"bench", "--model", main_model_path(), "--batch", "1,2", "--input-size", "64x64,96x80", "--warmup",
                    "0", "--iters", "2", "--csv", d.file("s.csv"), "--json", d.file("s.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("-- cpu, input 96x80\n"), std::string::npos) << r.out;
  const std::string csv = read_file(d.file("s.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;
  EXPECT_NE(csv.find(",fp32,2,96,80,0,2,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("device_resident_median_ms"), std::string::npos) << csv;
  EXPECT_EQ(json::parse_file(d.file("s.json")).at("results").size(), 4u);
  auto bad = run_cli({"bench", "--model", main_model_path(), "--input-size", "64x64,x", "--csv", d.file("b.csv")});
  EXPECT_EQ(bad.code, 2) << describe(bad);
  EXPECT_FALSE(fs::exists(d.file("b.csv")));
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

// A cache folder open to others (issue 30, finding 2): the ceilings are measured and shown, but the cache is
// neither read nor written (a planted link is not written through), with a note; a relative XDG_CACHE_HOME is
// ignored (the cache goes to HOME's).
TEST(CliRoofline, ACacheFolderNotPrivateIsNotUsed) {
  TempDir d;
  fs::create_directories(d.file("shared"));
  ASSERT_EQ(::chmod(d.file("shared").c_str(), 0777), 0);
  write_file(d.file("victim"), "VICTIM");
  fs::create_symlink(d.file("victim"), d.file("shared/roofline.json"));
  const std::vector<std::string> args = {
      "roofline", "--model", main_model_path(), "--input-size", "64x64", "--warmup", "0", "--iters", "1"};
  const auto shared = run_cli(args, {"MNV2_CACHE_DIR=" + d.file("shared")});
  ASSERT_EQ(shared.code, 0) << describe(shared);
  EXPECT_NE(shared.err.find("is open to other users (mode 0777); a cache must be private (0700)"), std::string::npos)
      << shared.err;
  EXPECT_NE(shared.out.find("calibrated now, not cached"), std::string::npos) << shared.out;
  EXPECT_EQ(read_file(d.file("victim")), "VICTIM");
  EXPECT_TRUE(fs::is_symlink(d.file("shared/roofline.json")));
  const auto relative = run_cli(args, {"XDG_CACHE_HOME=relative/cache", "HOME=" + d.file("home")});
  ASSERT_EQ(relative.code, 0) << describe(relative);
  EXPECT_NE(relative.out.find("calibrated now, cached in " + d.file("home/.cache/mnv2-profiler/roofline.json")),
            std::string::npos)
      << relative.out;
}

TEST(CliRoofline, CpuCeilingsCachedAndEveryLayerPlaced) {
  TempDir d;
  const std::vector<std::string> env = {"MNV2_CACHE_DIR=" + d.file("cache")};
  const std::vector<std::string> args = {
      "roofline", "--model", main_model_path(), "--input-size",  "96x96",  "--warmup",      "0",
      "--iters",  "1",       "--csv",           d.file("r.csv"), "--json", d.file("r.json")};
  auto first = run_cli(args, env);
  ASSERT_EQ(first.code, 0) << describe(first);
  EXPECT_NE(first.out.find("calibrated now, cached in " + d.file("cache/roofline.json")), std::string::npos)
      << first.out;
  // A point per step: the cpu backend runs the 99 layers in at most 54 (fused convolutions).
  const size_t at = first.out.find(" steps: ");
  ASSERT_NE(at, std::string::npos) << first.out;
  const int steps = std::stoi(first.out.substr(first.out.rfind('\n', at) + 1, at));
  EXPECT_GE(steps, 30);
  EXPECT_LE(steps, 54);
  auto second = run_cli(args, env);
  ASSERT_EQ(second.code, 0) << describe(second);
  EXPECT_NE(second.out.find("; cached in "), std::string::npos) << second.out;
  const std::string csv = read_file(d.file("r.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), steps + 1);
  EXPECT_EQ(json::parse_file(d.file("r.json")).at("schema").get<std::string>(), "mnv2.roofline/1");
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

// mnv2 plan: the cuda planner for GPUs this machine does not have, printed.
TEST(CliPlan, PrintsTheStepsForEachGpuAndRefusesWhatItCannotRun) {
  // The default (auto) on sm_90: the block plan, with the rule that chose it.
  const auto h200 = run_cli({"plan", "--model", main_model_path(), "--gpu", "h200"});
  ASSERT_EQ(h200.code, 0) << describe(h200);
  EXPECT_NE(h200.out.find("cuda plan for NVIDIA H200 (sm_90, 132 SMs): batch 1, 224x224, fp32, fast, fusion auto -> "
                          "block, "),
            std::string::npos)
      << h200.out;
  EXPECT_NE(h200.out.find("fusion auto: block on sm_90, fp32, batch 1..256: measured fastest"), std::string::npos)
      << h200.out;
  EXPECT_NE(h200.out.find("[fused_block]"), std::string::npos) << h200.out;
  const auto per_layer = run_cli({"plan", "--model", main_model_path(), "--gpu", "h200", "--cuda-fusion", "none"});
  ASSERT_EQ(per_layer.code, 0) << describe(per_layer);
  EXPECT_NE(per_layer.out.find("cuda plan for NVIDIA H200 (sm_90, 132 SMs): batch 1, 224x224, fp32, fast, fusion "
                               "none, 54 steps"),
            std::string::npos)
      << per_layer.out;
  EXPECT_NE(per_layer.out.find("Conv2d 14 + ResidualAdd 15"), std::string::npos) << per_layer.out;
  const auto t4 =
      run_cli({"plan", "--model", main_model_path(), "--gpu", "t4", "--precision", "fp16", "--batch", "256"});
  ASSERT_EQ(t4.code, 0) << describe(t4);
  EXPECT_NE(t4.out.find("no cp.async below sm_80"), std::string::npos) << t4.out;
  EXPECT_NE(t4.out.find("fusion auto -> none, "), std::string::npos) << t4.out;
  EXPECT_NE(t4.out.find("no measurement of the plans on sm_75"), std::string::npos) << t4.out;
  EXPECT_NE(t4.out, h200.out);
  // tf32 needs sm_80 tensor cores: a runtime refusal (exit 1) naming why.
  const auto tf32 = run_cli({"plan", "--model", main_model_path(), "--gpu", "t4", "--precision", "tf32"});
  EXPECT_EQ(tf32.code, 1) << describe(tf32);
  EXPECT_EQ(run_cli({"plan", "--gpu", "v100"}).code, 2);
  EXPECT_EQ(run_cli({"plan", "--cuda-variant", "baseline", "--precision", "fp16"}).code, 2);
  const auto fused = run_cli({"plan", "--model", main_model_path(), "--cuda-fusion", "expand_dw"});
  ASSERT_EQ(fused.code, 0) << describe(fused);
  EXPECT_NE(fused.out.find("expand_depthwise"), std::string::npos) << fused.out;
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

// The cudnn flags: every command that takes the cuda flags takes them; a bad value is a usage error (exit 2)
// naming the accepted values, before any work.
TEST(CliCudnnOptions, BadValuesAreUsageErrorsNamingTheChoices) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bench", "--backend", "cpu", "--cudnn-variant", "turbo", "--iters", "1"},
        std::vector<std::string>{"profile", "--cudnn-graph", "sometimes"},
        std::vector<std::string>{"compare", "--backends", "cpu-ref,cpu", "--cudnn-layout", "nchwc"},
        std::vector<std::string>{"memory", "--backend", "cpu", "--cudnn-variant", "x"}}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("cudnn"), std::string::npos) << describe(r);
  }
  const auto variant = run_cli({"bench", "--backend", "cpu", "--cudnn-variant", "turbo"});
  EXPECT_NE(variant.err.find("fused, naive"), std::string::npos) << describe(variant);
  const auto help = run_cli({"bench", "--help"});
  EXPECT_EQ(help.code, 0) << describe(help);
  for (const char* flag : {"--cudnn-variant", "--cudnn-graph", "--cudnn-layout"})
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
}

}  // namespace
}  // namespace mnv2::test
