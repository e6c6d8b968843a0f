// mnv2_op_harness: every layer kind and the small patterns the backends fuse, on every backend and variant,
// against the cpu-ref backend over a table of shapes (op_cases.h), on seeded random data; with --bench it also
// times every case per backend (the engine's bench, mnv2/bench.h). In the spirit of ggml's test-backend-ops.
//
// Exit status: 0 when every case that ran passed, 1 if any failed, 2 for bad arguments. The last line is
// "N passed, N failed, N skipped" (skipped: a backend not available here, a layer or option it does not support).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/output_files.h"
#include "op_backends.h"
#include "op_cases.h"
#include "op_check.h"
#include "op_report.h"

namespace mnv2::ops {
namespace {

constexpr const char* kUsage = R"(usage: mnv2_op_harness [options]
Runs every op case on every backend configuration against the cpu-ref backend.
  --backends LIST   comma-separated backends to judge (default: every backend but cpu-ref: %s)
  --filter REGEX    only the tests whose name matches (ECMAScript, searched anywhere); a test's name is
                    "CASE | BACKEND VARIANT PRECISION", e.g. "dw3x3s2 96x112x112->96 pads[0,0,1,1] g96 bias n1 mnv2 |
                    cuda fast fusion=none splitk=separate fp16"
  --seed N          the data of every case (default: a fresh seed, printed first)
  --list            print the test names and exit
  --bench           also time every case per backend configuration (and the reference): a console table
  --csv FILE        with --bench (implied): the same rows as CSV
  --warmup N        untimed runs before timing (default 3)
  --iters N         timed runs (default 20)
  -v, --verbose     a line per test, and the backends' plans
  -h, --help        this text
)";

struct Args {
  std::vector<std::string> backends;
  std::string filter;
  bool has_seed = false;
  uint64_t seed = 0;
  bool list = false, bench = false, verbose = false;
  std::string csv;
  int warmup = 3, iters = 20;
};

std::string default_backends() {
  std::string s;
  for (const std::string& n : backend_names())
    if (n != "cpu-ref") s += (s.empty() ? "" : ",") + n;
  return s;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < lo || v > hi)
    throw UsageError(flag + " takes a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ", got '" + text + "'");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  a.backends = split(default_backends());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--backends") {
      a.backends = split(value());
      if (a.backends.empty()) throw UsageError("--backends needs at least one backend");
    } else if (arg == "--filter") {
      a.filter = value();
    } else if (arg == "--seed") {
      a.seed = static_cast<uint64_t>(parse_int(arg, value(), 0, INT64_MAX));
      a.has_seed = true;
    } else if (arg == "--list") {
      a.list = true;
    } else if (arg == "--bench") {
      a.bench = true;
    } else if (arg == "--csv") {
      a.csv = value();
      a.bench = true;
    } else if (arg == "--warmup") {
      a.warmup = static_cast<int>(parse_int(arg, value(), 0, 100000));
    } else if (arg == "--iters") {
      a.iters = static_cast<int>(parse_int(arg, value(), 1, 100000));
    } else if (arg == "-v" || arg == "--verbose") {
      a.verbose = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf(kUsage, default_backends().c_str());
      std::exit(0);
    } else {
      throw UsageError("unknown argument '" + arg + "' (see --help)");
    }
  }
  return a;
}

// The case name as a regular expression matching only itself (for the "repeat with" hint).
std::string regex_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos) out += '\\';
    out += ch;
  }
  return out;
}

// The seed of one case's data: the run's seed and the case's name, so a case draws the same data whatever else
// runs (--filter, --backends).
uint64_t case_seed(uint64_t seed, const std::string& name) {
  uint64_t h = fnv1a64_update(kFnv1a64Basis, &seed, sizeof seed);
  return fnv1a64_update(h, name.data(), name.size());
}

std::string layer_line(const Layer& l) {
  std::string s = std::to_string(l.index) + " " + describe(l);
  if (l.kind == LayerKind::Conv2d || l.kind == LayerKind::Linear) s += l.bias.empty() ? " no bias" : " bias";
  if (l.kind == LayerKind::Conv2d)
    s += " (kernel " + std::to_string(l.conv.kernel_h) + "x" + std::to_string(l.conv.kernel_w) + ", stride " +
         std::to_string(l.conv.stride_h) + "x" + std::to_string(l.conv.stride_w) + ", pads [" +
         std::to_string(l.conv.pad_top) + "," + std::to_string(l.conv.pad_left) + "," +
         std::to_string(l.conv.pad_bottom) + "," + std::to_string(l.conv.pad_right) + "], groups " +
         std::to_string(l.conv.groups) + ")";
  if (l.kind == LayerKind::ReLU || l.kind == LayerKind::ReLU6)
    s += " [" + std::to_string(l.clip_min) + ", " + std::to_string(l.clip_max) + "]";
  return s;
}

std::string plan_text(const std::vector<ExecStep>& steps) {
  std::string s;
  for (const ExecStep& st : steps) s += (s.empty() ? "" : "; ") + st.name + " [" + st.variant + "]";
  return s;
}

struct Counts {
  int passed = 0, failed = 0, skipped = 0;
};

// What judging one test gave: its outcome and the plan the backend ran (for the benchmark rows).
struct Judged {
  enum class Outcome { passed, failed, skipped } outcome = Outcome::skipped;
  int steps = 0;
  std::string plan;
};

class Harness {
 public:
  explicit Harness(Args args) : a_(std::move(args)) {
    if (!a_.filter.empty()) {
      try {
        filter_ = std::regex(a_.filter, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw UsageError("--filter: not a regular expression: '" + a_.filter + "' (" + e.what() + ")");
      }
    }
    for (const std::string& b : a_.backends) {
      bool known = false;
      for (const std::string& n : backend_names()) known = known || n == b;
      if (!known)
        throw UsageError("--backends: unknown backend '" + b + "' (choose " + default_backends() + ",cpu-ref)");
    }
    if (!a_.csv.empty()) outputs_.add("--csv", a_.csv);      // checked now, written at the end
    seed_ = a_.has_seed ? a_.seed : std::random_device{}();  // 32 bits: short enough to type back
  }

  int run() {
    std::printf("mnv2_op_harness: seed %llu (repeat with --seed %llu)\n", static_cast<unsigned long long>(seed_),
                static_cast<unsigned long long>(seed_));
    const std::vector<OpSpec> all = op_specs();
    std::map<std::string, int> names;  // a name seeds its case's data: two cases of one name would draw alike
    for (const OpSpec& s : all)
      if (++names[case_name(s)] > 1) throw Error("two cases are named '" + case_name(s) + "'");
    backends_ = backends_under_test(a_.backends, all);
    // The cases some test of which the filter selects.
    std::vector<OpSpec> specs;
    for (const OpSpec& s : all)
      if (selects_some_test(case_name(s))) specs.push_back(s);
    if (a_.list) return list(specs);
    describe_backends();
    if (a_.bench) {
      table_ = make_console_printer(stdout);
      if (!a_.csv.empty()) csv_ = make_csv_printer(outputs_, "--csv");
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (const OpSpec& s : specs) run_case(s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (table_) table_->finish();
    if (csv_) {
      csv_->finish();
      for (const std::string& line : outputs_.commit()) std::printf("%s\n", line.c_str());
    }
    summary(specs.size(), seconds);
    return total_.failed > 0 ? 1 : 0;
  }

 private:
  bool selected(const std::string& test) const { return a_.filter.empty() || std::regex_search(test, filter_); }
  bool selects_some_test(const std::string& name) const {
    if (a_.filter.empty()) return true;
    for (const BackendUnderTest& b : backends_) {
      if (!b.availability.available && selected(name + " | " + b.name)) return true;
      for (const BackendConfig& c : b.configs)
        if (selected(name + " | " + c.label())) return true;
    }
    return false;
  }

  int list(const std::vector<OpSpec>& specs) const {
    for (const OpSpec& s : specs)
      for (const BackendUnderTest& b : backends_) {
        if (!b.availability.available) {
          if (selected(case_name(s) + " | " + b.name))
            std::printf("%s | %s (not available)\n", case_name(s).c_str(), b.name.c_str());
          continue;
        }
        for (const BackendConfig& c : b.configs)
          if (selected(case_name(s) + " | " + c.label()))
            std::printf("%s | %s\n", case_name(s).c_str(), c.label().c_str());
      }
    return 0;
  }

  void describe_backends() const {
    for (const BackendUnderTest& b : backends_) {
      if (!b.availability.available) {
        std::printf("backend %s: skipped, not available: %s\n", b.name.c_str(), b.availability.reason.c_str());
        continue;
      }
      std::printf("backend %s: %s; %zu configurations\n", b.name.c_str(), b.backend->description().c_str(),
                  b.configs.size());
      if (a_.verbose) {
        for (const BackendConfig& c : b.configs) std::printf("  %s\n", c.label().c_str());
        for (const std::string& n : b.notes) std::printf("  left out: %s\n", n.c_str());
      } else if (!b.notes.empty()) {
        std::printf("  %zu option combinations left out (refused, or the same plan as another; -v lists them)\n",
                    b.notes.size());
      }
    }
  }

  void count(const std::string& key, int Counts::*field) {
    ++(total_.*field);
    ++(per_config_[key].*field);
  }

  void run_case(const OpSpec& s) {
    const std::string name = case_name(s);
    std::mt19937_64 gen(case_seed(seed_, name));
    const Model model = build_model(s, gen);
    const Tensor input = build_input(s, gen);
    std::unique_ptr<Reference> ref;  // made when the first configuration needs it
    std::vector<LayerBound> bounds;
    Precision bounds_for = Precision::fp32;
    bool timed_reference = false;
    for (const BackendUnderTest& b : backends_) {
      if (!b.availability.available) {
        if (selected(name + " | " + b.name)) count(b.name + " (not available)", &Counts::skipped);
        continue;
      }
      std::string unsupported;
      for (const Layer& l : model.layers)
        if (auto why = b.backend->unsupported_reason(l); why && unsupported.empty())
          unsupported = "layer " + std::to_string(l.index) + " " + describe(l) + ": " + *why;
      for (const BackendConfig& c : b.configs) {
        const std::string test = name + " | " + c.label();
        if (!selected(test)) continue;
        if (!unsupported.empty()) {
          count(c.label(), &Counts::skipped);
          if (a_.verbose) std::printf("not supported  %s: %s\n", test.c_str(), unsupported.c_str());
          continue;
        }
        if (!ref) ref = std::make_unique<Reference>(run_reference(model, input));
        if (bounds.empty() || bounds_for != c.prepare.precision) {
          bounds = layer_bounds(model, c.prepare.precision, s.batch, s.height, s.width);
          bounds_for = c.prepare.precision;
        }
        const Judged j = judge(s, model, input, *ref, bounds, *b.backend, c, test);
        if (!a_.bench || j.outcome == Judged::Outcome::skipped) continue;
        if (!timed_reference) {
          Judged reference;
          reference.steps = static_cast<int>(ref->steps.size());
          reference.plan = plan_text(ref->steps);
          bench(s, model, BackendConfig{"cpu-ref", "reference", {}}, "pass", reference);
          timed_reference = true;
        }
        bench(s, model, c, j.outcome == Judged::Outcome::passed ? "pass" : "FAIL", j);
      }
    }
  }

  // Runs one configuration and compares; prints a failure with every parameter.
  Judged judge(const OpSpec& s, const Model& model, const Tensor& input, const Reference& ref,
               const std::vector<LayerBound>& bounds, const Backend& backend, const BackendConfig& c,
               const std::string& test) {
    PrepareConfig config = c.prepare;
    config.batch = s.batch;
    config.height = s.height;
    config.width = s.width;
    std::unique_ptr<PreparedNet> net;
    Verdict v;
    std::string error;
    Judged j;
    try {
      net = backend.prepare(model, config);
    } catch (const UsageError& e) {  // the backend refuses this configuration for this model: not supported
      count(c.label(), &Counts::skipped);
      if (a_.verbose) std::printf("not supported  %s: %s\n", test.c_str(), e.what());
      return j;
    } catch (const std::exception& e) {
      error = std::string("prepare: ") + e.what();
    }
    if (net) {
      j.steps = static_cast<int>(net->steps().size());
      j.plan = plan_text(net->steps());
      try {
        RunOptions keep;
        keep.keep_layer_outputs = true;
        const Tensor logits = net->run(input, keep);
        v = check_outputs(model, ref, bounds, logits, net->layer_outputs(), net->steps());
      } catch (const std::exception& e) {
        error = std::string("run: ") + e.what();
      }
    }
    if (error.empty() && v.ok) {
      count(c.label(), &Counts::passed);
      if (a_.verbose) std::printf("ok    %s  (worst err/bound %.3g)\n", test.c_str(), v.worst_ratio);
      j.outcome = Judged::Outcome::passed;
      return j;
    }
    count(c.label(), &Counts::failed);
    print_failure(s, model, c, test, net.get(), v, error);
    j.outcome = Judged::Outcome::failed;
    return j;
  }

  void print_failure(const OpSpec& s, const Model& model, const BackendConfig& c, const std::string& test,
                     const PreparedNet* net, const Verdict& v, const std::string& error) const {
    std::printf("FAIL  %s\n", test.c_str());
    std::printf("      pattern %s, input %dx%dx%d, batch %d, backend %s, variant %s, precision %s, seed %llu\n",
                to_string(s.pattern), s.channels, s.height, s.width, s.batch, c.backend.c_str(),
                c.variant.empty() ? "-" : c.variant.c_str(), to_string(c.prepare.precision),
                static_cast<unsigned long long>(seed_));
    for (const Layer& l : model.layers) std::printf("      layer %s\n", layer_line(l).c_str());
    if (net) std::printf("      plan: %s\n", plan_text(net->steps()).c_str());
    if (!error.empty()) {
      std::printf("      error: %s\n", error.c_str());
    } else if (!v.problem.empty()) {
      std::printf("      layer %d: %s\n", v.layer, v.problem.c_str());
    } else {
      const bool logits = v.layer == static_cast<int>(model.layers.size());
      std::printf(
          "      %s: %lld elements past their bound; worst at %s (index %lld of %s): got %.9g, expected %.9g, "
          "|error| %.3g, bound %.3g (magnitude %.6g, error/bound %.3g)\n",
          logits ? "logits" : ("layer " + std::to_string(v.layer) + " output").c_str(),
          static_cast<long long>(v.outside), v.where().c_str(), static_cast<long long>(v.index), v.shape.str().c_str(),
          v.got, v.expected, std::fabs(v.got - v.expected), v.bound, v.magnitude,
          v.bound > 0 ? std::fabs(v.got - v.expected) / v.bound : 0.0);
    }
    std::printf("      repeat: mnv2_op_harness --seed %llu --backends %s --filter '^%s \\| %s$'\n",
                static_cast<unsigned long long>(seed_), c.backend.c_str(), regex_escape(case_name(s)).c_str(),
                regex_escape(c.label()).c_str());
  }

  // Times one case on one configuration with the engine's bench (warm-up, then timed runs; a GPU backend's
  // figures are the network alone on a resident input where it can, else an event pair around the run).
  void bench(const OpSpec& s, const Model& model, const BackendConfig& c, const std::string& status, const Judged& j) {
    BenchConfig bc;
    bc.backend = c.backend;
    bc.batch = s.batch;
    bc.height = s.height;
    bc.width = s.width;
    bc.warmup = a_.warmup;
    bc.iters = a_.iters;
    bc.precision = c.prepare.precision;
    bc.cuda = c.prepare.cuda;
    bc.cudnn = c.prepare.cudnn;
    bc.cpu_threads = c.prepare.cpu_threads;
    bc.seed = seed_;
    BenchRow r;
    r.case_name = case_name(s);
    r.pattern = to_string(s.pattern);
    r.batch = s.batch;
    r.input = std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width);
    r.backend = c.backend;
    r.variant = c.variant;
    r.precision = to_string(c.prepare.precision);
    r.status = status;
    r.seed = seed_;
    r.steps = j.steps;
    r.plan = j.plan;
    try {
      const BenchResult b = run_bench(model, bc);
      const Summary& t = b.device_ms ? *b.device_ms : b.gpu_ms ? *b.gpu_ms : b.latency_ms;
      r.timer = b.device_ms ? "device" : b.gpu_ms ? "gpu" : "host";
      r.n = t.n;
      r.median_us = t.median * 1000.0;
      r.p90_us = t.p90 * 1000.0;
      r.min_us = t.min * 1000.0;
      r.cv = t.cv;
    } catch (const std::exception& e) {
      r.timer = "error";
      r.plan = e.what();
    }
    if (table_) table_->row(r);
    if (csv_) csv_->row(r);
  }

  void summary(size_t cases, double seconds) const {
    std::printf("\n%zu cases in %.1f s; per backend configuration:\n", cases, seconds);
    for (const auto& [key, n] : per_config_)
      std::printf("  %-52s %d passed, %d failed, %d skipped\n", key.c_str(), n.passed, n.failed, n.skipped);
    std::printf("%d passed, %d failed, %d skipped\n", total_.passed, total_.failed, total_.skipped);
  }

  Args a_;
  std::regex filter_;
  uint64_t seed_ = 0;
  std::vector<BackendUnderTest> backends_;
  OutputSet outputs_;
  std::unique_ptr<BenchPrinter> table_, csv_;
  Counts total_;
  std::map<std::string, Counts> per_config_;
};

}  // namespace
}  // namespace mnv2::ops

int main(int argc, char** argv) {
  try {
    mnv2::ops::Harness harness(mnv2::ops::parse_args(argc, argv));
    return harness.run();
  } catch (const mnv2::UsageError& e) {
    std::fprintf(stderr, "mnv2_op_harness: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnv2_op_harness: error: %s\n", e.what());
    return 1;
  }
}
