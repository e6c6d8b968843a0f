// Tests of the small engine utilities: JSON reading and writing (mnv2/json_io.h), statistics, tensor files, atomic
// writes, model lookup.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/model_lookup.h"
#include "mnv2/printable.h"
#include "mnv2/stats.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// The one escaper of text from files and names (issue 30): controls escaped, valid UTF-8 kept.
TEST(Printable, EscapesControlsAndKeepsValidUtf8) {
  EXPECT_EQ(printable("plain name.jpg"), "plain name.jpg");
  EXPECT_EQ(printable("a\x1b[2Jb\r\nc\td"), "a\\x1b[2Jb\\r\\nc\\td");
  EXPECT_EQ(printable(std::string("nul\0bel\x07"
                                  "del\x7f",
                                  12)),
            "nul\\x00bel\\x07del\\x7f");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x88"),
            "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x88");
  EXPECT_EQ(printable("csi\xc2\x9b"
                      "31m"),
            "csi\\u009b31m");  // U+009B, a C1 control some terminals obey
  EXPECT_EQ(printable("bad\xff\xc3(\xed\xa0\x80"), "bad\\xff\\xc3(\\xed\\xa0\\x80");  // not UTF-8: bytes
  EXPECT_EQ(printable("back\\slash"), "back\\slash");
}

TEST(Json, RoundTripKeepsOrderAndValues) {
  json::Json v;
  v["z"] = 1;
  v["a"] = "text with \"quotes\" and \n newline and \x01";
  v["pi"] = 3.141592653589793;
  v["big"] = int64_t{1} << 52;
  v["neg"] = -0.5e-7;
  v["list"] = json::Json::array({1, 2.5, nullptr, true});
  for (int indent : {-1, 2}) {
    const json::Json back = json::parse(json::dump(v, indent));
    ASSERT_EQ(back.size(), 6u);
    EXPECT_EQ(back.begin().key(), "z");  // insertion order, not sorted
    EXPECT_EQ(json::string_at(back, "a"), json::string_at(v, "a"));
    EXPECT_EQ(json::number_at(back, "pi"), 3.141592653589793);
    EXPECT_EQ(json::int_at(back, "big"), int64_t{1} << 52);
    EXPECT_EQ(json::number_at(back, "neg"), -0.5e-7);
    EXPECT_TRUE(json::array_at(back, "list")[2].is_null());
  }
}

TEST(Json, NonFiniteNumbersAreWrittenAsNull) {
  const json::Json v = {{"nan", std::nan("")}, {"inf", -HUGE_VAL}, {"one", 1.5}};
  EXPECT_EQ(json::dump(v), R"({"nan":null,"inf":null,"one":1.5})");
}

TEST(Json, UnicodeEscapes) {
  EXPECT_EQ(json::as_string(json::parse(R"("\u00e9\ud83d\ude00")")), "\xC3\xA9\xF0\x9F\x98\x80");
  // Bytes that are not UTF-8 (a Latin-1 file name) are replaced when written, never refused.
  EXPECT_EQ(json::dump(json::Json("caf\xE9")), "\"caf\xEF\xBF\xBD\"");
}

std::string parse_error(const std::string& text) {
  try {
    json::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Json, MalformedInputIsAnErrorNotACrash) {
  for (const char* bad : {"", "{", "[1,", "{\"a\" 1}", "tru", "01", "1.", "\"abc", "[1] 2", "{\"a\":}", "\"\\x\"",
                          "\"\\ud800\"", "-", "1e", "nan"}) {
    EXPECT_THROW(json::parse(bad), Error) << bad;
  }
  EXPECT_NE(parse_error("[1, 2,, 3]").find("at byte 6"), std::string::npos) << parse_error("[1, 2,, 3]");
  EXPECT_NE(parse_error("").find("unexpected end of input"), std::string::npos) << parse_error("");
  EXPECT_NE(parse_error("").find("at byte 0"), std::string::npos) << parse_error("");
  // Depth limit, not stack overflow; refused as soon as the limit is passed.
  EXPECT_NE(parse_error(std::string(100000, '[')).find("nesting deeper than 512"), std::string::npos);
  EXPECT_NO_THROW(json::parse(std::string(json::kMaxDepth, '[') + std::string(json::kMaxDepth, ']')));
  EXPECT_NE(parse_error(std::string(json::kMaxDepth + 1, '[') + std::string(json::kMaxDepth + 1, ']'))
                .find("nesting deeper than 512"),
            std::string::npos);
  EXPECT_NE(parse_error("1e999").find("number out of range"), std::string::npos) << parse_error("1e999");
}

TEST(Json, TypeMismatchesThrowNamingTheKey) {
  const json::Json v = json::parse(R"({"a": [1, 2], "b": 1.5, "c": 3.0, "d": 18446744073709551615})");
  EXPECT_THROW(json::string_at(v, "a"), Error);
  EXPECT_THROW(json::int_at(v, "b"), Error);
  EXPECT_EQ(json::int_at(v, "c"), 3);         // integral: an integer, as in reports written with a fraction
  EXPECT_THROW(json::int_at(v, "d"), Error);  // beyond int64
  EXPECT_EQ(json::find(v, "missing"), nullptr);
  EXPECT_THROW(json::find(json::Json(1), "a"), Error);  // not an object: an Error, not nlohmann's exception
  try {
    json::int_at(v, "b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "json: 'b': expected an integer");
  }
  try {
    json::at(v, "missing");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "json: missing key 'missing'");
  }
}

TEST(Json, FilesAreSizedBeforeTheyAreRead) {
  TempDir tmp;
  write_file(tmp.file("big.json"), "[" + std::string(2000, ' ') + "]");
  EXPECT_EQ(json::parse_file(tmp.file("big.json")).size(), 0u);
  try {
    json::parse_file(tmp.file("big.json"), InputBudget{"test file", 1000, 1 << 20, 100});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2002 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("big.json"), std::string::npos) << e.what();
  }
  write_file(tmp.file("bad.json"), "{\"a\": }");
  try {
    json::parse_file(tmp.file("bad.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: json: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at byte 6"), std::string::npos) << e.what();
  }
}

TEST(Json, ParsedMemoryAndStringsAreBoundedBeforeAnythingIsBuilt) {
  // 3 bytes of text per empty object: the shape that once took 40x its size in memory.
  std::string objects = "[";
  for (int i = 0; i < 100000; ++i) objects += i ? ",{}" : "{}";
  objects += "]";
  const int64_t estimate = json::parsed_size(objects);
  EXPECT_GT(estimate, 20 * static_cast<int64_t>(objects.size()));
  const InputBudget tight{"test file", 1 << 30, 4 << 20, 100};
  try {
    json::parse(objects, tight);
    FAIL() << "a document estimated at " << estimate << " bytes was parsed within 4 MiB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MiB of memory once parsed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(json::parse(objects, InputBudget{"test file", 1 << 30, 64 << 20, 100}).size(), 100000u);
  const std::string long_string = "{\"name\": \"" + std::string(101, 'n') + "\"}";
  try {
    json::parse(long_string, tight);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a string of 101 bytes"), std::string::npos) << e.what();
  }
  const std::string long_key = "{\"" + std::string(101, 'k') + "\": 1}";
  EXPECT_THROW(json::parse(long_key, tight), Error);
  // Malformed text keeps the parser's own message, whatever the budget.
  try {
    json::parse("[1, 2,", tight);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("json: "), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(json::parsed_size("[1, 2,"), -1);
}

TEST(Stats, PercentilesAreType7) {
  Summary s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);  // h = 4 * 0.9 = 3.6 -> 4 + 0.6 * (5 - 4)
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, 1e-12);
  EXPECT_EQ(summarize({}).n, 0);
  Summary one = summarize({7});
  EXPECT_EQ(one.median, 7);
  EXPECT_EQ(one.stddev, 0);
}

TEST(TensorFile, ReadsWholeImagesAndRejectsOtherSizes) {
  TempDir tmp;
  Tensor t(Shape{2, 3, 4, 5});
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(i) * 0.5f;
  write_tensor_file(tmp.file("x.f32"), t);
  Tensor back = read_tensor_file(tmp.file("x.f32"), Shape{1, 3, 4, 5});
  EXPECT_EQ(back.shape, (Shape{2, 3, 4, 5}));
  EXPECT_EQ(back.data, t.data);
  try {
    read_tensor_file(tmp.file("x.f32"), Shape{1, 3, 224, 224});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.f32"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("480 bytes"), std::string::npos) << e.what();
  }
  write_file(tmp.file("empty.f32"), "");
  EXPECT_THROW(read_tensor_file(tmp.file("empty.f32"), Shape{1, 3, 4, 5}), Error);
  EXPECT_THROW(read_tensor_file(tmp.file("missing.f32"), Shape{1, 3, 4, 5}), Error);
  Tensor nan_tensor(Shape{1, 3, 4, 5});
  nan_tensor.data[7] = NAN;
  write_tensor_file(tmp.file("nan.f32"), nan_tensor);
  EXPECT_THROW(read_tensor_file(tmp.file("nan.f32"), Shape{1, 3, 4, 5}), Error);
}

TEST(Compare, Figures) {
  const float a[] = {1, 2, 3}, ref[] = {1, 2, 4};
  ErrorStats s = compare(a, ref, 3);
  EXPECT_DOUBLE_EQ(s.max_abs, 1.0);
  EXPECT_NEAR(s.rel_l2, 1.0 / std::sqrt(21.0), 1e-12);
  EXPECT_NEAR(s.cosine, 17.0 / std::sqrt(14.0 * 21.0), 1e-12);
  const float bad[] = {1, NAN, 3};
  EXPECT_FALSE(compare(bad, ref, 3).finite);
}

// Sets (or, for std::nullopt, unsets) environment variables for one scope and restores them after.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::optional<std::string>>>& vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      set(name, value);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) set(it->first, it->second);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value)
      synced_setenv(name.c_str(), value->c_str(), 1);
    else
      synced_unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(ModelLookup, OrderOfPrecedence) {
  TempDir tmp;
  // The user's own data folders must not take part.
  ScopedEnv env({{"XDG_DATA_HOME", tmp.file("no-data-home")}, {"XDG_DATA_DIRS", tmp.file("no-data-dirs")}});
  std::filesystem::create_directories(tmp.file("bin/weights"));
  write_file(tmp.file("bin/weights/other.onnx"), "x");
  synced_unsetenv("MNV2_MODEL");
  ModelLocation folder = locate_model("", tmp.file("bin"));
  EXPECT_EQ(folder.path, tmp.file("bin/weights/other.onnx"));
  write_file(tmp.file("bin/weights/mobilenet_v2_1.0_224.onnx"), "x");
  EXPECT_EQ(locate_model("", tmp.file("bin")).path, tmp.file("bin/weights/mobilenet_v2_1.0_224.onnx"));

  write_file(tmp.file("env.onnx"), "x");
  synced_setenv("MNV2_MODEL", tmp.file("env.onnx").c_str(), 1);
  EXPECT_EQ(locate_model("", tmp.file("bin")).how, "MNV2_MODEL");
  EXPECT_EQ(locate_model(tmp.file("bin/weights/other.onnx"), tmp.file("bin")).how, "--model");
  synced_setenv("MNV2_MODEL", tmp.file("gone.onnx").c_str(), 1);
  EXPECT_THROW(locate_model("", tmp.file("bin")), Error);
  synced_unsetenv("MNV2_MODEL");
  EXPECT_THROW(locate_model(tmp.file("gone.onnx"), tmp.file("bin")), Error);

  TempDir empty;
  ModelLocation none = locate_model("", empty.path());
  EXPECT_TRUE(none.path.empty());
  EXPECT_EQ(none.how, "none");
  EXPECT_FALSE(none.searched.empty());
}

// After the weights folders: mnv2-profiler/ in $XDG_DATA_HOME (default ~/.local/share), then in each of
// $XDG_DATA_DIRS (default /usr/local/share:/usr/share), as an installed package finds a user's model.
TEST(ModelLookup, XdgDataFoldersComeAfterTheWeightsFolders) {
  TempDir tmp;
  const std::string home = tmp.file("home"), sys1 = tmp.file("sys1"), sys2 = tmp.file("sys2");
  ScopedEnv env({{"MNV2_MODEL", std::nullopt},
                 {"HOME", home},
                 {"XDG_DATA_HOME", std::nullopt},
                 {"XDG_DATA_DIRS", sys1 + ":relative/is/ignored::" + sys2}});
  std::filesystem::create_directories(tmp.file("bin"));
  const std::string user_dir = home + "/.local/share/mnv2-profiler";

  ModelLocation none = locate_model("", tmp.file("bin"));
  EXPECT_EQ(none.how, "none");
  ASSERT_EQ(none.searched.size(), 7u);  // four weights folders, then the three data folders
  EXPECT_EQ(none.searched[3], tmp.file("share/mnv2-profiler/weights"));
  EXPECT_EQ(none.searched[4], user_dir);
  EXPECT_EQ(none.searched[5], sys1 + "/mnv2-profiler");
  EXPECT_EQ(none.searched[6], sys2 + "/mnv2-profiler");

  // Each folder, once it holds a model, wins over the ones after it.
  std::filesystem::create_directories(sys2 + "/mnv2-profiler");
  write_file(sys2 + "/mnv2-profiler/b.onnx", "x");
  write_file(sys2 + "/mnv2-profiler/a.onnx", "x");
  ModelLocation found = locate_model("", tmp.file("bin"));
  EXPECT_EQ(found.path, sys2 + "/mnv2-profiler/a.onnx");  // the first by name
  EXPECT_EQ(found.how, "data folder " + sys2 + "/mnv2-profiler");
  std::filesystem::create_directories(sys1 + "/mnv2-profiler");
  write_file(sys1 + "/mnv2-profiler/m.onnx", "x");
  EXPECT_EQ(locate_model("", tmp.file("bin")).path, sys1 + "/mnv2-profiler/m.onnx");
  std::filesystem::create_directories(user_dir);
  write_file(user_dir + "/mine.onnx", "x");
  EXPECT_EQ(locate_model("", tmp.file("bin")).path, user_dir + "/mine.onnx");
  write_file(user_dir + "/mobilenet_v2_1.0_224.onnx", "x");  // the preferred name first
  EXPECT_EQ(locate_model("", tmp.file("bin")).path, user_dir + "/mobilenet_v2_1.0_224.onnx");
  std::filesystem::create_directories(tmp.file("bin/weights"));
  write_file(tmp.file("bin/weights/w.onnx"), "x");
  EXPECT_EQ(locate_model("", tmp.file("bin")).how, "weights folder " + tmp.file("bin/weights"));
  std::filesystem::remove_all(tmp.file("bin/weights"));

  // $XDG_DATA_HOME replaces ~/.local/share; a relative one is ignored (the specification says so).
  ScopedEnv::set("XDG_DATA_HOME", tmp.file("xdg"));
  std::filesystem::create_directories(tmp.file("xdg/mnv2-profiler"));
  write_file(tmp.file("xdg/mnv2-profiler/x.onnx"), "x");
  ModelLocation xdg = locate_model("", tmp.file("bin"));
  EXPECT_EQ(xdg.path, tmp.file("xdg/mnv2-profiler/x.onnx"));
  EXPECT_EQ(std::count(xdg.searched.begin(), xdg.searched.end(), user_dir), 0);
  ScopedEnv::set("XDG_DATA_HOME", "relative");
  EXPECT_EQ(locate_model("", tmp.file("bin")).path, user_dir + "/mobilenet_v2_1.0_224.onnx");

  // The defaults of $XDG_DATA_DIRS.
  ScopedEnv::set("XDG_DATA_DIRS", std::nullopt);
  std::filesystem::remove_all(home);
  ModelLocation defaults = locate_model("", tmp.file("bin"));
  ASSERT_GE(defaults.searched.size(), 2u);
  EXPECT_EQ(defaults.searched[defaults.searched.size() - 2], "/usr/local/share/mnv2-profiler");
  EXPECT_EQ(defaults.searched.back(), "/usr/share/mnv2-profiler");
}

}  // namespace
}  // namespace mnv2::test
