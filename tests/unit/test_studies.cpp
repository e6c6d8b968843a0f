// The studies' engine parts: the Nsight Compute command line, the labelled-set readers and the
// evaluation pipeline (bounded loader queue, unreadable images skipped).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>

#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/eval.h"
#include "mnv2/flops.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/labels.h"
#include "mnv2/memory.h"
#include "mnv2/memory_report.h"
#include "mnv2/model.h"
#include "mnv2/ncu.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/roofline.h"
#include "mnv2/studies.h"
#include "mnv2/sweep.h"
#include "test_support.h"

namespace mnv2::test {
namespace {
namespace fs = std::filesystem;

TEST(Ncu, CommandLineQuotesTheRangeAndReproducesTheRun) {
  NcuTarget t;
  t.mnv2_path = "/opt/mnv2 build/mnv2";
  t.backend = "cudnn";
  t.model_path = "/data/m.onnx";
  t.batch = 8;
  t.height = 500;
  t.width = 334;
  t.nvtx_range = "Conv2d 7";
  t.layer = 7;
  EXPECT_EQ(shell_join(ncu_argv(t)),
            "ncu --nvtx --nvtx-include 'Conv2d 7/' --set full -f -o mnv2_cudnn_layer7 '/opt/mnv2 build/mnv2' profile"
            " --backend cudnn --model /data/m.onnx --batch 8 --input-size 500x334 --warmup 0 --iters 1 --timing event");
  t.image = "/img/it's.jpg";
  t.nvtx_range = "Conv2d 5 + ReLU6 6";
  const std::string line = shell_join(ncu_argv(t));
  EXPECT_NE(line.find("--nvtx-include 'Conv2d 5 + ReLU6 6/'"), std::string::npos) << line;
  EXPECT_NE(line.find("--image '/img/it'\\''s.jpg'"), std::string::npos) << line;
  EXPECT_EQ(line.find("--input-size"), std::string::npos) << line;  // an image sets its own size
  EXPECT_EQ(line.find("--cuda-"), std::string::npos) << line;       // the cudnn backend has no such options
  EXPECT_EQ(line.find("--cudnn-"), std::string::npos) << line;      // its own options at their defaults: none
  t.options.offer("cudnn-variant", "naive", OptionSource::flag);    // the profiled run must run the same steps
  const std::string naive = shell_join(ncu_argv(t));
  EXPECT_NE(naive.find("--cudnn-variant naive"), std::string::npos) << naive;
  EXPECT_EQ(naive.find("--cudnn-graph"), std::string::npos) << naive;
  t.options = OptionValues();
  // The cuda backend's options travel with the command: the profiled run must plan the same steps (those with
  // an environment variable always, so that the ncu run's environment cannot change them).
  t.backend = "cuda";
  t.options.offer("cuda-fusion", "expand_dw", OptionSource::flag);
  t.options.offer("cuda-gemm-tile", "128x64", OptionSource::flag);
  const std::string cuda = shell_join(ncu_argv(t));
  EXPECT_NE(cuda.find("--cuda-variant fast --cuda-fusion expand_dw --cuda-graph auto --cuda-gemm-tile 128x64"),
            std::string::npos)
      << cuda;
}

TEST(Ncu, ResolvesLayersByIndexOrNameAndFindsTheirStep) {
  const Model m = builtin_mobilenet_v2();
  EXPECT_EQ(resolve_layer(m, "7"), 7);
  EXPECT_EQ(resolve_layer(m, m.layers[12].name), 12);
  EXPECT_THROW(resolve_layer(m, "99999"), UsageError);
  EXPECT_THROW(resolve_layer(m, "no.such.layer"), UsageError);
  EXPECT_EQ(default_step_name(m, 0), "Conv2d 0");
  const std::vector<ExecStep> steps = {{"Conv2d 0 + ReLU6 1", {0, 1}, ""}, {"Conv2d 2", {2}, ""}};
  EXPECT_EQ(step_of_layer(steps, 1), 0);
  EXPECT_EQ(step_of_layer(steps, 2), 1);
  EXPECT_EQ(step_of_layer(steps, 3), -1);
}

TEST(EvalSet, ListFileNamesTheBadLine) {
  TempDir d;
  write_file(d.file("ok.txt"), "# comment\n\na b.jpg 3\nsub/./x.png 0\r\n");
  const auto items = read_eval_list(d.file("ok.txt"), "/imgs", 10);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].path, "/imgs/a b.jpg");
  EXPECT_EQ(items[0].label, 3);
  EXPECT_EQ(items[1].path, "/imgs/sub/./x.png");
  write_file(d.file("bad.txt"), "a.jpg 1\nb.jpg cat\n");
  try {
    read_eval_list(d.file("bad.txt"), "/imgs", 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:2:"), std::string::npos) << e.what();
  }
  write_file(d.file("range.txt"), "a.jpg 10\n");
  EXPECT_THROW(read_eval_list(d.file("range.txt"), "/imgs", 10), Error);
  write_file(d.file("one.txt"), "lonely\n");
  EXPECT_THROW(read_eval_list(d.file("one.txt"), "/imgs", 10), Error);
  write_file(d.file("empty.txt"), "# nothing\n");
  EXPECT_THROW(read_eval_list(d.file("empty.txt"), "/imgs", 10), Error);
  EXPECT_THROW(read_eval_list(d.file("missing.txt"), "/imgs", 10), Error);
}

// A list reads beneath its images folder only (issue 30, finding 5): an absolute name or a '..' is refused naming
// the line, before any image is opened; a UTF-8 byte order mark is not part of the first name.
TEST(EvalSet, ListNamesStayBeneathTheImagesFolder) {
  TempDir d;
  struct Case {
    std::string line, why;
  };
  for (const Case& c : {Case{"/etc/shadow 1", "'/etc/shadow' is an absolute path"},
                        Case{"../outside.jpg 1", "'../outside.jpg' contains '..'"},
                        Case{"a/../../b.jpg 1", "contains '..'"}, Case{"sub/.. 2", "contains '..'"}}) {
    write_file(d.file("l.txt"), "ok.jpg 0\n" + c.line + "\n");
    try {
      read_eval_list(d.file("l.txt"), "/imgs", 10);
      ADD_FAILURE() << "accepted " << c.line;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(d.file("l.txt") + ":2: "), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.why), std::string::npos) << msg;
      EXPECT_NE(msg.find("relative to the images folder (/imgs)"), std::string::npos) << msg;
    }
  }
  // Names that only look alike stay: "..x", "x..", a folder named "...".
  write_file(d.file("dots.txt"), "..x.jpg 1\nx...jpg 2\n.../y.jpg 3\n");
  EXPECT_EQ(read_eval_list(d.file("dots.txt"), "/imgs", 10).size(), 3u);
  write_file(d.file("bom.txt"),
             "\xEF\xBB\xBF"
             "first.jpg 4\nsecond.jpg 5\n");
  const auto items = read_eval_list(d.file("bom.txt"), "/imgs", 10);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].path, "/imgs/first.jpg");
  EXPECT_EQ(items[0].label, 4);
}

// Two classes named alike (ImageNet's "crane", 134 and 517): a folder of that name is refused, naming both, not
// taken as the first.
TEST(EvalSet, AFolderNamedLikeTwoClassesIsRefused) {
  TempDir d;
  const std::vector<std::string> labels = {"tench", "crane", "goldfish", "crane", "kite, bird", "kite"};
  fs::create_directories(d.file("crane"));
  write_file(d.file("crane/a.jpg"), "x");
  try {
    scan_class_folders(d.path(), labels);
    ADD_FAILURE() << "a folder named like two classes was taken";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("several classes: 1 (crane), 3 (crane)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("by its class index"), std::string::npos) << msg;
  }
  fs::remove_all(d.file("crane"));
  // A first name that is another class's whole line is ambiguous too; an unambiguous name and an index stay.
  fs::create_directories(d.file("kite"));
  EXPECT_THROW(scan_class_folders(d.path(), labels), Error);
  fs::remove_all(d.file("kite"));
  for (const char* f : {"goldfish", "3"}) {
    fs::create_directories(d.file(f));
    write_file(d.file(f) + "/a.jpg", "x");
  }
  const auto items = scan_class_folders(d.path(), labels);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].label, 3);
  EXPECT_EQ(items[1].label, 2);
}

TEST(EvalSet, ClassFoldersByIndexOrName) {
  TempDir d;
  const auto labels = builtin_labels(1001);
  for (const char* f : {"286", "Egyptian_cat", "hotdog", ".hidden"}) fs::create_directories(d.file(f));
  write_file(d.file("286/b.jpg"), "x");
  write_file(d.file("286/a.jpg"), "x");
  write_file(d.file("286/.DS_Store"), "x");
  write_file(d.file("Egyptian_cat/c.jpg"), "x");
  write_file(d.file("hotdog/d.jpg"), "x");
  const auto items = scan_class_folders(d.path(), labels);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(fs::path(items[0].path).filename(), "a.jpg");  // name order
  EXPECT_EQ(items[0].label, 286);
  EXPECT_EQ(items[2].label, 286);  // "Egyptian cat"
  EXPECT_EQ(items[3].label, 935);  // first name of "hotdog, hot dog, red hot"
  fs::create_directories(d.file("not a class"));
  EXPECT_THROW(scan_class_folders(d.path(), labels), Error);
  fs::remove(d.file("not a class"));
  fs::create_directories(d.file("1001"));
  EXPECT_THROW(scan_class_folders(d.path(), labels), Error);
  EXPECT_THROW(scan_class_folders(d.file("nope"), labels), Error);
}

// Evaluates a class-folder set with .f32 files (no image codec needed) on cpu-ref; the skipped entries by
// file name, with their reasons.
struct ScannedEval {
  EvalResult result;
  std::map<std::string, std::string> skipped;
  std::string reason(const std::string& name) const { return skipped.count(name) ? skipped.at(name) : "(not skipped)"; }
};
ScannedEval evaluate_folder(const Model& m, const std::string& set) {
  ScannedEval out;
  std::vector<EvalItem> items;
  EXPECT_NO_THROW(items = scan_class_folders(set, builtin_labels(m.num_classes)));
  EvalConfig cfg;
  cfg.backend = "cpu-ref";
  out.result = evaluate(m, items, cfg, default_image_loader(m.preprocess));
  for (const EvalSkip& s : out.result.skipped) out.skipped[fs::path(s.path).filename().string()] = s.reason;
  return out;
}
std::string preprocessed_image(const Model& m) {
  return std::string(static_cast<size_t>(3) * m.preprocess.crop * m.preprocess.crop * 4, '\0');
}

// What a folder scan cannot read is skipped with its reason and the evaluation completes: a symbolic link
// loop (in a class folder and beside them), a dangling link, a FIFO (never opened: it would block).
TEST(Eval, LinkLoopsDanglingLinksAndFifosInAClassFolderAreSkippedWithTheirReason) {
  const Model m = builtin_mobilenet_v2();
  TempDir d;
  fs::create_directories(d.file("set/1"));
  write_file(d.file("set/1/a_good.f32"), preprocessed_image(m));
  fs::create_symlink("b_loop.f32", d.file("set/1/b_loop.f32"));
  fs::create_symlink("nowhere.f32", d.file("set/1/c_dangling.f32"));
  ASSERT_EQ(mkfifo(d.file("set/1/d_pipe.f32").c_str(), 0600), 0);
  fs::create_symlink("0_loop", d.file("set/0_loop"));
  const ScannedEval e = evaluate_folder(m, d.file("set"));
  EXPECT_EQ(e.result.images, 1);
  EXPECT_EQ(e.result.skipped.size(), 4u);
  EXPECT_NE(e.reason("0_loop").find("symbolic link loop"), std::string::npos) << e.reason("0_loop");
  EXPECT_NE(e.reason("b_loop.f32").find("symbolic link loop"), std::string::npos) << e.reason("b_loop.f32");
  EXPECT_NE(e.reason("c_dangling.f32").find("dangling symbolic link"), std::string::npos) << e.reason("c_dangling.f32");
  EXPECT_NE(e.reason("d_pipe.f32").find("FIFO"), std::string::npos) << e.reason("d_pipe.f32");
}

// A file and a sub-folder without read permission: skipped with the reason (not as root, who reads them).
TEST(Eval, UnreadableFilesAndFoldersAreSkippedWithTheirReason) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not stop reads";
  const Model m = builtin_mobilenet_v2();
  TempDir d;
  fs::create_directories(d.file("set/1"));
  fs::create_directories(d.file("set/2"));
  write_file(d.file("set/1/a_good.f32"), preprocessed_image(m));
  write_file(d.file("set/1/e_secret.f32"), preprocessed_image(m));
  fs::permissions(d.file("set/1/e_secret.f32"), fs::perms::none);
  write_file(d.file("set/2/f.f32"), preprocessed_image(m));
  fs::permissions(d.file("set/2"), fs::perms::none);
  const ScannedEval e = evaluate_folder(m, d.file("set"));
  fs::permissions(d.file("set/2"), fs::perms::owner_all);  // so that TempDir can remove it
  EXPECT_EQ(e.result.images, 1);
  EXPECT_EQ(e.result.skipped.size(), 2u);
  EXPECT_NE(e.reason("e_secret.f32").find("Permission denied"), std::string::npos) << e.reason("e_secret.f32");
  EXPECT_NE(e.reason("2").find("cannot list the folder"), std::string::npos) << e.reason("2");
}

// A list file that is a FIFO is refused at once, not waited on; one over the size bound is refused too.
TEST(EvalSet, ListFileThatIsNotARegularFileOrTooLargeIsRefused) {
  TempDir d;
  ASSERT_EQ(mkfifo(d.file("list.fifo").c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&]() -> std::string {
    try {
      (void)read_eval_list(d.file("list.fifo"), d.path(), 10);
    } catch (const Error& e) {
      return e.what();
    }
    return "read";
  });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader (a writer that opens and closes: end of file) so that the test ends.
    const int fd = ::open(d.file("list.fifo").c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    ADD_FAILURE() << "read_eval_list waited on a FIFO";
  }
  const std::string msg = pending.get();
  EXPECT_NE(msg.find(d.file("list.fifo")), std::string::npos) << msg;
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;

  EXPECT_THROW(read_eval_list(d.path(), d.path(), 10), Error);  // a directory
  write_file(d.file("huge.txt"), "");
  fs::resize_file(d.file("huge.txt"), inputs::kEvalList.max_bytes + 1);  // sparse
  try {
    (void)read_eval_list(d.file("huge.txt"), d.path(), 10);
    ADD_FAILURE() << "a list over the size bound was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(d.file("huge.txt") +
                                         ": evaluation list of 67108865 bytes is over its limit of 64 MiB"),
              std::string::npos)
        << e.what();
  }
  write_file(d.file("long.txt"), std::string(static_cast<size_t>(inputs::kEvalList.max_lines) + 1, '\n'));
  try {
    (void)read_eval_list(d.file("long.txt"), d.path(), 10);
    ADD_FAILURE() << "a list over the line bound was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 10000000 lines"), std::string::npos) << e.what();
  }
}

// A synthetic model and a loader that makes inputs without files: the pipeline's own behaviour.
TEST(Eval, LoadersStayBoundedAndUnreadableImagesAreSkipped) {
  const Model m = builtin_mobilenet_v2();
  std::vector<EvalItem> items;
  for (int i = 0; i < 23; ++i) items.push_back({"img" + std::to_string(i), i % 3});
  std::atomic<int> loaded{0};
  const Shape shape{1, m.input_channels, m.preprocess.crop, m.preprocess.crop};
  ImageLoader loader = [&](const std::string& path) {
    ++loaded;
    if (path == "img5") throw Error(path + ": cannot decode");
    return Tensor(shape);
  };
  EvalConfig cfg;
  cfg.batch = 4;
  cfg.loader_threads = 3;
  cfg.queue_batches = 2;
  int calls = 0;
  const EvalResult r = evaluate(m, items, cfg, loader, [&](int done, int total) {
    if (calls++ == 0) EXPECT_EQ(done, 0) << "the first call marks the start (the backend prepared)";
    EXPECT_EQ(total, 23);
    // Batches consumed so far plus at most queue_batches decoded ahead.
    const int consumed = (done + cfg.batch - 1) / cfg.batch;
    EXPECT_LE(loaded.load(), (consumed + cfg.queue_batches) * cfg.batch) << "done " << done;
    return true;
  });
  EXPECT_EQ(calls, 7);  // the start, then one per batch of 4 (23 items: 6 batches)
  EXPECT_EQ(r.images, 22);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].path, "img5");
  EXPECT_EQ(r.top1_correct + static_cast<int>(r.misclassified.size()), 22);
  EXPECT_GE(r.top5_correct, r.top1_correct);

  ImageLoader broken = [](const std::string& path) -> Tensor { throw Error(path + ": unreadable"); };
  EXPECT_THROW(evaluate(m, items, cfg, broken), Error);
  EXPECT_THROW(evaluate(m, items, cfg, loader, [](int, int) { return false; }), Error);  // cancelled
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

TEST(Memory, LayerFiguresAndTheCpuBackendsAccount) {
  const Model m = builtin_mobilenet_v2();
  for (const char* backend : {"cpu", "cpu-ref"}) {
    SCOPED_TRACE(backend);
    const MemoryStudy s = memory_study(m, backend, PrepareConfig{2, 224, 224, Precision::fp32});
    ASSERT_EQ(s.layers.size(), m.layers.size());
    int64_t params = 0;
    for (size_t i = 0; i < s.layers.size(); ++i) {
      EXPECT_EQ(s.layers[i].activation_bytes, s.stats[i].output.numel() * 4) << i;
      EXPECT_EQ(s.layers[i].weight_bytes, s.stats[i].params * 4) << i;
      params += s.stats[i].params;
    }
    EXPECT_EQ(s.layers[0].weight_tensors, 2);  // stem conv: weights and (folded) bias
    EXPECT_EQ(s.layers[1].weight_tensors, 0);  // ReLU6
    EXPECT_EQ(s.model_weight_bytes, params * 4);
    EXPECT_EQ(s.activation_tensors, 100);
    if (std::string(backend) == "cpu-ref") {
      EXPECT_EQ(s.held.weight_bytes, s.model_weight_bytes);  // the reference keeps every weight once
    } else {  // once too, in oneDNN's layouts, whose blocks pad some channel counts (24 to 32)
      EXPECT_GE(s.held.weight_bytes, s.model_weight_bytes);
      EXPECT_LT(s.held.weight_bytes, s.model_weight_bytes * 21 / 20);
    }
    EXPECT_GT(s.held.activation_bytes, 0);
    EXPECT_LT(s.held.activation_bytes, s.model_activation_bytes);  // slots are reused
    EXPECT_GT(s.held.tensors, s.weight_tensors);
    EXPECT_EQ(s.held.driver_held_bytes(), -1);  // a host backend: no driver reading

    const json::Json j = json::parse(memory_json(s));
    EXPECT_EQ(j.at("schema").get<std::string>(), "mnv2.memory/1");
    EXPECT_EQ(j.at("layers").size(), m.layers.size());
    EXPECT_EQ(j.at("held").at("tensors").get<int64_t>(), s.held.tensors);
    const std::string csv = memory_csv(s);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(m.layers.size()) + 1);
  }
}

TEST(Memory, ReportsCarryTheDriverReadingAndOlderOnesStillRead) {
  MemoryReport m;
  m.weight_bytes = 10;
  m.tensors = 3;
  m.device_used_before_bytes = 1000;
  m.device_used_peak_bytes = 1600;
  m.device_total_bytes = 9000;
  EXPECT_EQ(m.driver_held_bytes(), 600);
  const MemoryReport back = json::Json(m).get<MemoryReport>();
  EXPECT_EQ(back.tensors, 3);
  EXPECT_EQ(back.driver_held_bytes(), 600);
  EXPECT_EQ(back.device_total_bytes, 9000);
  const MemoryReport old =
      json::parse(R"({"weight_bytes": 1, "activation_bytes": 2, "workspace_bytes": 3})").get<MemoryReport>();
  EXPECT_EQ(old.total(), 6);
  EXPECT_EQ(old.driver_held_bytes(), -1);
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

TEST(Sweep, PointsInOrderSizesParsedAndCsvRows) {
  SweepConfig c;
  c.backends = {"cpu"};
  c.sizes = parse_size_list("32x32,48x40");
  c.batches = {1, 2};
  c.warmup = 0;
  c.iters = 2;
  ASSERT_EQ(c.sizes.size(), 2u);
  EXPECT_EQ(c.sizes[1], (std::pair<int, int>{48, 40}));
  EXPECT_EQ(parse_size_list("64")[0], (std::pair<int, int>{64, 64}));
  EXPECT_THROW(parse_size_list("32x32,"), UsageError);
  EXPECT_THROW(parse_size_list("1x32"), UsageError);
  EXPECT_THROW(parse_size_list("32x32x3"), UsageError);
  const auto points = sweep_points(c);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[1].batch, 2);
  EXPECT_EQ(points[2].height, 48);
  const Model m = builtin_mobilenet_v2();
  int calls = 0;
  const auto results = run_sweep(m, c, [&](int i, int count, int done, int total) {
    EXPECT_EQ(count, 4);
    EXPECT_LT(i, 4);
    EXPECT_LE(done, total);
    ++calls;
    return true;
  });
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(calls, 8);
  EXPECT_EQ(results[3].config.width, 40);
  EXPECT_GT(results[3].images_per_s, 0);
  const std::string csv = bench_csv(results);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_NE(csv.find("\ncpu,"), std::string::npos);
  c.backends.clear();
  EXPECT_THROW(run_sweep(m, c), UsageError);
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

// A cpu-ref profile of the built-in network at 64x64, one timed run: what the roofline tests place (the
// reference runs one step per layer).
RunReport small_cpu_report() {
  ProfileConfig pc;
  pc.backend = "cpu-ref";
  pc.height = pc.width = 64;
  pc.warmup = 0;
  pc.iters = 1;
  return profile(builtin_mobilenet_v2(), pc);
}

TEST(Roofline, PointsFollowTheModelAnalysisAndTheRidge) {
  const RunReport r = small_cpu_report();
  Ceilings c;
  c.bandwidth_gb_s = 10;
  c.gflop_s = 100;  // ridge at 10 FLOP/byte
  EXPECT_DOUBLE_EQ(c.ridge(), 10.0);
  EXPECT_DOUBLE_EQ(c.attainable_gflop_s(2.0), 20.0);
  EXPECT_DOUBLE_EQ(c.attainable_gflop_s(50.0), 100.0);
  const auto points = roofline_points(r, c);
  ASSERT_EQ(points.size(), r.steps.size());  // the cpu backend runs one step per layer, every one with work
  for (const auto& p : points) {
    const LayerStats& st = r.layer_stats[static_cast<size_t>(p.layer)];
    const LayerKind kind = r.topology[static_cast<size_t>(p.layer)].kind;
    const double flops = kind == LayerKind::Conv2d || kind == LayerKind::Linear ? 2.0 * st.macs
                         : kind == LayerKind::ReLU6                             ? 2.0 * st.output.numel()
                                                                                : 1.0 * st.macs;
    EXPECT_DOUBLE_EQ(p.flops, flops) << p.name;
    EXPECT_DOUBLE_EQ(p.intensity, flops / st.bytes) << p.name;
    EXPECT_NEAR(p.gflop_s, flops / r.steps[static_cast<size_t>(p.step)].time_ns.median, 1e-9) << p.name;
    EXPECT_EQ(p.memory_bound, p.intensity < 10.0) << p.name;
  }
  EXPECT_EQ(points[1].kind, "ReLU6");
  EXPECT_TRUE(points[1].memory_bound);  // 2 FLOP per 8 bytes
}

// fp16 runs store half tensors: the same steps move half the bytes, so twice the intensity.
TEST(Roofline, Fp16StepsCountTwoBytesPerElement) {
  RunReport r = small_cpu_report();
  Ceilings c;
  c.bandwidth_gb_s = 10;
  c.gflop_s = 100;
  const auto fp32 = roofline_points(r, c);
  r.config.precision = Precision::fp16;
  const auto fp16 = roofline_points(r, c);
  ASSERT_EQ(fp16.size(), fp32.size());
  for (size_t i = 0; i < fp32.size(); ++i) {
    const std::vector<int>& inputs = r.topology.at(static_cast<size_t>(fp32[i].layer)).inputs;
    if (std::find(inputs.begin(), inputs.end(), kNetworkInput) != inputs.end()) {
      // The network input stays float32 (every backend reads it so): more than half, less than all.
      EXPECT_GT(fp16[i].bytes, fp32[i].bytes / 2) << fp32[i].name;
      EXPECT_LT(fp16[i].bytes, fp32[i].bytes) << fp32[i].name;
      continue;
    }
    EXPECT_DOUBLE_EQ(fp16[i].bytes, fp32[i].bytes / 2) << fp32[i].name;
    EXPECT_DOUBLE_EQ(fp16[i].intensity, fp32[i].intensity * 2) << fp32[i].name;
  }
  EXPECT_EQ(storage_bytes(Precision::fp16), 2);
  EXPECT_EQ(storage_bytes(Precision::tf32), 4);
  EXPECT_EQ(storage_bytes(Precision::fp32), 4);
}

TEST(Roofline, AFusedStepMovesOnlyWhatCrossesItsBoundary) {
  // The cpu report, re-cut as a backend that fuses each Conv2d with its ReLU6: the fused step reads the
  // conv's input and weights and writes the ReLU6's output, never the tensor between them.
  RunReport r = small_cpu_report();
  ASSERT_EQ(r.topology[0].kind, LayerKind::Conv2d);
  ASSERT_EQ(r.topology[1].kind, LayerKind::ReLU6);
  r.steps[0].layers = {0, 1};
  r.steps.erase(r.steps.begin() + 1);
  Ceilings c;
  c.bandwidth_gb_s = 10;
  c.gflop_s = 100;
  const auto points = roofline_points(r, c);
  const LayerStats& conv = r.layer_stats[0];
  const LayerStats& relu = r.layer_stats[1];
  const double input = static_cast<double>(conv.bytes - conv.activation_bytes) - 4.0 * conv.params;
  ASSERT_FALSE(points.empty());
  EXPECT_EQ(points[0].step, 0);
  EXPECT_DOUBLE_EQ(points[0].flops, 2.0 * conv.macs + 2.0 * relu.output.numel());
  EXPECT_DOUBLE_EQ(points[0].intensity,
                   points[0].flops / (input + 4.0 * conv.params + static_cast<double>(relu.activation_bytes)));
  EXPECT_LT(input + 4.0 * conv.params + relu.activation_bytes, static_cast<double>(conv.bytes + relu.bytes));
}

// A whole inverted-residual block as one step (the cuda backend's fusion block): it reads the block's input once
// (for the expansion and for the residual add), its three convolutions' weights, and writes the add's output;
// the expanded and depthwise maps never count. A single layer's figure is its own LayerStats::bytes.
TEST(Roofline, AFusedBlockReadsItsInputOnce) {
  const Model m = builtin_mobilenet_v2();
  const std::vector<LayerStats> st = analyse(m, 2, 224, 224);
  // block3: expand 10, ReLU6 11, dw 12, ReLU6 13, project 14, add 15 (inputs 14 and 9, block2's output).
  ASSERT_EQ(m.layers[15].kind, LayerKind::ResidualAdd);
  ASSERT_EQ(m.layers[10].inputs, std::vector<int>{9});
  const std::vector<int> block{10, 11, 12, 13, 14, 15};
  const double input = static_cast<double>(st[9].activation_bytes);
  const double weights = 4.0 * static_cast<double>(st[10].params + st[12].params + st[14].params);
  EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, block), input + weights + static_cast<double>(st[15].activation_bytes));
  for (int l : block)
    EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, {l}), static_cast<double>(st[static_cast<size_t>(l)].bytes));
  // Unfused: the sum of the layers' own traffic, the expanded maps included, is 9x larger here.
  double layers = 0;
  for (int l : block) layers += static_cast<double>(st[static_cast<size_t>(l)].bytes);
  EXPECT_GT(layers, 9.0 * step_bytes(m.layers, st, block));
  // In half storage the activations and weights count half, the same bytes otherwise.
  EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, block, 2.0), step_bytes(m.layers, st, block) / 2.0);
}

// The stem and block 1 as one step (the cuda backend's fused_stem): the network input (float32 whatever the
// storage), the weights and block 1's projection output; the stem's and depthwise's maps never count.
TEST(Roofline, TheFusedStemReadsTheFloat32InputWhateverTheStorage) {
  const Model m = builtin_mobilenet_v2();
  const std::vector<LayerStats> st = analyse(m, 2, 224, 224);
  ASSERT_EQ(m.layers[0].inputs, std::vector<int>{kNetworkInput});
  const std::vector<int> stem{0, 1, 2, 3, 4};
  const double input = 4.0 * 2 * 3 * 224 * 224;
  const double weights = 4.0 * static_cast<double>(st[0].params + st[2].params + st[4].params);
  const double output = static_cast<double>(st[4].activation_bytes);
  EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, stem), input + weights + output);
  EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, stem, 2.0), input + (weights + output) / 2.0);
  EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, {0}), static_cast<double>(st[0].bytes));
  EXPECT_DOUBLE_EQ(step_bytes(m.layers, st, {0}, 2.0), input + (4.0 * st[0].params + st[0].activation_bytes) / 2.0);
}

TEST(Roofline, CpuCeilingsAreCachedPerDevice) {
  TempDir d;
  const std::string folder = d.file("cache");  // made by the engine, private (a TempDir is 0755)
  ASSERT_EQ(synced_setenv("MNV2_CACHE_DIR", folder.c_str(), 1), 0);
  std::string warning;
  const Ceilings first = device_ceilings("cpu", false, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.bandwidth_gb_s, 0.1);
  EXPECT_GT(first.gflop_s, 0.1);
  EXPECT_EQ(roofline_cache_file(), folder + "/roofline.json");
  const Ceilings again = device_ceilings("cpu", false, &warning);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.gflop_s, first.gflop_s);
  EXPECT_EQ(again.key, first.key);
  write_file(folder + "/roofline.json", "{ not json");
  const Ceilings fresh = device_ceilings("cpu", false, &warning);
  EXPECT_FALSE(fresh.from_cache);
  EXPECT_NE(warning.find("roofline.json"), std::string::npos) << warning;
  EXPECT_TRUE(device_ceilings("cpu", false).from_cache);  // rewritten whole
  // The cpu backend has only fp32: another mode finds the same record.
  const Ceilings any_mode = device_ceilings("cpu", false, nullptr, Precision::fp16);
  EXPECT_TRUE(any_mode.from_cache);
  EXPECT_EQ(any_mode.key, ceilings_key("cpu"));

  // Ceilings beyond physical reason (a hand-edited or damaged cache) are measured again, with a warning; the
  // other entries of the cache stay.
  json::Json cache = json::parse_file(folder + "/roofline.json", inputs::kRooflineCache);
  cache["devices"][ceilings_key("cpu")]["bandwidth_gb_s"] = 1e308;
  cache["devices"]["some other GPU"] = cache["devices"][ceilings_key("cpu")];
  cache["devices"]["some other GPU"]["bandwidth_gb_s"] = 3000.0;
  cache["devices"]["some other GPU"]["key"] = "some other GPU";
  write_file(folder + "/roofline.json", json::dump(cache, 2));
  warning.clear();
  const Ceilings remeasured = device_ceilings("cpu", false, &warning);
  EXPECT_FALSE(remeasured.from_cache);
  EXPECT_LT(remeasured.bandwidth_gb_s, 80000);
  EXPECT_NE(warning.find("not believable"), std::string::npos) << warning;
  EXPECT_NE(warning.find("beyond any device"), std::string::npos) << warning;
  const json::Json after = json::parse_file(folder + "/roofline.json", inputs::kRooflineCache);
  EXPECT_TRUE(after["devices"].contains("some other GPU"));
  EXPECT_LT(after["devices"][ceilings_key("cpu")]["bandwidth_gb_s"].get<double>(), 80000);
  // A cache past its size budget is not read (the 150 MiB cache of the adversarial pass, here sparse).
  write_file(folder + "/roofline.json", "");
  ASSERT_EQ(::truncate((folder + "/roofline.json").c_str(), 150 << 20), 0);
  warning.clear();
  EXPECT_FALSE(device_ceilings("cpu", false, &warning).from_cache);
  EXPECT_NE(warning.find("over its limit"), std::string::npos) << warning;
  synced_unsetenv("MNV2_CACHE_DIR");
}

// The roofline study places a run under the ceilings of the device it ran on, at its own thread count (a cpu
// run on one thread under ceilings measured on one thread, whatever the process's default), and a GPU run on the
// GPU its config names.
TEST(Roofline, TheStudyTakesTheRunsOwnDeviceAndThreads) {
  TempDir d;
  const ScopedSettings cache([&](ProcessSettings& s) { s.cache_dir = d.file("cache"); });
  ProfileConfig pc;
  pc.backend = "cpu-ref";
  pc.height = pc.width = 64;
  pc.warmup = 0;
  pc.iters = 1;
  pc.cpu_threads = 1;
  const RunReport r = profile(builtin_mobilenet_v2(), pc);
  const RooflineResult first = roofline_study(r);
  EXPECT_TRUE(first.warning.empty()) << first.warning;
  EXPECT_EQ(first.ceilings.key, ceilings_key("cpu", Precision::fp32, 1));
  EXPECT_FALSE(first.ceilings.from_cache);
  EXPECT_EQ(first.points.size(), roofline_points(r, first.ceilings).size());
  EXPECT_TRUE(roofline_study(r).ceilings.from_cache);
  RooflineConfig again;
  again.recalibrate = true;
  EXPECT_FALSE(roofline_study(r, again).ceilings.from_cache);
  RunReport gpu = r;
  gpu.backend = "cuda";
  gpu.config.device = 64;  // no machine has it: an Error (here, without a GPU, the one that says so)
  EXPECT_THROW(roofline_study(gpu), Error);
}

// The ncu-command study from a model: the layer by index or name, the range of the step that runs it (assumed to
// be the layer's own, with a warning, where the backend cannot run here), the command that repeats the run.
TEST(Ncu, TheStudyFromAModelNamesTheLayersRange) {
  const Model m = builtin_mobilenet_v2();
  NcuCommandConfig c;
  c.mnv2_path = "/opt/mnv2";
  c.run.backend = "cpu";
  c.layer = "3";
  EXPECT_THROW(ncu_command(m, c), UsageError);  // the cpu backends launch no GPU kernels
  c.run.backend = "cudnn";
  c.layer = "no.such.layer";
  EXPECT_THROW(ncu_command(m, c), UsageError);
  c.layer = m.layers[3].name;
  const NcuCommand cmd = ncu_command(m, c);
  EXPECT_EQ(cmd.layer, 3);
  if (!make_backend("cudnn")->availability().available) {
    EXPECT_EQ(cmd.nvtx_range, default_step_name(m, 3));
    EXPECT_NE(cmd.warning.find("assumes layer 3 runs as a step of its own"), std::string::npos) << cmd.warning;
  }
  NcuTarget t;
  t.mnv2_path = "/opt/mnv2";
  t.backend = "cudnn";
  t.options = c.run.options;
  t.nvtx_range = cmd.nvtx_range;
  t.layer = 3;
  EXPECT_EQ(cmd.argv, ncu_argv(t));
}

// From a finished run's report: its own step names (a fused layer's range is its step's), its input file where it
// is still there (a .f32 file as --tensor, any other as --image), no --model for a synthetic model.
TEST(Ncu, TheStudyFromAReportUsesItsStepsAndInput) {
  TempDir d;
  RunReport r = small_cpu_report();
  EXPECT_THROW(ncu_command(r, 1, "/opt/mnv2"), UsageError);  // a cpu run
  r.backend = "cuda";
  r.steps[0].name = "fused 0";
  r.layers[1].step = 0;
  EXPECT_THROW(ncu_command(r, static_cast<int>(r.layers.size()), "/opt/mnv2"), UsageError);
  const NcuCommand random = ncu_command(r, 1, "/opt/mnv2");
  EXPECT_EQ(random.nvtx_range, "fused 0");
  EXPECT_TRUE(random.warning.empty());
  const std::string line = shell_join(random.argv);
  EXPECT_NE(line.find("--nvtx-include 'fused 0/'"), std::string::npos) << line;
  EXPECT_NE(line.find("/opt/mnv2 profile --backend cuda --batch 1 --input-size 64x64"), std::string::npos) << line;
  EXPECT_EQ(line.find("--model"), std::string::npos) << line;  // the built-in model: the run finds its own
  write_file(d.file("in.f32"), "");
  r.config.input_name = d.file("in.f32");
  EXPECT_NE(shell_join(ncu_command(r, 1, "/opt/mnv2").argv).find("--tensor " + d.file("in.f32")), std::string::npos);
  write_file(d.file("in.bmp"), "");
  r.config.input_name = d.file("in.bmp");
  EXPECT_NE(shell_join(ncu_command(r, 1, "/opt/mnv2").argv).find("--image " + d.file("in.bmp")), std::string::npos);
  // A run whose plan the backend chose (cuda-fusion auto): Nsight Compute gets the plan that ran, not "auto".
  // (Its options say auto: the line names it, since $MNV2_CUDA_FUSE could change a default there.)
  EXPECT_NE(shell_join(ncu_command(r, 1, "/opt/mnv2").argv).find("--cuda-fusion auto"), std::string::npos);
  r.resolved_options = {{"cuda-fusion", "auto", "block", "auto: block on sm_90"}};
  EXPECT_NE(shell_join(ncu_command(r, 1, "/opt/mnv2").argv).find("--cuda-fusion block"), std::string::npos)
      << shell_join(ncu_command(r, 1, "/opt/mnv2").argv);
}

// Issue 30, finding 11: the loader queue fits the memory the process may take, decided before any image is read.
TEST(EvalLoaderQueue, IsCutToTheMemoryAvailableAndRefusedWhenNotEvenOneBatchFits) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  const int64_t per_image = 3 * 224 * 224;  // 588 KiB of float32 per image
  // What was asked where nothing is known, or where it fits: as asked, but no more threads than batches ahead.
  LoaderQueue q = fit_loader_queue(64, per_image, 4, 5, -1);
  EXPECT_EQ(q.threads, 4);
  EXPECT_EQ(q.ahead, 5);
  EXPECT_TRUE(q.note.empty());
  q = fit_loader_queue(64, per_image, 16, 5, 64 * kGiB);
  EXPECT_EQ(q.threads, 5);
  EXPECT_EQ(q.ahead, 5);
  EXPECT_TRUE(q.note.empty()) << q.note;
  // The finding: --batch 4096 --threads 256 (257 batches ahead, 620 GB) on a machine with 23.8 GB available.
  const int64_t available = 23.8 * 1e9;
  q = fit_loader_queue(4096, per_image, 256, 257, available);
  EXPECT_GE(q.ahead, 1);
  EXPECT_LE(q.threads, q.ahead);
  EXPECT_LE(static_cast<double>(q.bytes), kLoaderShareOfAvailable * static_cast<double>(available));
  // The largest queue that fits was chosen: one more batch ahead would not.
  const double batch_bytes = 4096.0 * per_image * 4;
  EXPECT_GT((q.ahead + 3) * batch_bytes + (q.threads + 1.0) * kLoaderDecodeBytes,
            kLoaderShareOfAvailable * static_cast<double>(available));
  EXPECT_NE(q.note.find("cut from 257 batches ahead and 256 threads to " + std::to_string(q.ahead)), std::string::npos)
      << q.note;
  // Not even one batch ahead: refused, naming the batch, what it needs and what there is.
  try {
    (void)fit_loader_queue(65536, per_image, 4, 5, 8 * kGiB);
    ADD_FAILURE() << "a queue of 3 batches of 65536 images fitted in 8 GiB";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("eval: batch 65536 needs 110.3 GiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("8.0 GiB of host memory is available: use a smaller batch"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace mnv2::test
