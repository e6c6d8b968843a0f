// Fuzz entry points (see fuzz_entry_points.h). The bytes go to a memfd and the engine opens it by its
// /proc/self/fd path, so the fuzzers exercise the same file-reading code as the CLI and the app.
#include "fuzz_entry_points.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/eval.h"
#include "mnv2/host_memory.h"
#include "mnv2/image.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/output_files.h"
#include "mnv2/report.h"

namespace mnv2::fuzz {
namespace {

// Models at most this big are also run on the cpu backend: enough for every odd layer shape the fuzzer
// invents, small enough to keep thousands of executions a second.
constexpr int64_t kMaxRunMacs = 4'000'000;
constexpr int64_t kMaxRunActivationBytes = 16 << 20;

[[noreturn]] void finding(const std::string& what) { throw std::logic_error(what); }

int memfd() {
  static const int fd = [] {
    const int f = memfd_create("mnv2-fuzz-input", 0);
    if (f < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
    return f;
  }();
  return fd;
}

void write_input(const uint8_t* data, size_t size) {
  const int fd = memfd();
  if (ftruncate(fd, 0) != 0) throw std::runtime_error(std::string("ftruncate: ") + std::strerror(errno));
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("pwrite: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// A refusal must be one line that names the file: that is what the CLI prints after "error: ".
void check_refusal(const Error& e, const char* stage) {
  const std::string msg = e.what();
  if (msg.find(input_path()) == std::string::npos)
    finding(std::string(stage) + " refused without naming the file: " + msg);
  if (msg.find('\n') != std::string::npos) finding(std::string(stage) + " refused with a multi-line message: " + msg);
}

// Removes the scratch folder when the process ends.
struct ScratchFolder {
  explicit ScratchFolder(std::string p) : path(std::move(p)) {}
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::string path;
  ~ScratchFolder() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

const std::string& scratch_dir() {
  static const ScratchFolder folder = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mnv2-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    std::vector<float> values(kScratchDataBytes / sizeof(float));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) / 1024.0f;
    std::ofstream out(tmpl + "/" + kScratchDataFile, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(kScratchDataBytes));
    if (!out) throw std::runtime_error("cannot write the fuzz scratch data file in " + tmpl);
    return ScratchFolder(tmpl);  // no copy: the folder is removed exactly once
  }();
  return folder.path;
}

std::string input_path() { return "/proc/self/fd/" + std::to_string(memfd()); }

Outcome onnx_import(const uint8_t* data, size_t size) {
  write_input(data, size);
  OnnxLoadOptions load;
  load.external_data_dir = scratch_dir();
  load.max_external_bytes = kScratchDataBytes;
  Model model;
  try {
    model = load_onnx(input_path(), load);
  } catch (const Error& e) {
    check_refusal(e, "load_onnx");
    return Outcome::refused;
  }
  if (model.layers.empty()) finding("load_onnx accepted a model without layers");
  if (model.input_channels < 1 || model.input_height < 1 || model.input_width < 1)
    finding("load_onnx accepted a model with an empty input");
  for (const Layer& l : model.layers) (void)describe(l);

  std::vector<LayerStats> stats;
  try {
    // A model that fixed its input size was checked at that size while loading.
    stats = analyse(model, 1, model.input_height, model.input_width);
  } catch (const Error&) {
    return Outcome::accepted;  // an open input size the network cannot take: refused when a run asks for it
  }
  int64_t macs = 0, activation_bytes = 0;
  for (const LayerStats& s : stats) {
    macs += s.macs;
    activation_bytes += s.activation_bytes;
  }
  // The least memory the declared sizes take: at least the input and every single layer's output.
  const Shape declared{1, model.input_channels, model.input_height, model.input_width};
  const int64_t floor = activation_floor_bytes(model, declared, stats, 4);
  if (floor < declared.numel() * 4)
    finding("activation_floor_bytes " + std::to_string(floor) + " is below the input's");
  for (const LayerStats& s : stats)
    if (s.activation_bytes > floor) finding("activation_floor_bytes is below a layer's output");
  // Sizes beyond the host's memory: refused by prepare from the shapes, before any buffer (the fuzzer's memory
  // limit would catch an allocation of that size).
  if (const int64_t available = host_memory_available(); available >= 0 && floor > available) {
    try {
      (void)make_backend("cpu")->prepare(model,
                                         PrepareConfig{1, model.input_height, model.input_width, Precision::fp32});
      finding("cpu prepared a model whose activations need " + std::to_string(floor) + " bytes, more than the " +
              std::to_string(available) + " available");
    } catch (const Error& e) {
      if (std::string(e.what()).find("out of host memory") == std::string::npos)
        finding(std::string("a model over the host's memory was refused for another reason: ") + e.what());
    }
    return Outcome::accepted;
  }
  if (macs > kMaxRunMacs || activation_bytes > kMaxRunActivationBytes) return Outcome::accepted;

  auto backend = make_backend("cpu");
  std::unique_ptr<PreparedNet> net;
  try {
    net = backend->prepare(model, PrepareConfig{1, model.input_height, model.input_width, Precision::fp32});
  } catch (const Error& e) {
    // The importer should only produce what the reference backend can run.
    finding(std::string("cpu backend refused an imported model: ") + e.what());
  }
  const Tensor input = random_input(Shape{1, model.input_channels, model.input_height, model.input_width}, 1);
  RunOptions options;
  options.keep_layer_outputs = true;
  const Tensor logits = net->run(input, options);
  if (logits.shape.n != 1 || logits.shape.per_image() != stats.back().output.per_image())
    finding("cpu run returned logits of shape " + logits.shape.str() + ", analyse() said " + stats.back().output.str());
  return Outcome::accepted;
}

Outcome image_decode(const uint8_t* data, size_t size) {
  write_input(data, size);
  Image8 image;
  try {
    image = decode_image_file(input_path());
  } catch (const Error& e) {
    check_refusal(e, "decode_image_file");
    return Outcome::refused;
  }
  if (image.width < 1 || image.height < 1 || image.width > kMaxImageSide || image.height > kMaxImageSide)
    finding("decoded a " + std::to_string(image.width) + "x" + std::to_string(image.height) + " image");
  if (image.rgb.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3)
    finding("decoded image holds the wrong number of bytes");
  // Every decodable image must also preprocess (tiny, huge and long thin ones included).
  try {
    const Tensor t = preprocess(image, Preprocess{});
    if (!(t.shape == Shape{1, 3, 224, 224})) finding("preprocess gave " + t.shape.str());
  } catch (const Error& e) {
    finding(std::string("a decoded image failed to preprocess: ") + e.what());
  }
  return Outcome::accepted;
}

namespace {

// read_bench_file() on the same bytes: what is accepted writes (bench_json, bench_csv) and reads back.
Outcome bench_reader() {
  BenchFile bench;
  try {
    bench = read_bench_file(input_path());
  } catch (const Error& e) {
    check_refusal(e, "read_bench_file");
    return Outcome::refused;
  }
  (void)bench_csv(bench.results);
  try {
    const BenchFile back = bench_from_json(json::parse(bench_json(bench.results, bench.model)));
    if (back.results.size() != bench.results.size()) finding("a bench file read back with a different count");
  } catch (const Error& e) {
    finding(std::string("a bench file that was read could not be read back after writing: ") + e.what());
  }
  return Outcome::accepted;
}

}  // namespace

Outcome report_reader(const uint8_t* data, size_t size) {
  write_input(data, size);
  std::vector<RunReport> reports;
  try {
    reports = read_reports_file(input_path());
  } catch (const Error& e) {
    check_refusal(e, "read_reports_file");
    return bench_reader();  // the other report format the front ends open
  }
  // The budget's estimate agrees with what was accepted: parsable, and within the report's bound.
  const int64_t estimate = json::parsed_size(std::string_view(reinterpret_cast<const char*>(data), size));
  if (estimate < 0 || static_cast<uint64_t>(estimate) > inputs::kReport.max_parsed_bytes)
    finding("a report was read whose parsed size the budget put at " + std::to_string(estimate));
  // Whatever was accepted must be consistent enough for every writer, and must read back.
  const std::string json_text = json::dump(reports_json(reports), 1);
  (void)report_csv(reports);
  (void)trace_json(reports);
  try {
    const std::vector<RunReport> back = reports_from_json(json::parse(json_text));
    if (back.size() != reports.size()) finding("a report read back with a different number of runs");
  } catch (const Error& e) {
    finding(std::string("a report that was read could not be read back after writing: ") + e.what());
  }
  return Outcome::accepted;
}

Outcome eval_list(const uint8_t* data, size_t size) {
  write_input(data, size);
  constexpr int kClasses = 1000;
  const std::string images = scratch_dir();
  std::vector<EvalItem> items;
  try {
    items = read_eval_list(input_path(), images, kClasses);
  } catch (const Error& e) {
    check_refusal(e, "read_eval_list");
    return Outcome::refused;
  }
  if (items.empty()) finding("read_eval_list accepted a list of no images");
  for (const EvalItem& item : items) {
    if (item.label < 0 || item.label >= kClasses) finding("a label outside 0..999: " + std::to_string(item.label));
    if (item.path.rfind(images + "/", 0) != 0) finding("a name outside the images folder: " + item.path);
    const std::string rest = item.path.substr(images.size() + 1);
    if (rest.empty() || rest.front() == '/') finding("an absolute or empty name: " + item.path);
    for (size_t at = 0; at <= rest.size();) {
      const size_t end = std::min(rest.find('/', at), rest.size());
      if (rest.compare(at, end - at, "..") == 0) finding("a '..' component: " + item.path);
      at = end + 1;
    }
  }
  return Outcome::accepted;
}

namespace {

// A scratch folder for one input of output_set(), removed when the input is done.
struct Scratch {
  std::string dir;
  Scratch() {
    std::string t = (std::filesystem::temp_directory_path() / "mnv2-fuzz-out-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    dir = t;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

Outcome output_set(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  size_t at = 0;
  auto next = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  Scratch s;
  const std::string d = s.dir;
  // Every refusal names a path of the set (all of them lie in the scratch folder) on one line.
  auto check_named = [&d](const Error& e, const char* stage) {
    const std::string msg = e.what();
    if (msg.find(d) == std::string::npos) finding(std::string(stage) + " refused without naming the file: " + msg);
    if (msg.find('\n') != std::string::npos) finding(std::string(stage) + " refused with a multi-line message: " + msg);
  };
  // Up to 6 entries named e0..e5: regular files (with contents), links to another entry or to nothing,
  // folders (empty or not), FIFOs and hard links.
  const int entries = next() % 7;
  for (int i = 0; i < entries; ++i) {
    const std::string name = d + "/e" + std::to_string(i);
    const uint8_t kind = next(), arg = next();
    std::error_code ec;
    switch (kind % 7) {
      case 0:
      case 1:
        std::ofstream(name, std::ios::binary) << "old" << int(arg);
        break;
      case 2:
        fs::create_symlink("e" + std::to_string(arg % 8), name, ec);
        break;
      case 3:
        fs::create_directory(name, ec);
        if (arg & 1) std::ofstream(name + "/x") << "x";
        break;
      case 4:
        ::mkfifo(name.c_str(), 0600);
        break;
      case 5:
        ::link((d + "/e" + std::to_string(arg % 6)).c_str(), name.c_str());
        break;
      case 6:
        fs::create_symlink("missing/e", name, ec);
        break;
    }
  }
  // Up to 4 targets: an entry, a new name, a name under a missing folder, the same entry through "./".
  OutputSet set;
  set.set_fifo_wait(std::chrono::milliseconds(0));
  const int targets = 1 + next() % 4;
  std::vector<std::string> labels;
  for (int i = 0; i < targets; ++i) {
    const uint8_t pick = next();
    std::string path;
    switch (pick % 4) {
      case 0:
        path = d + "/e" + std::to_string((pick >> 2) % 6);
        break;
      case 1:
        path = d + "/new" + std::to_string((pick >> 2) % 3);
        break;
      case 2:
        path = d + "/missing/x";
        break;
      case 3:
        path = d + "/./e" + std::to_string((pick >> 2) % 6);
        break;
    }
    const std::string label = "--out" + std::to_string(i);
    try {
      set.add(label, path);
      set.put(label, "new" + std::to_string(i) + std::string(next() % 64, 'n'));
      labels.push_back(label);
    } catch (const UsageError& e) {
      check_named(e, "OutputSet::add");
    }
  }
  // What every entry held before the commit, to check all-or-nothing after it.
  std::vector<std::pair<std::string, std::string>> before;
  for (const auto& e : fs::directory_iterator(d))
    if (fs::is_regular_file(e.symlink_status())) before.emplace_back(e.path().string(), slurp(e.path().string()));
  // Sometimes a later target turns into a non-empty folder after the first rename (its rename then fails).
  const uint8_t fault = next();
  if (fault & 1)
    set.set_rename_observer([&, fault](size_t k) {
      if (k != 0) return;
      for (int i = 0; i < 3; ++i) {
        const std::string victim = d + "/new" + std::to_string((fault >> 1) % 3);
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(victim, ec))) {
          fs::create_directory(victim, ec);
          std::ofstream(victim + "/x") << "x";
        }
      }
    });
  bool committed = false;
  try {
    set.commit();
    committed = true;
  } catch (const Error& e) {
    check_named(e, "OutputSet::commit");
  }
  // Never a temporary left behind; after a failed commit, every regular file as it was.
  for (const auto& e : fs::recursive_directory_iterator(d, fs::directory_options::skip_permission_denied)) {
    const std::string name = e.path().filename().string();
    if (name.find(".mnv2tmp-") != std::string::npos || name.find(".mnv2old-") != std::string::npos)
      finding("a temporary was left behind: " + name);
  }
  // Streams (FIFOs) are written after the files are committed and lie outside the guarantee.
  bool streams = false;
  for (const auto& e : fs::directory_iterator(d)) streams = streams || fs::is_fifo(e.symlink_status());
  if (!committed && !streams)
    for (const auto& [path, contents] : before)
      if (fs::is_regular_file(fs::symlink_status(path)) && slurp(path) != contents)
        finding("a failed commit changed " + path);
  return committed ? Outcome::accepted : Outcome::refused;
}

}  // namespace mnv2::fuzz
