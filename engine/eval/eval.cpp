// Accuracy evaluation (see mnv2/eval.h). Loader threads claim whole batches in order, at most
// `queue_batches` ahead of the batch being inferred, so memory stays bounded whatever the set's size.
#include "mnv2/eval.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "mnv2/error.h"
#include "mnv2/host_memory.h"
#include "mnv2/image.h"
#include "mnv2/input_files.h"
#include "mnv2/labels.h"
#include "mnv2/memory.h"  // format_gib

namespace mnv2 {
namespace fs = std::filesystem;

namespace {

// Figures of the queue rule are long double (a hostile batch x size passes int64 once multiplied); what is printed
// is at most INT64_MAX bytes.
std::string gib_text(long double bytes) {
  constexpr auto kMax = std::numeric_limits<int64_t>::max();
  return format_gib(bytes >= static_cast<long double>(kMax) ? kMax : static_cast<int64_t>(bytes));
}

bool is_number(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Lower case without spaces and underscores: "Egyptian_cat" and "Egyptian cat" compare equal.
std::string fold(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    if (c != ' ' && c != '_') out += static_cast<char>(std::tolower(c));
  return out;
}

// Why a list's name could lead out of the images folder by its form ("" when it cannot).
std::string outside_name(const std::string& name) {
  if (name.front() == '/') return "is an absolute path";
  for (size_t start = 0; start <= name.size();) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (name.compare(start, end - start, "..") == 0 && end - start == 2) return "contains '..'";
    start = end + 1;
  }
  return "";
}

}  // namespace

std::vector<EvalItem> read_eval_list(const std::string& list_file, const std::string& images_dir, int classes) {
  // A regular file within inputs::kEvalList (a FIFO or a device is refused at once, without blocking).
  std::istringstream in(read_input_file(list_file, inputs::kEvalList));
  std::vector<EvalItem> items;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    // A UTF-8 byte order mark (Windows editors write one) is not part of the first name.
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (static_cast<uint64_t>(number) > inputs::kEvalList.max_lines)
      throw Error(list_file + ": the list file has more than " + std::to_string(inputs::kEvalList.max_lines) +
                  " lines; split the set or check the file");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > inputs::kEvalList.max_string_bytes)
      throw Error(list_file + ":" + std::to_string(number) + ": a line of " + std::to_string(line.size()) +
                  " bytes (at most " + std::to_string(inputs::kEvalList.max_string_bytes) + ")");
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto end = line.find_last_not_of(" \t");
    const auto split = line.find_last_of(" \t", end);
    const std::string where = list_file + ":" + std::to_string(number) + ": ";
    if (split == std::string::npos || split < first)
      throw Error(where + "expected 'FILENAME LABEL', got '" + line + "'");
    const std::string label = line.substr(split + 1, end - split);
    std::string name = line.substr(first, split - first);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!is_number(label)) throw Error(where + "the label must be a class index, got '" + label + "'");
    const int index = std::stoi(label);
    if (index >= classes)
      throw Error(where + "label " + label + " is outside the model's classes 0.." + std::to_string(classes - 1));
    // Names are beneath the images folder: an absolute name or a '..' would read anywhere the user can (a list
    // from elsewhere naming /etc/shadow).
    if (const std::string why = outside_name(name); !why.empty())
      throw Error(where + "'" + name + "' " + why + "; the names of a list are relative to the images folder (" +
                  images_dir + ")");
    items.push_back({(fs::path(images_dir) / name).string(), index});
  }
  if (items.empty()) throw Error(list_file + ": no 'FILENAME LABEL' lines");
  return items;
}

namespace {

// What a folder entry is, through symbolic links, and why it cannot be read (empty when it can be
// examined). Every call takes an error_code: an entry whose status cannot be read (ELOOP, EACCES) must not
// end the scan with an exception.
struct EntryKind {
  fs::file_type type = fs::file_type::unknown;
  std::string unreadable;
};

EntryKind examine(const fs::path& p) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(p, ec);
  if (ec) return {fs::file_type::unknown, "cannot be examined (" + ec.message() + ")"};
  const fs::file_status st = fs::status(p, ec);
  if (fs::is_symlink(link)) {
    if (ec == std::errc::too_many_symbolic_link_levels)
      return {fs::file_type::unknown, "a symbolic link loop (" + ec.message() + ")"};
    if (st.type() == fs::file_type::not_found)
      return {fs::file_type::not_found, "a dangling symbolic link (its target does not exist)"};
  }
  if (ec) return {fs::file_type::unknown, "cannot be examined (" + ec.message() + ")"};
  return {st.type(), ""};
}

// Why a non-folder entry of a class folder is not an image file, or "" for a regular file.
std::string not_a_file(const EntryKind& k) {
  if (!k.unreadable.empty()) return k.unreadable;
  switch (k.type) {
    case fs::file_type::regular:
      return "";
    case fs::file_type::fifo:
      return "a FIFO (named pipe), not an image file";
    case fs::file_type::socket:
      return "a socket, not an image file";
    case fs::file_type::block:
    case fs::file_type::character:
      return "a device, not an image file";
    default:
      return "not a regular file";
  }
}

// The entries of one folder that are not hidden, in name order; `error` says why the listing stopped early
// (what was listed until then is kept).
std::vector<fs::path> list_folder(const fs::path& folder, std::string& error) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().front() != '.') out.push_back(it->path());
  if (ec) error = "cannot list the folder (" + ec.message() + ")";
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<EvalItem> scan_class_folders(const std::string& dir, const std::vector<std::string>& labels) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a folder");
  // Folded label (whole line and its first name) -> every index it names: a labels file may name two classes
  // alike (ImageNet's "crane" is a bird, 134, and a machine, 517), and such a folder name is refused, never
  // taken as the first.
  std::map<std::string, std::vector<int>> by_name;
  for (size_t i = 0; i < labels.size(); ++i) {
    for (const std::string& key : {fold(labels[i]), fold(labels[i].substr(0, labels[i].find(',')))}) {
      std::vector<int>& indices = by_name[key];
      if (std::find(indices.begin(), indices.end(), static_cast<int>(i)) == indices.end())
        indices.push_back(static_cast<int>(i));
    }
  }
  std::string error;
  const std::vector<fs::path> entries = list_folder(dir, error);
  if (!error.empty()) throw Error(dir + ": " + error);
  std::vector<EvalItem> items;
  for (const auto& entry : entries) {
    const EntryKind kind = examine(entry);
    // Plain files beside the class folders (a README, a list) are not part of the set; an entry that
    // cannot be examined may be a class folder, so it is reported.
    if (!kind.unreadable.empty()) {
      items.push_back({entry.string(), -1, kind.unreadable});
      continue;
    }
    if (kind.type != fs::file_type::directory) continue;
    const std::string name = entry.filename().string();
    int label = -1;
    if (is_number(name)) {
      label = std::stoi(name);
      if (label >= static_cast<int>(labels.size()))
        throw Error(entry.string() + ": class " + name + " is outside the model's classes 0.." +
                    std::to_string(labels.size() - 1));
    } else if (auto it = by_name.find(fold(name)); it != by_name.end()) {
      if (it->second.size() > 1) {
        std::string which;
        for (int i : it->second)
          which += (which.empty() ? "" : ", ") + std::to_string(i) + " (" + labels[static_cast<size_t>(i)] + ")";
        throw Error(entry.string() + ": the folder name is the name of several classes: " + which +
                    "; name the folder by its class index");
      }
      label = it->second.front();
    } else {
      throw Error(entry.string() + ": the folder name is neither a class index nor a class name of the model");
    }
    std::string folder_error;
    for (const auto& f : list_folder(entry, folder_error)) {
      const EntryKind k = examine(f);
      if (k.unreadable.empty() && k.type == fs::file_type::directory) continue;  // sub-folders are not read
      std::string why = not_a_file(k);
      // Said here, where the reason is known; the decoder would only find that it cannot open the file.
      if (why.empty() && ::access(f.c_str(), R_OK) != 0)
        why = std::string("cannot be read (") + std::strerror(errno) + ")";
      items.push_back({f.string(), label, why});
    }
    if (!folder_error.empty()) items.push_back({entry.string(), label, folder_error});
  }
  if (items.empty()) throw Error(dir + ": no class sub-folders with images (or give --list FILE)");
  return items;
}

bool is_tensor_file(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".f32";
}

ImageLoader default_image_loader(const Preprocess& preprocess_config) {
  return [preprocess_config](const std::string& path) {
    if (!is_tensor_file(path)) return preprocess(decode_image_file(path), preprocess_config);
    Tensor t = read_tensor_file(path, Shape{1, 3, preprocess_config.crop, preprocess_config.crop});
    if (t.shape.n != 1)
      throw Error(path + ": holds " + std::to_string(t.shape.n) +
                  " preprocessed images; an eval set takes one per file");
    return t;
  };
}

namespace {

// One decoded batch: each image's tensor, or the reason it could not be read.
struct LoadedBatch {
  std::vector<std::optional<Tensor>> images;
  std::vector<std::string> errors;
};

// Loader threads decode batches [0, count) in claim order; take(k) hands out batch k, blocking until it is
// ready. A batch is claimed only while fewer than `ahead` batches wait beyond the one being consumed.
class BatchLoader {
 public:
  BatchLoader(const std::vector<EvalItem>& items, int batch, int threads, int ahead, const ImageLoader& load)
      : items_(items),
        batch_(batch),
        count_((static_cast<int>(items.size()) + batch - 1) / batch),
        ahead_(ahead),
        load_(load) {
    for (int t = 0; t < threads; ++t) {
      try {
        workers_.emplace_back([this] { work(); });
      } catch (const std::system_error& e) {  // the system refused a thread (ulimit -u): go on with fewer
        if (!workers_.empty()) break;
        throw Error(std::string("eval: cannot start an image loader thread (") + e.what() +
                    "; a process limit such as ulimit -u)");
      }
    }
  }
  ~BatchLoader() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& w : workers_) w.join();
  }
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int count() const { return count_; }

  LoadedBatch take(int k) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return ready_.count(k) > 0; });
    LoadedBatch b = std::move(ready_[k]);
    ready_.erase(k);
    consumed_ = k + 1;
    changed_.notify_all();
    return b;
  }

 private:
  void work() {
    for (;;) {
      int k = 0;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || next_ >= count_ || next_ < consumed_ + ahead_; });
        if (stop_ || next_ >= count_) return;
        k = next_++;
      }
      LoadedBatch b;
      const size_t begin = static_cast<size_t>(k) * static_cast<size_t>(batch_);
      const size_t end = std::min(items_.size(), begin + static_cast<size_t>(batch_));
      for (size_t i = begin; i < end; ++i) {
        if (!items_[i].skip.empty()) {  // the folder scan found it unreadable: never opened
          b.images.emplace_back(std::nullopt);
          b.errors.emplace_back(items_[i].skip);
          continue;
        }
        try {
          b.images.emplace_back(load_(items_[i].path));
          b.errors.emplace_back();
        } catch (const std::exception& e) {  // Error from the decoder, bad_alloc for a huge image
          b.images.emplace_back(std::nullopt);
          b.errors.emplace_back(e.what());
        }
      }
      {
        std::lock_guard lock(mutex_);
        ready_[k] = std::move(b);
      }
      changed_.notify_all();
    }
  }

  const std::vector<EvalItem>& items_;
  const int batch_, count_, ahead_;
  const ImageLoader& load_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, LoadedBatch> ready_;
  int next_ = 0, consumed_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

LoaderQueue fit_loader_queue(int batch, int64_t values_per_image, int threads, int ahead, int64_t available) {
  LoaderQueue q;
  q.ahead = std::max(1, ahead);
  q.threads = std::clamp(threads, 1, q.ahead);  // a thread beyond the batches it may claim would only wait
  const long double batch_bytes = static_cast<long double>(batch) * values_per_image * sizeof(float);
  auto need = [&](int a, int t) { return (a + 2) * batch_bytes + static_cast<long double>(t) * kLoaderDecodeBytes; };
  q.bytes = static_cast<int64_t>(need(q.ahead, q.threads));
  if (available < 0) return q;  // the machine does not say: as asked
  const long double budget = static_cast<long double>(available) * kLoaderShareOfAvailable;
  if (need(1, 1) > budget)
    throw Error("eval: batch " + std::to_string(batch) + " needs " + gib_text(need(1, 1)) +
                " for its image loader queue at the least (the batch being filled, the one ready, the one the "
                "network runs, and one image being decoded); " +
                gib_text(static_cast<long double>(available)) + " of host memory is available: use a smaller batch");
  const int asked_ahead = q.ahead, asked_threads = q.threads;
  while (q.ahead > 1 && need(q.ahead, std::min(q.threads, q.ahead)) > budget) --q.ahead;
  q.threads = std::min(q.threads, q.ahead);
  q.bytes = static_cast<int64_t>(need(q.ahead, q.threads));
  if (q.ahead != asked_ahead || q.threads != asked_threads)
    q.note = "the image loader queue was cut from " + std::to_string(asked_ahead) + " batches ahead and " +
             std::to_string(asked_threads) + " threads to " + std::to_string(q.ahead) + " and " +
             std::to_string(q.threads) + ": " + gib_text(need(asked_ahead, asked_threads)) + " would not fit in the " +
             gib_text(budget) + " it may take (" + std::to_string(static_cast<int>(kLoaderShareOfAvailable * 100)) +
             "% of the " + gib_text(static_cast<long double>(available)) + " available)";
  return q;
}

EvalResult evaluate(const Model& model, const std::vector<EvalItem>& items, const EvalConfig& config,
                    const ImageLoader& loader, const EvalProgress& progress) {
  if (items.empty()) throw Error("no images to evaluate");
  if (config.batch < 1 || config.batch > 65536) throw UsageError("batch must be in 1..65536");
  auto backend = make_backend(config.backend);
  if (Availability a = backend->availability(); !a.available)
    throw Error("backend '" + config.backend + "' is not available: " + a.reason);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = config.loader_threads > 0 ? config.loader_threads : std::min(4, hw);
  const int ahead = config.queue_batches > 0 ? config.queue_batches : threads + 1;
  const int crop = model.preprocess.crop;
  PrepareConfig pc{config.batch, crop, crop, config.precision, config.cuda, 0, config.cudnn};
  pc.device = config.device;
  std::unique_ptr<PreparedNet> net = backend->prepare(model, pc);
  EvalResult r;
  const LoaderQueue queue = fit_loader_queue(config.batch, static_cast<int64_t>(model.input_channels) * crop * crop,
                                             threads, ahead, host_memory_available());
  r.config = config;
  r.config.loader_threads = queue.threads;
  r.config.queue_batches = queue.ahead;
  r.queue_note = queue.note;
  r.backend_description = backend->description();
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  if (progress && !progress(0, static_cast<int>(items.size()))) throw Error("cancelled");
  Tensor input(Shape{config.batch, model.input_channels, crop, crop});  // a short last batch runs padded
  const int64_t per_image = input.shape.per_image();
  const std::vector<std::string> no_labels;
  BatchLoader batches(items, config.batch, queue.threads, queue.ahead, loader);
  int done = 0;
  for (int k = 0; k < batches.count(); ++k) {
    const auto wait0 = clock::now();
    LoadedBatch b = batches.take(k);
    r.loader_wait_s += std::chrono::duration<double>(clock::now() - wait0).count();
    std::vector<size_t> rows;  // item index of each filled row
    for (size_t j = 0; j < b.images.size(); ++j) {
      const size_t item = static_cast<size_t>(k) * static_cast<size_t>(config.batch) + j;
      if (!b.images[j]) {
        r.skipped.push_back({items[item].path, b.errors[j]});
        continue;
      }
      const Tensor& t = *b.images[j];
      if (t.shape.per_image() != per_image || t.shape.n != 1)
        throw Error(items[item].path + ": preprocessed to " + t.shape.str() + ", the network takes " +
                    input.shape.str());
      std::copy(t.data.begin(), t.data.end(), input.data.begin() + static_cast<int64_t>(rows.size()) * per_image);
      rows.push_back(item);
    }
    if (!rows.empty()) {
      const auto run0 = clock::now();
      const Tensor logits = net->run(input);
      r.inference_s += std::chrono::duration<double>(clock::now() - run0).count();
      const int classes = static_cast<int>(logits.shape.per_image());
      for (size_t row = 0; row < rows.size(); ++row) {
        const EvalItem& it = items[rows[row]];
        const auto top = top_k(logits.data.data() + static_cast<int64_t>(row) * classes, classes, 5, no_labels);
        std::vector<int> top5;
        for (const auto& p : top) top5.push_back(p.index);
        const bool hit1 = !top5.empty() && top5.front() == it.label;
        const bool hit5 = std::find(top5.begin(), top5.end(), it.label) != top5.end();
        r.top1_correct += hit1 ? 1 : 0;
        r.top5_correct += hit5 ? 1 : 0;
        if (!hit1) r.misclassified.push_back({it.path, it.label, top5});
        ++r.images;
      }
    }
    done += static_cast<int>(b.images.size());
    if (progress && !progress(done, static_cast<int>(items.size()))) throw Error("cancelled");
  }
  r.wall_s = std::chrono::duration<double>(clock::now() - start).count();
  if (r.images == 0)
    throw Error("every image was unreadable (first: " + r.skipped.front().path + ": " + r.skipped.front().reason + ")");
  r.top1 = static_cast<double>(r.top1_correct) / r.images;
  r.top5 = static_cast<double>(r.top5_correct) / r.images;
  r.images_per_s = r.wall_s > 0 ? r.images / r.wall_s : 0;
  return r;
}

}  // namespace mnv2
