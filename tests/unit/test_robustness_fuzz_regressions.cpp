// Replays the fuzzers' seed corpora (tests/fuzz/corpus/<target>/) and every input they ever found a problem
// with (tests/fuzz/regressions/<target>/) through the same entry points as the libFuzzer targets, so that a
// fixed finding stays fixed in the normal build: each file must be accepted or refused with an
// mnv2::Error, never crash, throw anything else or give an inconsistent result.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fuzz_entry_points.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct Tally {
  int accepted = 0, refused = 0;
};

Tally replay(const std::string& target, const std::function<fuzz::Outcome(const uint8_t*, size_t)>& entry,
             const std::string& kind) {
  Tally t;
  for (const fs::path& file : files_under(fs::path(MNV2_FUZZ_DIR) / kind / target)) {
    SCOPED_TRACE(file.string());
    const std::string bytes = read_file(file.string());
    try {
      const fuzz::Outcome o = entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      (o == fuzz::Outcome::accepted ? t.accepted : t.refused) += 1;
    } catch (const std::exception& e) {
      ADD_FAILURE() << file.string() << ": " << e.what();
    }
  }
  std::printf("[ replay   ] %s/%s: %d accepted, %d refused\n", kind.c_str(), target.c_str(), t.accepted, t.refused);
  return t;
}

TEST(FuzzRegressions, OnnxImport) {
  const Tally seeds = replay("onnx_import", fuzz::onnx_import, "corpus");
  EXPECT_GE(seeds.accepted, 5) << "the seed models should load";
  replay("onnx_import", fuzz::onnx_import, "regressions");
}

// The fuzzed model is a memfd (/proc/self/fd/N): its external data resolves in the entry point's scratch
// folder, never beside the memfd (among this process's open files) and never outside the scratch folder.
TEST(FuzzRegressions, OnnxImportReadsExternalDataOnlyInItsScratchFolder) {
  auto outcome = [](const std::string& location) {
    OnnxBuilder b(20, 10);
    b.input("x", {1, 2, 4, 4});
    b.init("w", {3, 2, 1, 1}, {});
    OnnxBuilder::external_entries(*b.find_init("w"), {{"location", location}, {"offset", "0"}, {"length", "24"}});
    b.node("Conv", {"x", "w"}, {"y"}, "conv");
    b.output("y");
    const std::string bytes = b.bytes();
    return fuzz::onnx_import(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  };
  EXPECT_EQ(outcome(fuzz::kScratchDataFile), fuzz::Outcome::accepted);
  EXPECT_NE(fuzz::scratch_dir().rfind("/proc", 0), 0u) << fuzz::scratch_dir();

  TempDir outside;
  write_file(outside.file("w.bin"), std::string(24, '\0'));
  const std::string memfd_number = fuzz::input_path().substr(fuzz::input_path().rfind('/') + 1);
  for (const std::string& location :
       {outside.file("w.bin"), "../" + outside.file("w.bin"), memfd_number, std::string("0"), fuzz::input_path()}) {
    SCOPED_TRACE(location);
    EXPECT_EQ(outcome(location), fuzz::Outcome::refused);
  }
}

TEST(FuzzRegressions, ImageDecode) {
  const Tally seeds = replay("image_decode", fuzz::image_decode, "corpus");
#ifdef MNV2_TEST_HAVE_IMGCODECS
  EXPECT_GE(seeds.accepted, 8) << "the seed images should decode";
#else
  EXPECT_EQ(seeds.accepted, 0) << "this build decodes no images";
#endif
  replay("image_decode", fuzz::image_decode, "regressions");
}

TEST(FuzzRegressions, ReportReader) {
  const Tally seeds = replay("report_reader", fuzz::report_reader, "corpus");
  EXPECT_GE(seeds.accepted, 2) << "the seed report and the seed bench file (mnv2.bench/1) should read";
  replay("report_reader", fuzz::report_reader, "regressions");
}

TEST(FuzzRegressions, OutputSet) {
  const Tally seeds = replay("output_set", fuzz::output_set, "corpus");
  EXPECT_GE(seeds.accepted, 1) << "some seed sets should commit";
  EXPECT_GE(seeds.refused, 1) << "some seed sets should be refused";
  replay("output_set", fuzz::output_set, "regressions");
}

TEST(FuzzRegressions, EvalList) {
  const Tally seeds = replay("eval_list", fuzz::eval_list, "corpus");
  EXPECT_GE(seeds.accepted, 3) << "the seed lists with names beneath the folder should read";
  EXPECT_GE(seeds.refused, 2) << "the seed lists naming /etc/shadow and ../ should be refused";
  replay("eval_list", fuzz::eval_list, "regressions");
}

}  // namespace
}  // namespace mnv2::test
