// `mnv2 bench --with FILE` and `--show FILE`: saved mnv2.bench/1 results (ours, the PyTorch anchor's) beside
// fresh ones or alone, and bad files refused before anything runs or prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

const std::string kAnchor = std::string(MNV2_TEST_DATA_DIR) + "/bench/pytorch-anchor-h200-excerpt.json";

// A fixture the test writes (test_support: never taken for a report the program wrote).
void write_text(const std::string& path, const std::string& text) { write_file(path, text); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CliBenchFiles, ShowPrintsASavedFileAndRunsNothing) {
  TempDir tmp;
  const json::Json file = json::parse_file(kAnchor);
  auto r = run_cli({"bench", "--show", kAnchor, "--csv", tmp.file("show.csv"), "--json", tmp.file("show.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("saved: " + kAnchor + ": 4 result(s) of pytorch"), std::string::npos) << r.out;
  // One row per record, grouped by precision (the file holds two), with the file's device-resident medians.
  EXPECT_EQ(count(r.out, "\npytorch "), 4u) << r.out;
  EXPECT_NE(r.out.find("-- pytorch, input 224x224, fp16\n"), std::string::npos) << r.out;
  for (const json::Json& rec : file.at("results")) {
    char dev[32];
    std::snprintf(dev, sizeof dev, "%.3f", rec.at("device_resident_median_ms").get<double>());
    EXPECT_NE(r.out.find(dev), std::string::npos) << dev << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("reliability"), std::string::npos) << "the anchor's file records no findings: no verdict";
  // The outputs carry the saved records, marked by their backend, and read back.
  const json::Json out = json::parse_file(tmp.file("show.json"));
  ASSERT_EQ(out.at("results").size(), 4u);
  EXPECT_EQ(out.at("results")[0].at("backend"), "pytorch");
  EXPECT_EQ(out.at("model").at("checksum"), file.at("model").at("checksum"));
  EXPECT_EQ(
      count(read_file(tmp.file("show.csv")), "\n\"pytorch\"") + count(read_file(tmp.file("show.csv")), "\npytorch,"),
      4u)
      << read_file(tmp.file("show.csv"));
}

TEST(CliBenchFiles, WithShowsSavedRowsBesideFreshOnes) {
  TempDir tmp;
  auto r = run_cli({"bench", "--model", main_model_path(), "--batch", "1", "--warmup", "0", "--iters", "2", "--with",
                    kAnchor, "--json", tmp.file("both.json"), "--csv", tmp.file("both.csv")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("\ncpu "), std::string::npos) << r.out;
  EXPECT_EQ(count(r.out, "\npytorch "), 4u) << r.out;
  EXPECT_NE(r.out.find("saved: " + kAnchor), std::string::npos) << r.out;
  // The anchor's file was written while model checksums were FNV-1a: whether it is this model is unknown, which
  // is said, and no warning.
  EXPECT_EQ(r.out.find("WARNING"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: " + kAnchor + "'s model checksum (fnv1a64:dba58d2a476a8c2e) is of another algorithm"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cpu batch 1 224x224: reliability: "), std::string::npos) << r.out;
  const json::Json out = json::parse_file(tmp.file("both.json"));
  ASSERT_EQ(out.at("results").size(), 5u);
  EXPECT_EQ(out.at("results")[0].at("backend"), "cpu");
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(out.at("results")[i].at("backend"), "pytorch");
  EXPECT_EQ(count(read_file(tmp.file("both.csv")), "\n") - 1, 5u);

  // The same file with the model's SHA-256 (`sha256sum` of the shared model): this model, nothing said; another
  // model than the file's: said in a warning.
  json::Json file = json::parse_file(kAnchor);
  file["model"]["checksum"] = "sha256:c29da1d5a35febf4084409fa92f1c495a39e39e1da57dda26e5a3930b83f94dd";
  const std::string sha_anchor = tmp.file("anchor-sha256.json");
  write_text(sha_anchor, json::dump(file, 2));
  auto same = run_cli(
      {"bench", "--model", main_model_path(), "--batch", "1", "--warmup", "0", "--iters", "2", "--with", sha_anchor});
  ASSERT_EQ(same.code, 0) << describe(same);
  EXPECT_EQ(same.out.find("WARNING"), std::string::npos) << same.out;
  EXPECT_EQ(same.out.find("note: " + sha_anchor), std::string::npos) << same.out;
  auto other = run_cli({"bench", "--model", torchvision_model_path(), "--batch", "1", "--warmup", "0", "--iters", "2",
                        "--with", sha_anchor});
  ASSERT_EQ(other.code, 0) << describe(other);
  EXPECT_NE(other.out.find("WARNING: " + sha_anchor + " was measured on another model"), std::string::npos)
      << other.out;
}

TEST(CliBenchFiles, BadFilesAreRefusedBeforeAnythingRuns) {
  TempDir tmp;
  std::string text = read_file(kAnchor);
  // A required key gone from the second record.
  json::Json j = json::parse(text);
  j.at("results")[1].erase("median_ms");
  write_text(tmp.file("missing.json"), json::dump(j, 2));
  // Cut in the middle; another schema; a figure that is not a number.
  write_text(tmp.file("cut.json"), text.substr(0, text.size() / 2));
  write_text(tmp.file("report.json"), R"({"schema": "mnv2.report", "schema_version": 1, "runs": []})");
  json::Json nan = json::parse(text);
  nan.at("results")[0]["device_resident_median_ms"] = "fast";
  write_text(tmp.file("text.json"), json::dump(nan, 2));
  const std::pair<std::string, std::string> cases[] = {
      {"missing.json", "result 1: json: missing key 'median_ms'"},
      {"cut.json", "json:"},
      {"report.json", "not an mnv2 bench file"},
      {"text.json", "result 0: json: 'device_resident_median_ms': expected a number"},
      {"absent.json", "absent.json"}};
  for (const auto& [name, message] : cases) {
    for (const char* option : {"--show", "--with"}) {
      SCOPED_TRACE(std::string(option) + " " + name);
      std::vector<std::string> args = {"bench", option, tmp.file(name), "--json", tmp.file("out.json")};
      if (std::string(option) == "--with")
        args.insert(args.end(), {"--model", main_model_path(), "--warmup", "0", "--iters", "1"});
      auto r = run_cli(args);
      EXPECT_EQ(r.code, 1) << describe(r);
      EXPECT_EQ(r.out, "") << "nothing printed before the refusal";
      EXPECT_NE(r.err.find("error: " + tmp.file(name)), std::string::npos) << describe(r);
      EXPECT_NE(r.err.find(message), std::string::npos) << describe(r);
      EXPECT_EQ(count(r.err, "\n"), 1u) << "one line: " << r.err;
      EXPECT_FALSE(std::filesystem::exists(tmp.file("out.json")));
    }
  }
}

TEST(CliBenchFiles, ShowRefusesRunOptions) {
  for (const char* option : {"--backends", "--batch", "--with"}) {
    auto r = run_cli({"bench", "--show", kAnchor, option, "1"});
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find(std::string("--show prints saved files and runs nothing: ") + option), std::string::npos)
        << describe(r);
    EXPECT_EQ(r.out, "");
  }
  auto empty = run_cli({"bench", "--show", kAnchor + ","});
  EXPECT_EQ(empty.code, 2) << describe(empty);
}

}  // namespace
}  // namespace mnv2::test
