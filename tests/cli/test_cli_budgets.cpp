// Issue 30's findings 11-14 through the real `mnv2`, with the peak resident memory and the time of each run measured
// by GNU time (/usr/bin/time, Debian's package `time`, installed by scripts/install-deps.sh): sizes a model, its
// metadata or a command line declares are refused from the graph's shapes before any primitive or buffer is made;
// classify streams many files in bounded batches; eval's loader queue is cut to the memory the process may take.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_runner.h"
#include "mnv2/image.h"
#include "mnv2/json_io.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

constexpr const char* kTime = "/usr/bin/time";

struct Measured {
  CliResult r;
  double seconds = -1;
  int64_t peak_mib = -1;  // the whole process's peak resident memory
};

std::string describe(const Measured& m) {
  return mnv2::test::describe(m.r) + "\n" + std::to_string(m.seconds) + " s, peak " + std::to_string(m.peak_mib) +
         " MiB";
}

// `mnv2 ARGS` under GNU time, after the shell lines `limits` (e.g. "ulimit -v 4000000").
Measured run_measured(const std::vector<std::string>& args, const std::string& limits = "true", int timeout_s = 300) {
  TempDir tmp;
  const std::string figures = tmp.file("time.txt");
  std::vector<std::string> all = {
      "-c", limits + "; exec " + std::string(kTime) + " -f '%e %M' -o " + shell_quote(figures) + " \"$0\" \"$@\"",
      MNV2_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  Measured m;
  m.r = run_cli(all, {}, "bash", timeout_s);
  // GNU time writes "Command exited with non-zero status N" first where the program failed.
  const std::string text = read_file(figures);
  const size_t line = text.rfind('\n', text.size() >= 2 ? text.size() - 2 : 0);
  double seconds = 0;
  long long kib = 0;
  if (std::sscanf(text.c_str() + (line == std::string::npos ? 0 : line + 1), "%lf %lld", &seconds, &kib) == 2) {
    m.seconds = seconds;
    m.peak_mib = kib / 1024;
  }
  // The figures docs/LIMITS.md quotes come from these lines of a test log (docs/bench/limits-*).
  std::string line_args;
  for (size_t i = 0; i < args.size() && i < 14; ++i) {
    const std::string& a = args[i];
    line_args += " " + (a.find('/') != std::string::npos ? std::filesystem::path(a).filename().string() : a);
  }
  std::printf("[ measured ] exit %d, %.2f s, peak %lld MiB: mnv2%s%s%s\n", m.r.code, m.seconds,
              static_cast<long long>(m.peak_mib), line_args.c_str(), args.size() > 14 ? " ..." : "",
              limits.find("ulimit") != std::string::npos ? (" (under " + limits + ")").c_str() : "");
  return m;
}

#define SKIP_WITHOUT_GNU_TIME()            \
  if (::access(kTime, X_OK) != 0)          \
  GTEST_SKIP() << kTime << " is missing: " \
               << "these tests measure peak memory with GNU time (Debian package 'time', scripts/install-deps.sh)"

// A tiny classifier: one 3x3 convolution (3 -> `channels`, stride 1, pads `pad`) and a 10-class head, preprocessing
// `resize` / `crop` from its metadata (0: the default).
void tiny_model(const std::string& path, int64_t channels, int64_t pad, int resize, int crop,
                const std::vector<int64_t>& input = {-1, 3, -2, -2}) {
  OnnxBuilder b;
  b.input("x", input);
  b.conv("x", "c", 3, channels, 3, 1, pad);
  b.classifier("c", channels, 10);
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, int>>{{"preprocess.resize", resize}, {"preprocess.crop", crop}}) {
    if (value == 0) continue;
    auto* e = b.proto().add_metadata_props();
    e->set_key(key);
    e->set_value(std::to_string(value));
  }
  b.save(path);
}

// A side x side 24-bit BMP of a colour ramp.
std::string bmp(int side) {
  const int row = (side * 3 + 3) / 4 * 4;
  std::string b(54 + static_cast<size_t>(row) * side, '\0');
  auto put = [&](size_t at, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  b[0] = 'B';
  b[1] = 'M';
  put(2, static_cast<uint32_t>(b.size()), 4);
  put(10, 54, 4);
  put(14, 40, 4);
  put(18, static_cast<uint32_t>(side), 4);
  put(22, static_cast<uint32_t>(side), 4);
  put(26, 1, 2);
  put(28, 24, 2);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side * 3; ++x) b[54 + static_cast<size_t>(y) * row + x] = static_cast<char>((x * 7 + y) & 0xFF);
  return b;
}

// Finding 14: a 65,536-pixel input, a convolution padded by 60,000 pixels, and metadata that crops 16384x16384 are
// refused from the graph's shapes before any primitive or buffer is made: no memory taken, no minute spent.
TEST(CliBudgets, ModelDeclaredSizesAreRefusedFromTheGraphBeforeAnyWork) {
  SKIP_WITHOUT_GNU_TIME();
  TempDir tmp;
  // Channels enough that each needs terabytes, so that no machine a test runs on holds them.
  tiny_model(tmp.file("big_input.onnx"), 256, 1, 0, 0, {1, 3, 65536, 65536});  // 4.4 TB
  tiny_model(tmp.file("huge_pads.onnx"), 256, 60000, 0, 0);      // 14.8 TB; the importer takes pads up to 65536
  tiny_model(tmp.file("big_crop.onnx"), 4096, 1, 16384, 16384);  // 4.4 TB
  const std::string cat = shared_path("images/cat.bmp");
  struct Case {
    std::string what;
    std::vector<std::string> args;
  };
  std::vector<Case> cases;
  for (const char* backend : {"cpu", "cpu-ref"}) {
    const std::string b = backend;
    cases.push_back(
        {"memory of a 65536x65536 input, " + b, {"memory", "--model", tmp.file("big_input.onnx"), "--backend", b}});
    cases.push_back(
        {"bench of a 65536x65536 input, " + b,
         {"bench", "--model", tmp.file("big_input.onnx"), "--backend", b, "--warmup", "0", "--iters", "1"}});
    cases.push_back(
        {"profile of pads of 60000, " + b,
         {"profile", "--model", tmp.file("huge_pads.onnx"), "--backend", b, "--warmup", "0", "--iters", "1"}});
    if (image_decoding_available()) {
      cases.push_back({"classify through pads of 60000, " + b,
                       {"classify", "--model", tmp.file("huge_pads.onnx"), "--backend", b, cat}});
      cases.push_back({"classify with a 16384x16384 crop, " + b,
                       {"classify", "--model", tmp.file("big_crop.onnx"), "--backend", b, cat}});
      cases.push_back({"profile of a photograph with a 16384x16384 crop, " + b,
                       {"profile", "--model", tmp.file("big_crop.onnx"), "--backend", b, "--image", cat, "--warmup",
                        "0", "--iters", "1"}});
    }
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Measured m = run_measured(c.args, "true", 120);
    EXPECT_EQ(m.r.code, 1) << describe(m);
    EXPECT_NE(m.r.err.find("out of host memory"), std::string::npos) << describe(m);
    EXPECT_NE(m.r.err.find(" GiB"), std::string::npos) << describe(m);
    // The program, its libraries and the model: no buffer of the sizes declared (before: 6.2 GB for the crop).
    EXPECT_GT(m.peak_mib, 0) << describe(m);
    EXPECT_LT(m.peak_mib, 400) << describe(m);
    // A hang guard only (the figures are in docs/LIMITS.md): before, oneDNN took 55-70 s creating primitives.
    EXPECT_LT(m.seconds, 60) << describe(m);
  }
}

// Finding 13: a progressive JPEG of 5,000 empty scans over a 16384x16384 gray frame (before: 71 s and 1.1 GB, exit 0)
// and a TIFF whose sides are SSHORT / SLONG (before: decoded to 2.7 GB, then refused) are refused from their headers.
TEST(CliBudgets, ImagesWhoseWorkHidesInTheirHeadersAreRefusedBeforeDecoding) {
  SKIP_WITHOUT_GNU_TIME();
  if (!image_decoding_available()) GTEST_SKIP() << "this build decodes no image files";
  TempDir tmp;
  std::string jpeg("\xFF\xD8", 2);
  jpeg += std::string("\xFF\xC2\x00\x0B\x08\x40\x00\x40\x00\x01\x01\x11\x00", 13);  // SOF2 16384x16384 gray
  for (int i = 0; i < 5000; ++i) jpeg += std::string("\xFF\xDA\x00\x08\x01\x01\x00\x01\x3F\x00\x00", 11);
  write_file(tmp.file("scans.jpg"), jpeg + std::string("\xFF\xD9", 2));
  auto tiff = [](uint16_t type, uint32_t side) {
    std::string t(64, '\0');
    auto put = [&](size_t at, uint32_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) t[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    };
    t.replace(0, 4, std::string("II\x2a\x00", 4));
    put(4, 8, 4);
    put(8, 2, 2);
    for (int e = 0; e < 2; ++e) {
      put(10 + 12 * e, 256 + e, 2);
      put(12 + 12 * e, type, 2);
      put(14 + 12 * e, 1, 4);
      put(18 + 12 * e, side, type == 8 ? 2 : 4);
    }
    return t;
  };
  write_file(tmp.file("sshort.tif"), tiff(8, 30000));
  write_file(tmp.file("slong.tif"), tiff(9, 30000));
  const std::string model = main_model_path();
  for (const auto& [file, part] : std::vector<std::pair<std::string, std::string>>{
           {"scans.jpg", "a JPEG of more than 100 scans"},
           {"sshort.tif", "30000x30000, larger than the 16384-pixel limit"},
           {"slong.tif", "30000x30000, larger than the 16384-pixel limit"}}) {
    SCOPED_TRACE(file);
    const Measured m = run_measured({"classify", "--model", model, tmp.file(file)}, "true", 120);
    EXPECT_EQ(m.r.code, 1) << describe(m);
    EXPECT_NE(m.r.err.find(part), std::string::npos) << describe(m);
    EXPECT_LT(m.peak_mib, 400) << describe(m);
    EXPECT_LT(m.seconds, 60) << describe(m);  // a hang guard only
  }
}

// Finding 12: classify of many files streams them through one network in batches of at most --batch (32 by default):
// the peak for 6,000 inputs is within 64 MiB of the peak for 64 (before: one batch of 6,000).
TEST(CliBudgets, ClassifyStreamsManyFilesInBoundedBatches) {
  SKIP_WITHOUT_GNU_TIME();
  TempDir tmp;
  tiny_model(tmp.file("tiny.onnx"), 16, 1, 64, 64);
  auto peak_of = [&](const std::vector<std::string>& args, int64_t expected_images,
                     const std::string& limits = "true") {
    const Measured m = run_measured(args, limits, 600);
    EXPECT_EQ(m.r.code, 0) << describe(m);
    const json::Json j = json::parse(m.r.out);
    EXPECT_EQ(static_cast<int64_t>(j.size()), expected_images);
    return m.peak_mib;
  };
  // A tensor file of N preprocessed 3x64x64 images (48 KiB each).
  auto tensor_file = [&](int64_t images) {
    const std::string path = tmp.file("t" + std::to_string(images) + ".f32");
    std::vector<float> one(3 * 64 * 64);
    for (size_t i = 0; i < one.size(); ++i) one[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
    std::string bytes;
    for (int64_t i = 0; i < images; ++i) bytes.append(reinterpret_cast<const char*>(one.data()), one.size() * 4);
    write_file(path, bytes);
    return path;
  };
  const std::vector<std::string> base = {"classify",  "--model", tmp.file("tiny.onnx"),
                                         "--backend", "cpu-ref", "--json"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  {
    SCOPED_TRACE("a tensor file");
    const int64_t small = peak_of(with(base, {"--input-size", "64", "--tensor", tensor_file(64)}), 64);
    const int64_t large = peak_of(with(base, {"--input-size", "64", "--tensor", tensor_file(6000)}), 6000);
    EXPECT_LE(large, small + 64) << "6000 images: " << large << " MiB, 64 images: " << small << " MiB";
  }
  if (image_decoding_available()) {
    SCOPED_TRACE("image files");
    write_file(tmp.file("p.bmp"), bmp(80));
    // Named from the folder (cd first): 6,000 full paths would pass the kernel's 128 KiB limit on one argument of
    // the shell that runs the command.
    auto files = [&](int n) { return std::vector<std::string>(static_cast<size_t>(n), "p.bmp"); };
    const int64_t small = peak_of(with(base, files(64)), 64, "cd " + shell_quote(tmp.path()));
    const int64_t large = peak_of(with(base, files(6000)), 6000, "cd " + shell_quote(tmp.path()));
    EXPECT_LE(large, small + 64) << "6000 files: " << large << " MiB, 64 files: " << small << " MiB";
  }
}

// Every image's result comes out whatever the batches: the same logits for one file alone, in a batch of 3 and
// streamed one at a time; an unreadable file among others is named and the rest are classified (exit 1).
TEST(CliBudgets, StreamedBatchesGiveTheSameResults) {
  if (!image_decoding_available()) GTEST_SKIP() << "this build decodes no image files";
  TempDir tmp;
  tiny_model(tmp.file("tiny.onnx"), 16, 1, 64, 64);
  write_file(tmp.file("p.bmp"), bmp(80));
  write_file(tmp.file("q.bmp"), bmp(70));
  write_file(tmp.file("bad.bmp"), "BM not an image");
  const std::vector<std::string> base = {"classify",  "--model", tmp.file("tiny.onnx"),
                                         "--backend", "cpu-ref", "--json"};
  auto run = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return run_cli(a, {}, MNV2_CLI_PATH, 120);
  };
  const std::string p = tmp.file("p.bmp"), q = tmp.file("q.bmp");
  const CliResult whole = run({p, q, p});
  ASSERT_EQ(whole.code, 0) << describe(whole);
  const json::Json a = json::parse(whole.out);
  for (const char* batch : {"1", "2"}) {
    SCOPED_TRACE(std::string("--batch ") + batch);
    const CliResult streamed = run({"--batch", batch, p, q, p});
    ASSERT_EQ(streamed.code, 0) << describe(streamed);
    const json::Json b = json::parse(streamed.out);
    ASSERT_EQ(b.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(b[i].at("input"), a[i].at("input"));
      ASSERT_EQ(b[i].at("top5").size(), a[i].at("top5").size());
      for (size_t k = 0; k < a[i].at("top5").size(); ++k)
        EXPECT_EQ(b[i].at("top5")[k].at("index"), a[i].at("top5")[k].at("index"));
      ASSERT_EQ(b[i].at("logits").size(), a[i].at("logits").size());
      for (size_t k = 0; k < a[i].at("logits").size(); ++k)
        EXPECT_NEAR(b[i].at("logits")[k].get<double>(), a[i].at("logits")[k].get<double>(), 1e-5);
    }
  }
  const CliResult mixed = run({"--batch", "2", p, tmp.file("bad.bmp"), q});
  EXPECT_EQ(mixed.code, 1) << describe(mixed);
  const json::Json m = json::parse(mixed.out);  // still one whole JSON document
  ASSERT_EQ(m.size(), 2u) << mixed.out;
  EXPECT_EQ(m[0].at("input"), p);
  EXPECT_EQ(m[1].at("input"), q);
  EXPECT_NE(mixed.err.find("error: " + tmp.file("bad.bmp") + ": "), std::string::npos) << mixed.err;
  // (OpenCV's BMP reader prints its own "imdecode_(''): can't read header" to std::cerr: not one of our lines.)
  size_t error_lines = 0;
  for (size_t at = 0; (at = mixed.err.find("\nerror: ", at)) != std::string::npos; ++at) ++error_lines;
  if (mixed.err.rfind("error: ", 0) == 0) ++error_lines;
  EXPECT_EQ(error_lines, 1u) << "one error line per unreadable file\n" << mixed.err;
  write_file(tmp.file("worse.bmp"), "BM nor is this");
  const CliResult two = run({tmp.file("bad.bmp"), p, tmp.file("worse.bmp")});
  EXPECT_EQ(two.code, 1) << describe(two);
  EXPECT_EQ(json::parse(two.out).size(), 1u) << two.out;
  EXPECT_NE(two.err.find("error: " + tmp.file("worse.bmp") + ": "), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("2 of 3 images could not be read (each named above); the others were classified"),
            std::string::npos)
      << two.err;
}

// Finding 11: eval of 20,000 images at --threads 256 (257 batches ahead asked) under a 3 GiB address-space limit, the
// loaders faster than inference: the loader queue is cut to what the process may take before any image is read,
// said in a note, and the evaluation completes inside the limit with no image skipped. Before, 256 loaders claimed
// all 20 batches at once (4 GB with the network's 0.7 GB) and, under the limit, failed (the run with
// --batch 4096 at 224x224 on a machine without the limit: killed by the OOM killer at 23.8 GB after 65 s).
TEST(CliBudgets, EvalLoaderQueueIsCutToTheMemoryTheProcessMayTake) {
  SKIP_WITHOUT_GNU_TIME();
  TempDir tmp;
  tiny_model(tmp.file("tiny.onnx"), 4, 1, 128, 128);  // 192 KiB per preprocessed image, 201 MB per batch of 1024
  std::filesystem::create_directory(tmp.file("images"));
  std::vector<float> one(3 * 128 * 128);
  for (size_t i = 0; i < one.size(); ++i) one[i] = static_cast<float>(i % 89) / 89.0f - 0.5f;
  write_file(tmp.file("images/x.f32"), std::string(reinterpret_cast<const char*>(one.data()), one.size() * 4));
  std::string list;
  for (int i = 0; i < 20000; ++i) list += "x.f32 3\n";
  write_file(tmp.file("list.txt"), list);
  const std::vector<std::string> args = {"eval",
                                         "--model",
                                         tmp.file("tiny.onnx"),
                                         "--backend",
                                         "cpu",
                                         "--images",
                                         tmp.file("images"),
                                         "--list",
                                         tmp.file("list.txt"),
                                         "--batch",
                                         "1024",
                                         "--threads",
                                         "256"};
  const int64_t limit_kib = 3 * 1024 * 1024;
  // Two compute threads whatever the machine: OpenMP's stacks on a many-core machine would take the address space.
  const Measured m =
      run_measured(args, "export MNV2_CPU_THREADS=2 OMP_NUM_THREADS=2; ulimit -v " + std::to_string(limit_kib), 600);
  EXPECT_EQ(m.r.code, 0) << describe(m);
  EXPECT_NE(m.r.out.find("20000 images"), std::string::npos) << describe(m);
  EXPECT_NE(m.r.out.find(", 0 skipped as unreadable"), std::string::npos) << describe(m);
  EXPECT_NE(m.r.out.find("note: the image loader queue was cut from 257 batches ahead and 256 threads"),
            std::string::npos)
      << describe(m);
  EXPECT_LT(m.peak_mib, limit_kib / 1024) << describe(m);
  if (const size_t at = m.r.out.find("note: "); at != std::string::npos)
    std::printf("[ measured ] %s\n", m.r.out.substr(at, m.r.out.find('\n', at) - at).c_str());
}

}  // namespace
}  // namespace mnv2::test
