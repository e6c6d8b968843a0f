// Issue 30 through the real `mnv2`: an output that is one of the command's inputs is refused before any work,
// a read-only target is refused as root too, a file-size limit and a full standard output are clean errors, a
// thread limit is our error line (not libgomp's), and names from files reach the terminal escaped.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_runner.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;

// A run that would take hours: it ending within the limit proves the refusal came before any work.
std::vector<std::string> endless_profile(const std::string& model) {
  return {"profile", "--model", model, "--backend", "cpu-ref", "--warmup", "0", "--iters", "1000000"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// `mnv2 ARGS` run by `bash -c SCRIPT` where SCRIPT ends with `exec "$0" "$@"` (a limit set first).
CliResult run_under(const std::string& script, const std::vector<std::string>& args, int timeout_s = 120,
                    const std::string& prefix_exe = "") {
  std::vector<std::string> all = {"-c", script + "; exec \"$0\" \"$@\"", MNV2_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  if (prefix_exe.empty()) return run_cli(all, {}, "bash", timeout_s);
  all.insert(all.begin(), "bash");
  return run_cli(all, {}, prefix_exe, timeout_s);
}

// A control character other than the line ends the program writes itself.
bool has_raw_control(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n') || u == 0x7f;
  });
}

std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".mnv2tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

TEST(CliHardening, AnOutputThatIsAnInputIsRefusedBeforeAnyWork) {
  TempDir tmp;
  fs::copy_file(main_model_path(), tmp.file("mine.onnx"));
  fs::copy_file(shared_path("images/cat.bmp"), tmp.file("p.bmp"));
  fs::create_symlink("mine.onnx", tmp.file("alias.onnx"));
  for (const char* name : {"mine.onnx", "p.bmp"}) ::chmod(tmp.file(name).c_str(), 0644);  // the shared copies are 0444
  const std::string model_bytes = read_file(tmp.file("mine.onnx"));
  const std::string photo_bytes = read_file(tmp.file("p.bmp"));
  for (const auto& [option, target, input] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--csv", tmp.file("mine.onnx"), "the model " + tmp.file("mine.onnx")},
           {"--json", tmp.file("p.bmp"), "--image " + tmp.file("p.bmp")},
           {"--trace", tmp.file("alias.onnx"), "the model " + tmp.file("mine.onnx")}}) {
    SCOPED_TRACE(option + " " + target);
    const auto t0 = std::chrono::steady_clock::now();
    const CliResult r =
        run_cli(with(endless_profile(tmp.file("mine.onnx")), {"--image", tmp.file("p.bmp"), option, target}), {},
                MNV2_CLI_PATH, 120);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find(option + " " + target + ": is " + input + ", which this command reads"), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(read_file(tmp.file("mine.onnx")), model_bytes);
  EXPECT_EQ(read_file(tmp.file("p.bmp")), photo_bytes);

  // A model's external data file, known once the model is read (before the command's work).
  OnnxBuilder x;
  x.input("x", {-1, 3, 8, 8});
  x.conv("x", "c", 3, 4, 1);
  x.output("c");
  x.externalize("c_w", "w.bin");
  x.save(tmp.file("ext.onnx"));
  const std::string weights = read_file(tmp.file("w.bin"));
  const CliResult w = run_cli({"memory", "--model", tmp.file("ext.onnx"), "--json", tmp.file("w.bin")});
  EXPECT_EQ(w.code, 2) << describe(w);
  EXPECT_NE(w.err.find("is the model's external data " + tmp.file("w.bin")), std::string::npos) << w.err;
  EXPECT_EQ(read_file(tmp.file("w.bin")), weights);

  // eval's list, and bench's saved files.
  fs::create_directory(tmp.file("images"));
  fs::copy_file(shared_path("images/cat.bmp"), tmp.file("images/cat.bmp"));
  write_file(tmp.file("l.txt"), "cat.bmp 282\n");
  const CliResult e = run_cli({"eval", "--model", tmp.file("mine.onnx"), "--backend", "cpu-ref", "--images",
                               tmp.file("images"), "--list", tmp.file("l.txt"), "--json", tmp.file("l.txt")},
                              {}, MNV2_CLI_PATH, 120);
  EXPECT_EQ(e.code, 2) << describe(e);
  EXPECT_NE(e.err.find("is --list " + tmp.file("l.txt")), std::string::npos) << e.err;
  EXPECT_EQ(read_file(tmp.file("l.txt")), "cat.bmp 282\n");
  write_file(tmp.file("saved.json"), "{}");
  const CliResult b = run_cli({"bench", "--show", tmp.file("saved.json"), "--csv", tmp.file("saved.json")});
  EXPECT_EQ(b.code, 2) << describe(b);
  EXPECT_NE(b.err.find("is --show " + tmp.file("saved.json")), std::string::npos) << b.err;
  EXPECT_EQ(read_file(tmp.file("saved.json")), "{}");
}

TEST(CliHardening, AReadOnlyTargetIsRefusedAlsoAsRoot) {
  TempDir tmp;
  write_file(tmp.file("ro.json"), "old");
  ::chmod(tmp.file("ro.json").c_str(), 0444);
  const CliResult r = run_cli({"memory", "--model", main_model_path(), "--json", tmp.file("ro.json")});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("--json " + tmp.file("ro.json") + ": is read-only (mode 0444)"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(tmp.file("ro.json")), "old");
}

TEST(CliHardening, AFileSizeLimitIsACleanErrorWithNoTemporaryLeft) {
  TempDir tmp;
  // 10 KiB: the memory report's JSON is larger. SIGXFSZ would kill the process (exit 153) mid-write.
  const CliResult r = run_under("ulimit -f 10", {"memory", "--model", main_model_path(), "--json", tmp.file("o.json"),
                                                 "--csv", tmp.file("o.csv")});
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_FALSE(r.signaled) << describe(r);
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp.file("o.json")));
  EXPECT_FALSE(fs::exists(tmp.file("o.csv")));
  EXPECT_TRUE(temporaries(tmp.path()).empty());
}

TEST(CliHardening, AStandardOutputThatCannotBeWrittenFailsTheCommand) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"classify", "--model", main_model_path(), shared_path("images/cat.bmp")},
        std::vector<std::string>{"topology", "--model", main_model_path()}}) {
    SCOPED_TRACE(args.front());
    const CliResult r = run_under("exec >/dev/full", args);
    EXPECT_EQ(r.code, 1) << describe(r);
    EXPECT_NE(r.err.find("error: cannot write to standard output"), std::string::npos) << r.err;
  }
}

TEST(CliHardening, AThreadLimitIsOurErrorLine) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run as another user (root ignores ulimit -u)";
  if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "no setpriv";
  // The program must be reachable by the user the test runs it as.
  if (std::system(("setpriv --reuid=65534 --regid=65534 --clear-groups test -x '" + std::string(MNV2_CLI_PATH) + "'")
                      .c_str()) != 0)
    GTEST_SKIP() << MNV2_CLI_PATH << " is not executable by uid 65534";
  const CliResult r =
      run_cli({"--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", "ulimit -u 3; exec \"$0\" \"$@\"",
               MNV2_CLI_PATH, "profile", "--backend", "cpu", "--threads", "64", "--warmup", "0", "--iters", "1"},
              {}, "setpriv", 120);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_EQ(r.err.find("libgomp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: cpu: cannot start 64 threads"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ulimit -u"), std::string::npos) << r.err;
}

TEST(CliHardening, NamesFromFilesReachTheTerminalEscaped) {
  TempDir tmp;
  const std::string evil = "cat\x1b[2J\r\nEVIL";  // clears the screen and forges a line, unescaped
  const std::string shown = "cat\\x1b[2J\\r\\nEVIL";
  fs::copy_file(shared_path("images/cat.bmp"), tmp.file(evil + ".bmp"));
  // Labels with control characters: the cat's top class among them.
  std::string labels;
  for (int i = 0; i < 1001; ++i) labels += "label\x1b]0;" + std::to_string(i) + "\x07\n";
  write_file(tmp.file("labels.txt"), labels);

  const CliResult c = run_cli({"classify", "--model", main_model_path(), "--backend", "cpu-ref", "--labels",
                               tmp.file("labels.txt"), tmp.file(evil + ".bmp")});
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_FALSE(has_raw_control(c.out)) << c.out;
  EXPECT_NE(c.out.find(shown + ".bmp"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("label\\x1b]0;"), std::string::npos) << c.out;

  const CliResult missing = run_cli({"classify", "--model", main_model_path(), tmp.file(evil + "-absent.bmp")});
  EXPECT_EQ(missing.code, 1) << describe(missing);
  EXPECT_FALSE(has_raw_control(missing.err)) << missing.err;
  EXPECT_NE(missing.err.find(shown + "-absent.bmp"), std::string::npos) << missing.err;

  // eval: a misclassified image and a skipped one, both named with control characters (no line break: the list
  // is one name per line).
  const std::string listed =
                        "cat\x1b[2J\x07"
                        "EVIL",
                    listed_shown = "cat\\x1b[2J\\x07EVIL";
  fs::create_directory(tmp.file("images"));
  fs::copy_file(shared_path("images/cat.bmp"), tmp.file("images/" + listed + ".bmp"));
  ASSERT_EQ(::mkfifo(tmp.file("images/" + listed + ".fifo").c_str(), 0600), 0);
  write_file(tmp.file("list.txt"), listed + ".bmp 1\n" + listed + ".fifo 2\n");
  const CliResult e = run_cli({"eval", "--model", main_model_path(), "--backend", "cpu-ref", "--images",
                               tmp.file("images"), "--list", tmp.file("list.txt")},
                              {}, MNV2_CLI_PATH, 120);
  ASSERT_EQ(e.code, 0) << describe(e);
  EXPECT_FALSE(has_raw_control(e.out)) << e.out;
  EXPECT_NE(e.out.find("misclassified (1)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find(listed_shown + ".bmp: label 1"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("skipped (1)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find(listed_shown + ".fifo"), std::string::npos) << e.out;

  // info: an ONNX input name with ESC, CR and LF.
  OnnxBuilder b;
  b.input(evil, {-1, 3, 8, 8});
  b.init("w", {4, 3, 1, 1}, ramp(12));
  b.node("Conv", {evil, "w"}, {"y"}, "conv");
  b.output("y");
  b.save(tmp.file("m.onnx"));
  const CliResult i = run_cli({"info", "--model", tmp.file("m.onnx")});
  EXPECT_FALSE(has_raw_control(i.out)) << i.out;
  EXPECT_FALSE(has_raw_control(i.err)) << i.err;
  EXPECT_NE(i.out.find(shown), std::string::npos) << describe(i);
}

}  // namespace
}  // namespace mnv2::test
