// mnv2 eval: top-1/top-5 accuracy over a labelled image set, through the evaluation study.
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/eval.h"
#include "mnv2/eval_report.h"
#include "mnv2/labels.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {
namespace {

constexpr int kMaxEvalBatch = 4096;  // the evaluation's batches, fewer than the table's

// "[#########...........]  120/500 images  85.3 images/s" on a terminal; a line per tenth otherwise.
EvalProgress eval_progress() {
  const bool tty = isatty(2);
  // The rate counts from the first call (done = 0, the backend prepared), as the result's images/s does.
  auto start = std::make_shared<std::chrono::steady_clock::time_point>();
  auto last_tenth = std::make_shared<int>(-1);
  return [tty, start, last_tenth](int done, int total) {
    if (done == 0) *start = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    const double rate = s > 0 ? done / s : 0;
    if (tty) {
      const int width = 30, filled = total ? done * width / total : width;
      std::fprintf(stderr, "\r\033[K[%s%s] %d/%d images  %.1f images/s", std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), done, total, rate);
      if (done == total) std::fprintf(stderr, "\r\033[K");
    } else if (int tenth = total ? done * 10 / total : 10; tenth != *last_tenth) {
      std::fprintf(stderr, "eval: %d/%d images, %.1f images/s\n", done, total, rate);
      *last_tenth = tenth;
    }
    return true;
  };
}

}  // namespace

void declare_eval(Args& a) {
  a.input("--images", "DIR: one sub-folder per class (index or name), or the files of --list");
  a.input("--list", "FILE of 'FILENAME LABEL-INDEX' lines (paths relative to --images)");
  model_options(a);
  labels_option(a);
  backend_option(a);
  batch_option(a);
  a.value("--threads", "image loader threads (default min(4, cores))");
  a.output("--json", "write the result as JSON to this file ('-': standard output)");
  precision_option(a);
  device_option(a);
  cuda_option_set(a);
  target_option(a);
}

int cmd_eval(const Args& args, const OptionValues& options) {
  if (args.get("--target")) return eval_on_target(args, options);
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  const auto images_dir = args.get("--images");
  if (!images_dir) throw UsageError("eval needs --images DIR");
  EvalConfig cfg;
  cfg.backend = args.get_or("--backend", "cpu");
  cfg.batch = table_integer_at_most(args, options, "batch", kMaxEvalBatch);
  // Not the table's threads (the cpu backends'): the image loaders'.
  cfg.loader_threads = parse_int(args.get_or("--threads", "0"), "--threads", 0, 256);
  const PrepareConfig run = prepare_config_of(options, {224, 224});  // precision, device, the backends' options
  cfg.precision = run.precision;
  cfg.cuda = run.cuda;
  cfg.cudnn = run.cudnn;
  cfg.device = run.device;
  make_backend(cfg.backend);  // unknown names are usage errors, before any file work
  if (!std::filesystem::is_directory(*images_dir)) throw Error(*images_dir + ": no such folder");
  LoadedModel m = load_model(args, options);
  const std::vector<std::string> labels =
      args.get("--labels") ? read_labels_file(*args.get("--labels")) : builtin_labels(m.model.num_classes);
  if (static_cast<int>(labels.size()) != m.model.num_classes)
    throw Error(args.get_or("--labels", "built-in labels") + ": " + std::to_string(labels.size()) +
                " labels for a model with " + std::to_string(m.model.num_classes) + " classes");
  const std::vector<EvalItem> items = args.get("--list")
                                          ? read_eval_list(*args.get("--list"), *images_dir, m.model.num_classes)
                                          : scan_class_folders(*images_dir, labels);
  const EvalResult r = evaluate(m.model, items, cfg, default_image_loader(m.model.preprocess), eval_progress());

  auto name = [&](int i) {
    return i >= 0 && i < static_cast<int>(labels.size()) ? printable(labels[static_cast<size_t>(i)]) : "";
  };
  print_warnings(std::cout, m.model);
  std::printf("model %s; backend %s (%s); precision %s; batch %d; %d loader threads, at most %d batches ahead\n",
              printable(m.model.source).c_str(), cfg.backend.c_str(), r.backend_description.c_str(),
              to_string(cfg.precision), cfg.batch, r.config.loader_threads, r.config.queue_batches);
  if (!r.queue_note.empty()) std::printf("note: %s\n", r.queue_note.c_str());
  std::printf("%d images from %s (%s), %zu skipped as unreadable\n", r.images, printable(*images_dir).c_str(),
              args.get("--list") ? ("list " + printable(*args.get("--list"))).c_str() : "one sub-folder per class",
              r.skipped.size());
  std::printf("top-1 %.2f%% (%d/%d), top-5 %.2f%% (%d/%d)\n", r.top1 * 100, r.top1_correct, r.images, r.top5 * 100,
              r.top5_correct, r.images);
  std::printf("%.2f s, %.1f images/s (inference %.2f s, waiting for the loaders %.2f s)\n", r.wall_s, r.images_per_s,
              r.inference_s, r.loader_wait_s);
  if (!r.misclassified.empty()) std::printf("misclassified (%zu):\n", r.misclassified.size());
  for (const auto& miss : r.misclassified) {
    std::printf("  %s: label %d (%s), predicted", printable(miss.path).c_str(), miss.label, name(miss.label).c_str());
    for (size_t k = 0; k < miss.top5.size(); ++k)
      std::printf("%s %d%s", k ? "," : "", miss.top5[k], k ? "" : (" (" + name(miss.top5[k]) + ")").c_str());
    std::printf("\n");
  }
  if (!r.skipped.empty()) std::printf("skipped (%zu):\n", r.skipped.size());
  for (const auto& skip : r.skipped)  // the decoder's message names the file already
    std::printf("  %s\n",
                printable(skip.reason.rfind(skip.path, 0) == 0 ? skip.reason : skip.path + ": " + skip.reason).c_str());
  std::fflush(stdout);
  if (args.wants("--json"))
    args.put("--json",
             eval_json(r, report_model(m.model, m.location.how), EvalSource{*images_dir, args.get_or("--list", "")}));
  return 0;
}

}  // namespace mnv2::cli
