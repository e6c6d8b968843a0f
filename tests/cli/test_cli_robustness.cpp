// The real `mnv2` program over a table of hostile inputs: every bad image, model, tensor, labels file and
// command-line value ends with exit code 1 (bad file, runtime) or 2 (bad arguments), exactly one
// "error:" line on stderr naming the file and what is wrong, no signal and no hang (each run is limited to
// 60 s). Then what must keep working: odd-but-valid images, models with NaN weights (a warning on every
// output), and a run interrupted while it was to write a report (the old report survives whole).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "onnx_builder.h"
#include "test_support.h"

#ifdef MNV2_TEST_HAVE_IMGCODECS
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace mnv2::test {
namespace {

constexpr int kLimitS = 60;

std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    const std::string line = err.substr(start, end - start);
    if (line.rfind("error:", 0) == 0) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

// Files for the whole suite, made once.
class CliRobustness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const auto f = [](const std::string& name) { return dir_->file(name); };

    // Images.
    const std::string hot_dog = read_file(shared_path("images/hot_dog.jpg"));
    write_file(f("empty.jpg"), "");
    write_file(f("half.jpg"), hot_dog.substr(0, hot_dog.size() / 2));
    write_file(f("head.jpg"), hot_dog.substr(0, 100));
    std::mt19937 rng(7);
    std::string noise(4096, '\0');
    for (char& c : noise) c = static_cast<char>(rng() & 0xFF);
    write_file(f("noise.png"), noise);
    write_file(f("notes.jpg"), "This is a text file, not a photograph.\n");
    std::string bmp(54, '\0');
    bmp[0] = 'B';
    bmp[1] = 'M';
    auto put_le = [&](size_t at, uint32_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) bmp[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    };
    put_le(10, 54, 4);
    put_le(14, 40, 4);
    put_le(18, 40000, 4);
    put_le(22, 40000, 4);
    put_le(26, 1, 2);
    put_le(28, 24, 2);
    write_file(f("huge.bmp"), bmp);
    put_le(18, 16000, 4);
    put_le(22, 16000, 4);
    write_file(f("claims.bmp"), bmp);
    std::string dicom(140, '\0');
    dicom.replace(128, 4, "DICM");
    write_file(f("scan.png"), dicom);
    std::filesystem::create_directory(f("folder.jpg"));
    mkfifo(f("pipe.jpg").c_str(), 0600);

    // Models.
    const std::string model = read_file(main_model_path());
    write_file(f("empty.onnx"), "");
    write_file(f("truncated.onnx"), model.substr(0, model.size() / 3));
    write_file(f("random.onnx"), noise);
    write_file(f("notes.onnx"), "ir_version: 7\ngraph { node { op_type: \"Conv\" } }\n");
    std::filesystem::create_directory(f("folder.onnx"));
    mkfifo(f("pipe.onnx").c_str(), 0600);
    write_file(f("sparse.onnx"), "");
    std::filesystem::resize_file(f("sparse.onnx"), uintmax_t{3} << 30);  // 3 GiB of nothing, on no disk
    {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.conv("x", "c", 3, 4, 3, 2, 1);
      b.node("Sigmoid", {"c"}, {"s"}, "gate");
      b.classifier("s", 4, 10);
      b.save(f("unsupported_op.onnx"));
    }
    {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.init("w", {4, 5, 3, 3}, ramp(180));
      b.node("Conv", {"x", "w"}, {"c"}, "misfit");
      b.classifier("c", 4, 10);
      b.save(f("wrong_shape.onnx"));
    }
    {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.conv("x", "c", 3, 4, 3, 2, 1);
      b.node("Add", {"c", "nowhere"}, {"a"}, "haunted");
      b.classifier("a", 4, 10);
      b.save(f("dangling.onnx"));
    }
    {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.input("y", {-1, 3, -2, -2});
      b.node("Add", {"x", "y"}, {"z"});
      b.conv("z", "c", 3, 4, 3, 2, 1);
      b.classifier("c", 4, 10);
      b.save(f("two_inputs.onnx"));
    }
    {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.conv("x", "c1", 3, 4, 3, 2, 1);
      b.conv("c1", "c2", 4, 4, 1);
      b.output("c1");
      b.save(f("output_not_last.onnx"));
    }
    {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.node("Identity", {"x"}, {"y"});
      b.output("y");
      b.save(f("no_layers.onnx"));
    }
    {
      // A feature extractor: convolutions, no classifier. Loads and profiles; classify refuses it.
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.conv("x", "c1", 3, 8, 3, 2, 1);
      b.node("Relu", {"c1"}, {"r1"});
      b.conv("r1", "c2", 8, 8, 3, 2, 1);
      b.output("c2");
      b.save(f("features_only.onnx"));
    }
    {
      // NaN in the first convolution, +Inf in the classifier's bias: loads, runs, warns everywhere.
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.conv("x", "c", 3, 4, 3, 2, 1);
      b.init("lo", {}, {0.0f});
      b.init("hi", {}, {6.0f});
      b.node("Clip", {"c", "lo", "hi"}, {"r"});
      b.classifier("r", 4, 10);
      for (auto& t : *b.proto().mutable_graph()->mutable_initializer()) {
        if (t.name() == "c_w") t.set_float_data(3, std::numeric_limits<float>::quiet_NaN());
        if (t.name() == "fc_b") t.set_float_data(0, std::numeric_limits<float>::infinity());
      }
      b.save(f("nan_weights.onnx"));
    }
    // Preprocessing metadata out of range: the model's fault (exit 1, naming the file and the key).
    for (const auto& [name, entries] :
         std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>{
             {"crop_over_resize.onnx", {{"preprocess.resize", "200"}, {"preprocess.crop", "224"}}},
             {"absurd_mean_std.onnx",
              {{"preprocess.mean", "1e38,1e38,1e38"}, {"preprocess.std", "1e-38,1e-38,1e-38"}}}}) {
      OnnxBuilder b;
      b.input("x", {-1, 3, -2, -2});
      b.conv("x", "c", 3, 4, 3, 2, 1);
      b.classifier("c", 4, 10);
      for (const auto& [key, value] : entries) {
        auto* e = b.proto().add_metadata_props();
        e->set_key(key);
        e->set_value(value);
      }
      b.save(f(name));
    }

    // Tensors and labels.
    write_file(f("short.f32"), std::string(1000, '\0'));
    write_file(f("empty.f32"), "");
    std::string nan_tensor(3 * 224 * 224 * 4, '\0');
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(nan_tensor.data() + 400, &nan, 4);
    write_file(f("nan.f32"), nan_tensor);
    mkfifo(f("pipe.f32").c_str(), 0600);
    write_file(f("sparse.f32"), "");
    std::filesystem::resize_file(f("sparse.f32"), uintmax_t{70000} * 3 * 224 * 224 * 4);  // 42 GB, sparse
    write_file(f("blank_labels.txt"), "\n \n\t\n");
    write_file(f("two_labels.txt"), "cat\ndog\n");
    write_file(f("good_report.json"), "{}\n");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string file(const std::string& name) { return dir_->file(name); }

  static TempDir* dir_;
};
TempDir* CliRobustness::dir_ = nullptr;

struct Hostile {
  std::string what;               // the case, for failure messages
  std::vector<std::string> args;  // after the program name
  int code;                       // 1: runtime error, 2: usage error
  std::string names;              // the error line must hold this (a file name), "" for none
  std::string says;               // and this
  std::vector<std::string> env = {};
};

void check(const Hostile& h) {
  SCOPED_TRACE(h.what);
  const CliResult r = run_cli(h.args, h.env, MNV2_CLI_PATH, kLimitS);
  EXPECT_FALSE(r.signaled) << "killed by a signal: " << describe(r);
  EXPECT_NE(r.code, 124) << "did not finish within " << kLimitS << " s: " << describe(r);
  EXPECT_EQ(r.code, h.code) << describe(r);
  const std::vector<std::string> errors = error_lines(r.err);
  ASSERT_EQ(errors.size(), 1u) << "expected exactly one 'error:' line\n" << describe(r);
  if (!h.names.empty()) EXPECT_NE(errors[0].find(h.names), std::string::npos) << "not named: " << errors[0];
  EXPECT_NE(errors[0].find(h.says), std::string::npos) << "expected '" << h.says << "' in: " << errors[0];
}

TEST_F(CliRobustness, HostileImages) {
  MNV2_SKIP_WITHOUT_IMAGE_DECODING();  // the file-kind refusals alone: InputFiles (tests/unit/test_input_files.cpp)
  const std::string m = main_model_path();
  const std::vector<Hostile> cases = {
      {"an empty file", {"classify", "--model", m, file("empty.jpg")}, 1, file("empty.jpg"), "empty file"},
      {"a JPEG cut in half", {"classify", "--model", m, file("half.jpg")}, 1, file("half.jpg"), "truncated"},
      {"a JPEG cut in its header",
       {"classify", "--model", m, file("head.jpg")},
       1,
       file("head.jpg"),
       "not a decodable image"},
      {"random bytes", {"classify", "--model", m, file("noise.png")}, 1, file("noise.png"), "not a decodable image"},
      {"text with an image extension",
       {"classify", "--model", m, file("notes.jpg")},
       1,
       file("notes.jpg"),
       "not a decodable image"},
      {"a header claiming 40000x40000",
       {"classify", "--model", m, file("huge.bmp")},
       1,
       file("huge.bmp"),
       "larger than the 16384-pixel limit per side"},
      {"a header claiming 16000x16000 in 54 bytes",
       {"classify", "--model", m, file("claims.bmp")},
       1,
       file("claims.bmp"),
       "truncated BMP"},
      {"a DICOM signature (GDCM aborted on it)",
       {"classify", "--model", m, file("scan.png")},
       1,
       file("scan.png"),
       "unsupported format"},
      {"a directory", {"classify", "--model", m, file("folder.jpg")}, 1, file("folder.jpg"), "directory"},
      {"a FIFO (would block)", {"classify", "--model", m, file("pipe.jpg")}, 1, file("pipe.jpg"), "not a regular file"},
      {"a device (never ends)", {"classify", "--model", m, "/dev/zero"}, 1, "/dev/zero", "not a regular file"},
      {"a missing file", {"classify", "--model", m, file("absent.png")}, 1, file("absent.png"), "no such file"},
      {"a bad image among good ones",
       {"classify", "--model", m, shared_path("images/cat.bmp"), file("notes.jpg")},
       1,
       file("notes.jpg"),
       "not a decodable image"},
      {"a bad image for profile",
       {"profile", "--model", m, "--image", file("half.jpg"), "--iters", "1"},
       1,
       file("half.jpg"),
       "truncated"},
  };
  for (const auto& h : cases) check(h);
}

TEST_F(CliRobustness, HostileModels) {
  const std::string cat = shared_path("images/cat.bmp");
  std::vector<Hostile> cases;
  auto both = [&](const std::string& what, const std::string& name, const std::string& says) {
    cases.push_back({what + " (topology)", {"topology", "--model", file(name)}, 1, file(name), says});
    cases.push_back({what + " (classify)", {"classify", "--model", file(name), cat}, 1, file(name), says});
  };
  both("an empty file", "empty.onnx", "empty file");
  both("a truncated model", "truncated.onnx", "not a valid ONNX model");
  both("random bytes", "random.onnx", "not a valid ONNX model");
  both("protobuf text instead of binary", "notes.onnx", "not a valid ONNX model");
  both("a directory", "folder.onnx", "not a regular file");
  both("a FIFO (would block)", "pipe.onnx", "not a regular file");
  both("3 GiB (sparse)", "sparse.onnx", "external data files");
  both("an unsupported operator", "unsupported_op.onnx", "node 'gate' (Sigmoid)");
  both("a weight of the wrong shape", "wrong_shape.onnx", "node 'misfit' (Conv)");
  both("a dangling tensor name", "dangling.onnx", "input 'nowhere'");
  both("two inputs", "two_inputs.onnx", "2 non-weight inputs");
  both("an output that is not the last layer", "output_not_last.onnx", "not the last layer");
  both("no layers", "no_layers.onnx", "no layers");
  both("a crop larger than the resize", "crop_over_resize.onnx", "preprocess.crop");
  both("mean 1e38 and std 1e-38", "absurd_mean_std.onnx", "preprocess.mean");
  cases.push_back({"a missing model", {"topology", "--model", file("absent.onnx")}, 1, file("absent.onnx"), ""});
  cases.push_back({"a missing $MNV2_MODEL",
                   {"topology"},
                   1,
                   file("absent.onnx"),
                   "MNV2_MODEL",
                   {"MNV2_MODEL=" + file("absent.onnx")}});
  if (image_decoding_available())  // the model loads; the refusal comes after the image is decoded
    cases.push_back({"a network without a classifier, to classify",
                     {"classify", "--model", file("features_only.onnx"), cat},
                     1,
                     file("features_only.onnx"),
                     "not one score per class"});
  for (const auto& h : cases) check(h);

  // The feature extractor is still a network to inspect and time.
  for (const std::vector<std::string>& ok :
       {std::vector<std::string>{"topology", "--model", file("features_only.onnx")},
        std::vector<std::string>{"profile", "--model", file("features_only.onnx"), "--warmup", "0", "--iters", "2"}}) {
    const CliResult r = run_cli(ok, {}, MNV2_CLI_PATH, kLimitS);
    EXPECT_EQ(r.code, 0) << describe(r);
  }
}

TEST_F(CliRobustness, HostileTensorsLabelsAndOutputs) {
  const std::string m = main_model_path();
  const std::string cat = shared_path("images/cat.bmp");
  const std::vector<Hostile> cases = {
      {"a tensor of the wrong size",
       {"classify", "--model", m, "--tensor", file("short.f32")},
       1,
       file("short.f32"),
       "1000 bytes is not a whole number"},
      {"an empty tensor", {"classify", "--model", m, "--tensor", file("empty.f32")}, 1, file("empty.f32"), "0 bytes"},
      {"a tensor holding NaN", {"classify", "--model", m, "--tensor", file("nan.f32")}, 1, file("nan.f32"), "NaN"},
      {"a FIFO as tensor",
       {"classify", "--model", m, "--tensor", file("pipe.f32")},
       1,
       file("pipe.f32"),
       "not a regular file"},
      {"a missing tensor",
       {"classify", "--model", m, "--tensor", file("absent.f32")},
       1,
       file("absent.f32"),
       "no such file"},
      {"a 42 GB sparse tensor",
       {"classify", "--model", m, "--tensor", file("sparse.f32")},
       1,
       file("sparse.f32"),
       "at most 65536"},
      {"a tensor of the wrong size for profile",
       {"profile", "--model", m, "--tensor", file("short.f32")},
       1,
       file("short.f32"),
       "not a whole number"},
      {"an empty labels file",
       {"classify", "--model", m, "--labels", file("blank_labels.txt"), cat},
       1,
       file("blank_labels.txt"),
       "empty"},
      {"too few labels",
       {"classify", "--model", m, "--labels", file("two_labels.txt"), cat},
       1,
       file("two_labels.txt"),
       "2 labels for a model with 1001 classes"},
      {"a directory as labels",
       {"classify", "--model", m, "--labels", dir_->path(), cat},
       1,
       dir_->path(),
       "directory"},
      // Output paths are arguments, checked before any work: a usage error.
      {"a report into a missing folder",
       {"profile", "--model", m, "--iters", "1", "--warmup", "0", "--json", file("no/such/dir/r.json")},
       2,
       file("no/such/dir/r.json"),
       "does not exist"},
      {"a report onto a directory",
       {"bench", "--model", m, "--iters", "1", "--warmup", "0", "--json", dir_->path()},
       2,
       dir_->path(),
       "is a directory"},
      {"an empty report name",
       {"profile", "--model", m, "--iters", "1", "--warmup", "0", "--csv", ""},
       2,
       "",
       "empty output file name"},
  };
  for (const auto& h : cases) check(h);
  EXPECT_FALSE(std::filesystem::exists(file("no/such/dir/r.json")));
}

TEST_F(CliRobustness, ValuesOutOfRange) {
  const std::string m = main_model_path();
  const std::string cat = shared_path("images/cat.bmp");
  const std::vector<Hostile> cases = {
      {"batch 0", {"bench", "--model", m, "--batch", "0"}, 2, "", "--batch must be in 1..65536, got 0"},
      {"a negative batch", {"profile", "--model", m, "--batch", "-4"}, 2, "", "--batch must be in 1..65536"},
      {"batch 65537", {"bench", "--model", m, "--batch", "65537"}, 2, "", "--batch must be in 1..65536"},
      {"an empty batch in a list", {"bench", "--model", m, "--batch", "1,,2"}, 2, "", "--batch must be an integer"},
      {"a batch of words", {"topology", "--model", m, "--batch", "many"}, 2, "", "--batch must be an integer"},
      {"negative iterations", {"bench", "--model", m, "--iters", "-3"}, 2, "", "--iters must be in"},
      {"zero iterations", {"profile", "--model", m, "--iters", "0"}, 2, "", "--iters must be in"},
      {"1e9 iterations, written as 1e9",
       {"profile", "--model", m, "--iters", "1e9"},
       2,
       "",
       "--iters must be an integer"},
      {"1e9 iterations", {"bench", "--model", m, "--iters", "1000000000"}, 2, "", "--iters must be in 1..1000000"},
      {"iterations beyond 64 bits",
       {"bench", "--model", m, "--iters", "99999999999999999999999"},
       2,
       "",
       "--iters must be an integer"},
      {"a negative warm-up", {"profile", "--model", m, "--warmup", "-1"}, 2, "", "--warmup must be in"},
      {"an unknown backend", {"classify", "--model", m, "--backend", "tpu", cat}, 2, "", "tpu"},
      {"an unknown backend in a list", {"bench", "--model", m, "--backends", "cpu,tpu"}, 2, "", "tpu"},
      {"an unknown backend to compare", {"compare", "--model", m, "--backends", "cpu,quantum"}, 2, "", "quantum"},
      {"a 100000x100000 input",
       {"profile", "--model", m, "--input-size", "100000x100000"},
       2,
       "",
       "input height must be in 8..8192, got 100000"},
      {"a 1x1 input", {"bench", "--model", m, "--input-size", "1x1"}, 2, "", "input height must be in 8..8192"},
      {"a 0x224 input", {"topology", "--model", m, "--input-size", "0x224"}, 2, "", "must be in 8..8192"},
      {"a three-part input size", {"topology", "--model", m, "--input-size", "224x224x3"}, 2, "", "224x224"},
      {"half an input size", {"topology", "--model", m, "--input-size", "224x"}, 2, "", "must be an integer"},
      {"a 1x1 tensor input",
       {"classify", "--model", m, "--tensor", file("short.f32"), "--input-size", "1x1"},
       2,
       "",
       "input height must be in 8..8192"},
      {"top 0", {"classify", "--model", m, "--top", "0", cat}, 2, "", "--top must be in 1..100000, got 0"},
      {"top -1", {"classify", "--model", m, "--top", "-1", cat}, 2, "", "--top must be in"},
      {"an unknown precision", {"classify", "--model", m, "--precision", "fp64", cat}, 2, "", "fp64"},
      {"an unknown timer", {"profile", "--model", m, "--timing", "sundial"}, 2, "", "sundial"},
      {"an unknown format", {"topology", "--model", m, "--format", "xml"}, 2, "", "xml"},
      {"an unknown option", {"bench", "--model", m, "--turbo"}, 2, "", "--turbo"},
      {"an option without its value", {"bench", "--model", m, "--batch"}, 2, "", "--batch needs a value"},
      {"an option given twice", {"bench", "--model", m, "--iters", "1", "--iters", "2"}, 2, "", "given twice"},
      {"a bad thread count",
       {"bench", "--model", m, "--iters", "1"},
       2,
       "",
       "MNV2_CPU_THREADS",
       {"MNV2_CPU_THREADS=lots"}},
      {"zero threads", {"classify", "--model", m, cat}, 2, "", "MNV2_CPU_THREADS", {"MNV2_CPU_THREADS=0"}},
  };
  for (const auto& h : cases) check(h);
}

TEST_F(CliRobustness, ABatchTheMachineCannotHoldIsRefusedBeforeAllocating) {
  // 65536 images at 224x224 need hundreds of GiB of activations: refused from the plan, with the figure,
  // never attempted (zero-filling that much would get the process killed, not an error).
  const std::string m = main_model_path();
  const std::vector<Hostile> cases = {
      {"bench",
       {"bench", "--model", m, "--batch", "65536", "--warmup", "0", "--iters", "1"},
       1,
       "",
       "out of host memory for batch 65536"},
      {"profile",
       {"profile", "--model", m, "--batch", "65536", "--warmup", "0", "--iters", "1"},
       1,
       "",
       "out of host memory for batch 65536"},
      {"a huge input",
       {"profile", "--model", m, "--batch", "512", "--input-size", "8192x8192", "--iters", "1"},
       1,
       "",
       "out of host memory for batch 512 at 8192x8192"},
  };
  for (const auto& h : cases) {
    check(h);
    const CliResult r = run_cli(h.args, {}, MNV2_CLI_PATH, kLimitS);
    EXPECT_NE(r.err.find(" GiB"), std::string::npos) << describe(r);
  }
}

TEST_F(CliRobustness, NanWeightsWarnOnEveryOutput) {
  const std::string model = file("nan_weights.onnx");
  const std::string cat = shared_path("images/cat.bmp");
  const std::string warning = "contain NaN/Inf values: outputs are not meaningful";
  auto run_ok = [&](const std::vector<std::string>& args) {
    const CliResult r = run_cli(args, {}, MNV2_CLI_PATH, kLimitS);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(error_lines(r.err).empty()) << describe(r);
    EXPECT_NE(r.err.find("WARNING: weights of layer 0 (stem.conv"), std::string::npos) << describe(r);
    return r;
  };
  for (const char* format : {"table", "csv", "json"}) {
    SCOPED_TRACE(format);
    const CliResult r = run_ok({"topology", "--model", model, "--format", format});
    EXPECT_NE(r.out.find(warning), std::string::npos) << r.out;
  }
  if (image_decoding_available()) {
    const CliResult r = run_ok({"classify", "--model", model, cat});
    EXPECT_NE(r.out.find(warning), std::string::npos) << r.out;
  }
  if (image_decoding_available()) {
    const CliResult r = run_ok({"classify", "--model", model, "--json", cat});
    const json::Json j = json::parse(r.out);
    const auto& warnings = j.at(0).at("warnings");
    ASSERT_EQ(warnings.size(), 2u) << r.out;
    EXPECT_NE(warnings[0].get<std::string>().find(warning), std::string::npos);
  }
  {
    const CliResult r =
        run_ok({"bench", "--model", model, "--warmup", "0", "--iters", "2", "--json", file("nan_bench.json")});
    EXPECT_NE(r.out.find(warning), std::string::npos) << r.out;
    const json::Json j = json::parse_file(file("nan_bench.json"));
    EXPECT_EQ(j.at("model").at("warnings").size(), 2u);
  }
  {
    const CliResult r =
        run_ok({"profile", "--model", model, "--warmup", "0", "--iters", "2", "--json", file("nan_profile.json")});
    EXPECT_NE(r.out.find(warning), std::string::npos) << r.out;
    const json::Json j = json::parse_file(file("nan_profile.json"));
    const auto& warnings = j.at("runs").at(0).at("warnings");
    ASSERT_GE(warnings.size(), 2u);
    EXPECT_NE(warnings[0].get<std::string>().find(warning), std::string::npos);
  }
}

// Finite weights that overflow float when run (layer 1's weights are 1e38): classify still prints its
// ranking with exit 0, as for NaN weights, and says on stderr which layer first produced the NaN/Inf.
TEST_F(CliRobustness, NanLogitsNameTheFirstLayerThatProducedThem) {
  overflowing_classifier(10).save(file("overflow.onnx"));
  const std::vector<float> ones(3 * 8 * 8, 1.0f);
  write_file(file("ones.f32"), std::string(reinterpret_cast<const char*>(ones.data()), ones.size() * sizeof(float)));
  for (const char* json : {"", "--json"}) {
    SCOPED_TRACE(json);
    std::vector<std::string> args = {"classify", "--model",        file("overflow.onnx"), "--backend", "cpu-ref",
                                     "--tensor", file("ones.f32"), "--input-size",        "8x8"};
    if (*json) args.push_back(json);
    const CliResult r = run_cli(args, {}, MNV2_CLI_PATH, kLimitS);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(error_lines(r.err).empty()) << describe(r);
    EXPECT_NE(r.err.find("WARNING: outputs contain NaN/Inf; first produced by layer 1 ("), std::string::npos)
        << describe(r);
  }
}

#ifdef MNV2_TEST_HAVE_IMGCODECS
TEST_F(CliRobustness, OddButValidImagesClassify) {
  cv::Mat gray(40, 30, CV_8UC1), rgba(40, 30, CV_8UC4), deep(40, 30, CV_16UC3);
  cv::randu(gray, 0, 255);
  cv::randu(rgba, 0, 255);
  cv::randu(deep, 0, 65535);
  const std::vector<std::pair<std::string, cv::Mat>> images = {
      {"gray.png", gray},
      {"alpha.png", rgba},
      {"deep16.png", deep},
      {"one_pixel.png", cv::Mat(1, 1, CV_8UC3, cv::Scalar(20, 120, 220))},
      {"strip_1x5000.png", cv::Mat(5000, 1, CV_8UC3, cv::Scalar(20, 120, 220))},
      {"strip_5000x2.jpg", cv::Mat(2, 5000, CV_8UC3, cv::Scalar(20, 120, 220))},
  };
  std::vector<std::string> args = {"classify", "--model", main_model_path(), "--json"};
  for (const auto& [name, mat] : images) {
    ASSERT_TRUE(cv::imwrite(file(name), mat)) << name;
    args.push_back(file(name));
  }
  const CliResult r = run_cli(args, {}, MNV2_CLI_PATH, kLimitS);
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::Json j = json::parse(r.out);
  ASSERT_EQ(j.size(), images.size());
  for (const auto& result : j) EXPECT_EQ(result.at("top5").size(), 5u);
}
#endif

TEST_F(CliRobustness, AnInterruptedRunLeavesTheOldReportWhole) {
  // The report a previous run wrote, then a profile that would take hours, asked to replace it and
  // interrupted (SIGINT, as Ctrl-C) and then killed (SIGTERM) part-way.
  const std::string report = file("keep.json");
  write_file(report, "{\"previous\": \"report\"}\n");
  for (const char* sig : {"INT", "TERM"}) {
    SCOPED_TRACE(sig);
    const std::string cmd = "timeout -s " + std::string(sig) + " 3 " + shell_quote(MNV2_CLI_PATH) +
                            " profile --model " + shell_quote(main_model_path()) +
                            " --iters 1000000 --warmup 0 --json " + shell_quote(report) + " --csv " +
                            shell_quote(file("keep.csv")) + " >/dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_NE(status, 0);
    EXPECT_EQ(read_file(report), "{\"previous\": \"report\"}\n");
    EXPECT_FALSE(std::filesystem::exists(file("keep.csv")));
    for (const auto& e : std::filesystem::directory_iterator(dir_->path()))
      EXPECT_EQ(e.path().filename().string().find(".mnv2tmp-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace mnv2::test
