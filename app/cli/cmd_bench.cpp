// mnv2 bench: end-to-end latency and throughput (no instrumentation) of every backend x input size x batch,
// through the sweep study; saved results (--with, --show) read and shown beside them.
#include <unistd.h>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/report.h"
#include "mnv2/sweep.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {
namespace {

// The table of `mnv2 bench`: fresh and saved results alike. Rows come in groups of one backend, input size
// and precision; a heading names the group where the results hold more than one size or precision.
void print_bench_table(const std::vector<BenchResult>& results) {
  bool sizes = false, precisions = false;
  for (const BenchResult& r : results) {
    sizes = sizes || r.config.height != results.front().config.height || r.config.width != results.front().config.width;
    precisions = precisions || r.config.precision != results.front().config.precision;
  }
  const bool several = sizes || precisions;
  char line[320];
  std::snprintf(line, sizeof line, "%-8s %6s %11s %11s %11s %11s %7s %12s %8s | %10s %10s %12s | %7s\n", "backend",
                "batch", "host_med_ms", "host_p90_ms", "gpu_med_ms", "gpu_p90_ms", "cv", "images/s", "x_cudnn",
                "dev_med_ms", "dev_p90_ms", "dev_images/s", "kernels");
  std::cout << line;
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    if (several &&
        (i == 0 || r.config.height != results[i - 1].config.height || r.config.width != results[i - 1].config.width ||
         r.config.backend != results[i - 1].config.backend || r.config.precision != results[i - 1].config.precision))
      std::cout << "-- " << r.config.backend << ", input " << r.config.height << "x" << r.config.width
                << (precisions ? std::string(", ") + to_string(r.config.precision) : "") << "\n";
    char gmed[32] = "-", gp90[32] = "-", ratio[32] = "-", dmed[32] = "-", dp90[32] = "-", dips[32] = "-",
         kernels[32] = "-";
    if (r.kernels_per_run >= 0)
      std::snprintf(kernels, sizeof kernels, "%lld", static_cast<long long>(r.kernels_per_run));
    if (r.gpu_ms) {
      std::snprintf(gmed, sizeof gmed, "%.3f", r.gpu_ms->median);
      std::snprintf(gp90, sizeof gp90, "%.3f", r.gpu_ms->p90);
      if (const double x = speedup_vs_cudnn(results, r); x > 0) std::snprintf(ratio, sizeof ratio, "%.2f", x);
    }
    if (r.device_ms) {
      std::snprintf(dmed, sizeof dmed, "%.3f", r.device_ms->median);
      std::snprintf(dp90, sizeof dp90, "%.3f", r.device_ms->p90);
      std::snprintf(dips, sizeof dips, "%.1f", r.device_images_per_s);
    }
    std::snprintf(line, sizeof line, "%-8s %6d %11.3f %11.3f %11s %11s %7.3f %12.1f %8s | %10s %10s %12s | %7s\n",
                  r.config.backend.c_str(), r.config.batch, r.latency_ms.median, r.latency_ms.p90, gmed, gp90,
                  r.latency_ms.cv, r.images_per_s, ratio, dmed, dp90, dips, kernels);
    std::cout << line;
  }
}

// The 8-bit input path's figures (mnv2 bench --u8), under the main table: only where results have them.
void print_u8_table(const std::vector<BenchResult>& results) {
  bool any = false;
  for (const BenchResult& r : results) any = any || r.u8_ms.has_value();
  if (!any) return;
  std::cout << "8-bit input path (host clock: network-size RGB bytes on the host .. logits on the host):\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-8s %6s %9s %11s %11s %12s %12s  %s\n", "backend", "batch", "sub_batch",
                "u8_med_ms", "u8_p90_ms", "u8_images/s", "dev_images/s", "path");
  std::cout << line;
  for (const BenchResult& r : results) {
    if (!r.u8_ms) continue;
    char dips[32] = "-";
    if (r.device_ms) std::snprintf(dips, sizeof dips, "%.1f", r.device_images_per_s);
    std::snprintf(line, sizeof line, "%-8s %6d %9d %11.3f %11.3f %12.1f %12s  %s\n", r.config.backend.c_str(),
                  r.config.batch, r.config.sub_batch, r.u8_ms->median, r.u8_ms->p90, r.u8_images_per_s, dips,
                  r.u8_path.c_str());
    std::cout << line;
  }
}

// The files of --with or --show, all read before anything runs or prints: a bad one stops the command with
// its message alone.
std::vector<std::pair<std::string, BenchFile>> read_bench_files(const std::string& option, const std::string& list) {
  std::vector<std::pair<std::string, BenchFile>> files;
  for (const std::string& path : split(list, ',')) {
    if (path.empty()) throw UsageError(option + ": an empty file name in '" + list + "'");
    BenchFile f = read_bench_file(path);
    if (f.results.empty()) throw Error(path + ": the bench file holds no results");
    files.emplace_back(path, std::move(f));
  }
  return files;
}

// One line per saved file: what it is, so that its rows are not taken for this build's.
void print_saved_files(const std::vector<std::pair<std::string, BenchFile>>& files, const std::string& checksum) {
  for (const auto& [path, f] : files) {
    std::set<std::string> backends;
    for (const BenchResult& r : f.results) backends.insert(r.config.backend);
    std::string names;
    for (const std::string& b : backends) names += (names.empty() ? "" : ", ") + b;
    std::cout << "saved: " << path << ": " << f.results.size() << " result(s) of " << names << ", model "
              << f.model.source << " (" << f.model.checksum << "), commit " << f.commit << "\n";
    std::set<std::string> described;  // each way the file's results were run, once
    for (const BenchResult& r : f.results)
      if (described.insert(r.config.backend + ": " + r.backend_description).second)
        std::cout << "  " << r.config.backend << " " << to_string(r.config.precision) << ": " << r.backend_description
                  << "\n";
    if (checksum.empty()) continue;
    const ChecksumMatch m = match_checksums(f.model.checksum, checksum);
    if (m == ChecksumMatch::different)
      std::cout << "WARNING: " << path << " was measured on another model (" << f.model.checksum << ") than this run ("
                << checksum << ")\n";
    else if (m == ChecksumMatch::unknown)
      std::cout << "note: " << path << "'s model checksum (" << f.model.checksum
                << ") is of another algorithm than this run's (" << checksum
                << "): whether it was measured on the same model is unknown\n";
  }
}

// Reliability lines of saved results: only where the file recorded findings (another program's file records
// none, which is not a verdict).
void print_saved_reliability(const std::vector<std::pair<std::string, BenchFile>>& files) {
  for (const auto& [path, f] : files)
    for (const BenchResult& r : f.results) {
      if (r.reliability.findings.empty()) continue;
      std::cout << std::flush;
      std::printf("%s batch %d %dx%d (%s): ", r.config.backend.c_str(), r.config.batch, r.config.height, r.config.width,
                  path.c_str());
      print_reliability(r.reliability, "");
    }
}

}  // namespace

void declare_bench(Args& a) {
  model_options(a);
  a.value("--backends", "B[,B...] (default cpu)");
  backend_option(a);
  a.value("--batch", "N[,N...] (default 1)");
  a.value("--input-size", "HxW[,HxW...] (default: the model's)");
  a.input("--with",
          "FILE[,FILE...]: saved mnv2.bench/1 results (ours, scripts/pytorch-anchor.py's) shown and "
          "written beside the fresh ones",
          true);
  a.input("--show", "FILE[,FILE...]: print saved mnv2.bench/1 results (and --csv/--json them); runs nothing", true);
  counts_options(a, "5", "50");
  report_options(a, false);
  precision_option(a);
  device_option(a);
  cuda_option_set(a);
  threads_option(a);
  a.flag("--u8",
         "also time the 8-bit input path: random network-size RGB bytes per image, converted and normalised by "
         "the backend (on the GPU for cuda), host clock from bytes to logits");
  a.value("--sub-batch",
          "N: with --u8, run each batch as sub-batches of N images (a net prepared at N), each upload "
          "overlapping the previous sub-batch's compute; batches up to N run whole (default: whole batches)");
  target_option(a);
}

int cmd_bench(const Args& args, const OptionValues& options) {
  if (args.get("--target")) return study_on_target(args, options, "bench");
  if (!args.positionals().empty()) throw UsageError("bench takes no positional arguments");
  if (const auto show = args.get("--show")) {
    for (const char* o : {"--with", "--backends", "--backend", "--batch", "--input-size", "--warmup", "--iters",
                          "--precision", "--model", "--threads", "--cuda-variant", "--cuda-fusion", "--cuda-graph",
                          "--cuda-gemm-tile", "--cuda-pdl", "--cuda-splitk", "--sub-batch"})
      if (args.get(o))
        throw UsageError(std::string("--show prints saved files and runs nothing: ") + o + " does not apply");
    const auto files = read_bench_files("--show", *show);
    std::vector<BenchResult> results;
    for (const auto& [path, f] : files) results.insert(results.end(), f.results.begin(), f.results.end());
    print_saved_files(files, "");
    std::cout << "  end to end: host = wall time per run (input upload .. logits download, synchronised); gpu = event"
                 " pair around the same run; device-resident (dev): input already on the GPU, event pair around one"
                 " forward or graph replay; each file's backend_description says how it ran\n";
    print_bench_table(results);
    print_u8_table(results);
    print_saved_reliability(files);
    std::fflush(stdout);
    if (args.wants("--csv")) args.put("--csv", bench_csv(results));
    if (args.wants("--json")) args.put("--json", bench_json(results, files.front().second.model));
    return 0;
  }
  if (args.get("--backends") && args.get("--backend")) throw UsageError("give --backends or --backend, not both");
  const auto backend_list = split(args.get("--backends").value_or(args.get_or("--backend", "cpu")), ',');
  const std::vector<int> batches = table_integers("batch", args.get_or("--batch", "1"));
  const int warmup = static_cast<int>(options.integer("warmup"));
  const int iters = static_cast<int>(options.integer("iters"));
  // Precision, host threads, device and the backends' options (batch and size are the lists above).
  const PrepareConfig run = prepare_config_of(options, {224, 224});
  for (const auto& b : backend_list) make_backend(b);  // unknown names fail here, as usage errors
  // Saved results to show beside the fresh ones: read (and refused) before anything runs.
  const auto saved = args.get("--with") ? read_bench_files("--with", *args.get("--with"))
                                        : std::vector<std::pair<std::string, BenchFile>>{};
  LoadedModel m = load_model(args, options);
  SweepConfig sweep;
  sweep.backends = backend_list;
  sweep.batches = batches;
  sweep.sizes = args.get("--input-size")
                    ? parse_size_list(*args.get("--input-size"))
                    : std::vector<std::pair<int, int>>{{m.model.input_height, m.model.input_width}};
  sweep.warmup = warmup;
  sweep.iters = iters;
  sweep.precision = run.precision;
  sweep.cuda = run.cuda;
  sweep.cudnn = run.cudnn;
  sweep.cpu_threads = run.cpu_threads;
  sweep.device = run.device;
  sweep.u8_input = args.flag("--u8");
  if (args.get("--sub-batch")) {
    if (!sweep.u8_input) throw UsageError("--sub-batch applies to the 8-bit input path: add --u8");
    sweep.sub_batch = parse_int(*args.get("--sub-batch"), "--sub-batch", 1, 65536);
  }
  const std::vector<BenchConfig> points = sweep_points(sweep);
  const bool tty = isatty(2);
  std::vector<BenchResult> results = run_sweep(m.model, sweep, [&](int i, int count, int done, int total) {
    const BenchConfig& p = points[static_cast<size_t>(i)];
    if (tty)
      std::cerr << "\r\033[K[" << i + 1 << "/" << count << "] " << p.backend << " " << p.height << "x" << p.width
                << " batch " << p.batch << ": " << done << "/" << total
                << (i + 1 == count && done == total ? "\r\033[K" : "") << std::flush;
    return true;
  });
  const size_t fresh = results.size();
  for (const auto& [path, f] : saved) results.insert(results.end(), f.results.begin(), f.results.end());
  std::string sizes_text;
  for (const auto& [h, w] : sweep.sizes)
    sizes_text += (sizes_text.empty() ? "" : ", ") + std::to_string(h) + "x" + std::to_string(w);
  print_warnings(std::cout, m.model);
  std::cout << "model: " << m.model.source << "; input " << sizes_text << "; precision " << to_string(run.precision)
            << "; " << warmup << " warm-up + " << iters
            << " timed runs.\n  end to end: host = wall time per run (input upload .. logits download,"
               " synchronised), images/s from its median; gpu = cudaEvent pair on the stream around the same run;"
               " x_cudnn = cudnn's gpu median / this gpu median, same batch\n  device-resident (dev): the network"
               " alone on an input already on the GPU, one CUDA graph replay, event pair; no upload, no download"
               " (what PyTorch CUDA-graph timings measure); '-' where the backend has no such mode\n  kernels: kernel"
               " launches per run (the CUDA graph's kernel nodes; '-' where the backend does not count them)\n";
  print_saved_files(saved, m.model.checksum);
  print_bench_table(results);
  print_u8_table(results);
  for (size_t i = 0; i < fresh; ++i) {
    const BenchResult& r = results[i];
    std::cout << std::flush;
    std::printf("%s batch %d %dx%d: ", r.config.backend.c_str(), r.config.batch, r.config.height, r.config.width);
    print_reliability(r.reliability, "");
  }
  print_saved_reliability(saved);
  std::fflush(stdout);
  if (args.wants("--csv")) args.put("--csv", bench_csv(results));
  if (args.wants("--json")) args.put("--json", bench_json(results, report_model(m.model, m.location.how)));
  return 0;
}

}  // namespace mnv2::cli
