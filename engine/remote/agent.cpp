// The agent: `mnv2 agent --protocol N` on a target (mnv2/remote.h). It serves one client over its standard
// input and output: a probe, the model cache, the files of a run, the run itself (the program's own command in
// a process group of its own, in a private folder), and, for a Slurm target, the relay through srun.
#include <dirent.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/private_cache.h"
#include "mnv2/remote.h"
#include "remote/process.h"
#include "remote/wire.h"
#include "util/sha256.h"

namespace mnv2::remote {

namespace fs = std::filesystem;
using json::Json;

namespace {

constexpr auto kIdle = std::chrono::hours(2);  // a client that says nothing for this long is gone
constexpr const char* kRunPrefix = "mnv2-agent-";

bool alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// A name one folder entry may have: any bytes but '/' and NUL, not "." or "..", at most 255 bytes.
void check_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 255 || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    throw Error("a file name must be one folder entry (no '/', not '.' or '..', 1 to 255 bytes)");
}

// Removes the run folders of agents of this user that are gone ("mnv2-agent-PID-XXXXXX" under the temporary
// folder): what a killed agent left.
int sweep_stale_folders(const std::string& root) {
  int removed = 0;
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kRunPrefix, 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + std::strlen(kRunPrefix)));
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid() || alive(pid))
      continue;
    std::error_code ec;
    fs::remove_all(fs::path(root) / name, ec);
    removed += ec ? 0 : 1;
  }
  ::closedir(d);
  return removed;
}

class Agent {
 public:
  explicit Agent(const AgentConfig& c) : c_(c), in_(c.in_fd) {}
  ~Agent() { remove_run_dir(); }

  int serve() {
    Json hello{{"type", "hello"},     {"protocol", kProtocol}, {"version", c_.version},     {"commit", c_.commit},
               {"host", c_.hostname}, {"pid", ::getpid()},     {"slurm_job", c_.slurm_job}, {"program", c_.program}};
    if (c_.protocol != kProtocol) {
      send(c_.out_fd,
           Json{{"type", "error"},
                {"kind", "protocol"},
                {"message", "this mnv2 (" + c_.version + ") speaks agent protocol " + std::to_string(kProtocol) +
                                ", the client asked for " + std::to_string(c_.protocol)}});
      return 3;
    }
    sweep_stale_folders(c_.temp_root);
    if (!send(c_.out_fd, hello)) return 0;
    for (;;) {
      std::optional<Json> m;
      try {
        m = receive(in_, Clock::now() + kIdle);
      } catch (const Error& e) {
        fail("protocol", e.what());
        return 1;
      }
      if (!m) return 0;  // the client closed: the session is over
      const std::string type = (*m)["type"];
      try {
        if (type == "bye") return 0;
        if (type == "probe") {
          probe();
        } else if (type == "launch") {
          return launch(*m);
        } else if (type == "model") {
          model(*m);
        } else if (type == "file") {
          file(*m);
        } else if (type == "tree") {
          tree(*m);
        } else if (type == "run") {
          if (!run(*m)) return 0;
        } else if (type == "cancel") {
          // nothing runs between messages
        } else {
          throw Error("unknown message '" + type + "'");
        }
      } catch (const Error& e) {
        fail("request", e.what());
        return 1;
      }
    }
  }

 private:
  void fail(const std::string& kind, const std::string& message) {
    send(c_.out_fd, Json{{"type", "error"}, {"kind", kind}, {"message", message}});
  }

  const std::string& run_dir() {
    if (run_dir_.empty()) {
      std::string name = c_.temp_root + "/" + kRunPrefix + std::to_string(::getpid()) + "-XXXXXX";
      if (::mkdtemp(name.data()) == nullptr)
        throw Error("cannot create a private folder in " + c_.temp_root + ": " + std::strerror(errno));
      run_dir_ = name;
      for (const char* sub : {"/in", "/out"})
        if (::mkdir((run_dir_ + sub).c_str(), 0700) != 0) throw Error("cannot create " + run_dir_ + sub);
    }
    return run_dir_;
  }

  void remove_run_dir() {
    if (run_dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(run_dir_, ec);
    run_dir_.clear();
  }

  // Creates `name` beneath `dir_fd` (AT_FDCWD: a path) as a new file, no link followed, and fills it with the
  // client's next `size` bytes; returns their SHA-256.
  std::string receive_new_file(int dir_fd, const std::string& name, int64_t size) {
    const int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw Error("cannot create a file of the run: " + std::string(std::strerror(errno)));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    return receive_file_data(in_, fd, size, Clock::now() + kIdle);
  }

  void probe() {
    const Captured info = run_captured({c_.program, "info", "--json"}, 120, size_t{4} << 20);
    Json reply{{"type", "probe"},           {"glibc", gnu_get_libc_version()},
               {"program", c_.program},     {"host", c_.hostname},
               {"slurm_job", c_.slurm_job}, {"version", c_.version},
               {"commit", c_.commit},       {"protocol", kProtocol}};
    try {
      if (info.code != 0)
        throw Error("'mnv2 info --json' " + std::string(info.code == 124 ? "timed out" : "failed") + ": " +
                    info.err.substr(0, 2000));
      reply["info"] = json::parse(info.out, inputs::kJsonDocument);
    } catch (const Error& e) {
      reply["info_error"] = e.what();
    }
    send(c_.out_fd, reply);
  }

  // The model cache: a private folder, entries by SHA-256, checked again on every use.
  std::string cached_model(const std::string& sha) {
    if (c_.model_cache.empty()) return {};
    PrivateCache cache = PrivateCache::open(c_.model_cache);
    if (!cache.usable()) return {};
    const std::string name = "model-" + sha + ".onnx";
    const int fd = ::open(cache.file(name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return {};
    struct stat st {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
    std::string have;
    if (regular) {
      // the hash of what is there now, not of what was stored: a cache entry changed since is not used
      have = sha256_fd_hex(fd, "the cached model " + name);
    }
    ::close(fd);
    if (have != sha) {
      std::error_code ec;
      fs::remove(cache.file(name), ec);
      return {};
    }
    return cache.file(name);
  }

  void model(const Json& m) {
    const std::string sha = json::string_at(m, "sha256");
    const int64_t size = json::int_at(m, "size");
    if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error("a model's sha256 must be 64 lower-case hex digits");
    if (size < 1 || size > kMaxFileBytes) throw Error("a model's size must be 1 byte to 4 GiB");
    if (std::string path = cached_model(sha); !path.empty()) {
      models_[sha] = path;
      send(c_.out_fd, Json{{"type", "model"}, {"sha256", sha}, {"cached", true}});
      return;
    }
    send(c_.out_fd, Json{{"type", "send"}, {"sha256", sha}});
    const std::string path = run_dir() + "/in/model-" + sha + ".onnx";
    const std::string got = receive_new_file(AT_FDCWD, path, size);
    if (got != sha) throw Error("the model arrived with SHA-256 " + got + ", not " + sha);
    models_[sha] = path;
    bool stored = false;
    if (!c_.model_cache.empty()) {
      PrivateCache cache = PrivateCache::open(c_.model_cache);
      if (cache.usable()) {
        try {
          std::string bytes = read_input_file(path, inputs::kModel);
          cache.write("model-" + sha + ".onnx", bytes);
          stored = true;
        } catch (const Error&) {
        }
      }
    }
    send(c_.out_fd, Json{{"type", "model"}, {"sha256", sha}, {"cached", false}, {"stored", stored}});
  }

  void file(const Json& m) {
    const std::string option = json::string_at(m, "option");
    const std::string name = base64_decode(json::string_at(m, "name_b64"));
    const int64_t size = json::int_at(m, "size");
    check_file_name(name);
    if (option.rfind("--", 0) != 0) throw Error("a file's option must start with '--'");
    if (size < 0 || size > kMaxFileBytes) throw Error("a file's size must be 0 to 4 GiB");
    const std::string folder = run_dir() + "/in/" + std::to_string(files_.size());
    if (::mkdir(folder.c_str(), 0700) != 0) throw Error("cannot create " + folder + ": " + std::strerror(errno));
    const std::string path = folder + "/" + name;
    receive_new_file(AT_FDCWD, path, size);
    files_.emplace_back(option, path);
    send(c_.out_fd, Json{{"type", "file"}, {"option", option}, {"size", size}});
  }

  // A folder's files, each beneath a fresh folder of the run under its relative name: every component is one
  // folder entry (no '..'), every folder made and opened without following a link, every file created new.
  void tree(const Json& m) {
    const std::string option = json::string_at(m, "option");
    const int64_t count = json::int_at(m, "count");
    if (option.rfind("--", 0) != 0) throw Error("a tree's option must start with '--'");
    if (count < 0 || count > 10'000'000) throw Error("a tree holds 0 to 10 000 000 files");
    const std::string root = run_dir() + "/in/" + std::to_string(files_.size());
    if (::mkdir(root.c_str(), 0700) != 0) throw Error("cannot create " + root + ": " + std::strerror(errno));
    const int root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root_fd < 0) throw Error("cannot open " + root);
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{root_fd};
    int64_t total = 0;
    for (int64_t i = 0; i < count; ++i) {
      auto e = receive(in_, Clock::now() + kIdle);
      if (!e || (*e)["type"] != "entry") throw Error("expected a tree entry");
      const std::string path = base64_decode(json::string_at(*e, "path_b64"));
      const int64_t size = json::int_at(*e, "size");
      if (size < 0 || size > kMaxFileBytes) throw Error("a file's size must be 0 to 4 GiB");
      total += size;
      if (total > (int64_t{1} << 40)) throw Error("a tree of more than 1 TiB");
      std::vector<std::string> parts;
      size_t start = 0;
      for (;;) {
        const size_t slash = path.find('/', start);
        parts.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
      }
      if (parts.size() > 64) throw Error("a tree entry deeper than 64 folders");
      int dir = ::dup(root_fd);
      for (size_t k = 0; k + 1 < parts.size(); ++k) {
        check_file_name(parts[k]);
        if (::mkdirat(dir, parts[k].c_str(), 0700) != 0 && errno != EEXIST) {
          ::close(dir);
          throw Error("cannot create a folder of the tree: " + std::string(std::strerror(errno)));
        }
        const int next = ::openat(dir, parts[k].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        ::close(dir);
        if (next < 0) throw Error("a folder of the tree is not a folder");
        dir = next;
      }
      check_file_name(parts.back());
      struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
      } closer{dir};
      receive_new_file(dir, parts.back(), size);
    }
    files_.emplace_back(option, root);
    send(c_.out_fd, Json{{"type", "tree"}, {"option", option}, {"count", count}});
  }

  // Runs the study; false when the client went away during it.
  bool run(const Json& m) {
    const std::string command = json::string_at(m, "command");
    std::vector<std::string> args;
    for (const Json& a : json::array_at(m, "args_b64")) args.push_back(base64_decode(json::as_string(a)));
    if (c_.check_run) {
      if (std::string why = c_.check_run(command, args); !why.empty()) throw Error(why);
    }
    std::vector<std::string> argv = {c_.program, command};
    argv.insert(argv.end(), args.begin(), args.end());
    if (const Json* sha = json::find(m, "model_sha256")) {
      auto it = models_.find(json::as_string(*sha));
      if (it == models_.end()) throw Error("the run names a model that was not sent");
      argv.insert(argv.end(), {"--model", it->second});
    }
    for (const auto& [option, path] : files_) argv.insert(argv.end(), {option, path});
    std::vector<std::pair<std::string, std::string>> outputs;
    for (const Json& o : json::array_at(m, "outputs")) {
      const std::string option = json::as_string(o);
      if (option.rfind("--", 0) != 0 || option.find_first_not_of("-abcdefghijklmnopqrstuvwxyz") != std::string::npos)
        throw Error("an output must be an option name");
      const std::string path = run_dir() + "/out/" + std::to_string(outputs.size()) + option.substr(1);
      outputs.emplace_back(option, path);
      argv.insert(argv.end(), {option, path});
    }
    int progress[2];
    if (::pipe2(progress, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
    argv.insert(argv.end(), {"--progress-fd", "3"});
    SpawnOptions o;
    o.pipe_stdin = false;
    o.null_stdin = true;  // the agent's input is the client's channel: the study never reads it
    o.extra_fd = progress[1];
    o.cwd = run_dir();
    Child child;
    try {
      child = Child::spawn(argv, o);
    } catch (...) {
      ::close(progress[0]);
      ::close(progress[1]);
      throw;
    }
    ::close(progress[1]);
    LineReader progress_lines(progress[0]);
    bool out_open = true, err_open = true, progress_open = true, client_gone = false, cancelled = false;
    auto last_sent = Clock::now();
    std::string err_rest;
    while (out_open || err_open || progress_open) {
      if (Clock::now() - last_sent > std::chrono::seconds(20)) {
        // a heartbeat: a study that prints nothing for minutes is still running
        if (!send(c_.out_fd, Json{{"type", "alive"}})) {
          client_gone = cancelled = true;
          child.terminate();
          break;
        }
        last_sent = Clock::now();
      }
      const int i = wait_readable(
          {c_.in_fd, out_open ? child.out : -1, err_open ? child.err : -1, progress_open ? progress[0] : -1},
          Clock::now() + std::chrono::seconds(1));
      if (i == 0) {
        // the client: a cancel, or its end
        std::optional<Json> msg;
        try {
          msg = receive(in_, Clock::now() + std::chrono::milliseconds(50));
        } catch (const TimeoutError&) {
          continue;
        } catch (const Error&) {
          msg.reset();
        }
        if (!msg || (*msg)["type"] == "cancel") {
          client_gone = !msg;
          cancelled = true;
          child.terminate();
          break;
        }
        continue;
      }
      if (i > 0) last_sent = Clock::now();
      if (i == 3) {
        if (!progress_lines.fill()) progress_open = false;
        while (auto line = progress_lines.take_line()) {
          // "P DONE TOTAL PHASE" from --progress-fd
          long long done = 0, total = 0;
          int used = 0;
          if (std::sscanf(line->c_str(), "P %lld %lld %n", &done, &total, &used) == 2 && used > 0)
            send(c_.out_fd, Json{{"type", "progress"},
                                 {"phase", line->substr(static_cast<size_t>(used))},
                                 {"done", done},
                                 {"total", total}});
        }
        continue;
      }
      if (i == 1) {
        char chunk[65536];
        const ssize_t got = ::read(child.out, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          out_open = false;
          continue;
        }
        send(c_.out_fd,
             Json{{"type", "stdout"}, {"b64", base64_encode(std::string_view(chunk, static_cast<size_t>(got)))}});
      }
      if (i == 2) {
        // Line by line: the study's "wrote <this run's folder>/..." lines are the agent's business, not the user's.
        char chunk[65536];
        const ssize_t got = ::read(child.err, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          err_open = false;
          if (!err_rest.empty()) send(c_.out_fd, Json{{"type", "stderr"}, {"b64", base64_encode(err_rest)}});
          err_rest.clear();
          continue;
        }
        err_rest.append(chunk, static_cast<size_t>(got));
        std::string lines;
        size_t nl;
        while ((nl = err_rest.find('\n')) != std::string::npos) {
          const std::string line = err_rest.substr(0, nl + 1);
          err_rest.erase(0, nl + 1);
          if (line.rfind("wrote " + run_dir_ + "/", 0) != 0) lines += line;
        }
        if (err_rest.size() > 65536) {
          lines += err_rest;
          err_rest.clear();
        }
        if (!lines.empty()) send(c_.out_fd, Json{{"type", "stderr"}, {"b64", base64_encode(lines)}});
      }
    }
    ::close(progress[0]);
    int status = 0;
    if (!cancelled) {
      const auto st = child.wait_until(Clock::now() + std::chrono::seconds(30));
      status = st ? *st : child.terminate();
    } else {
      status = *child.status();
    }
    if (client_gone) {
      remove_run_dir();
      return false;
    }
    if (!cancelled && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      for (const auto& [option, path] : outputs) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        ::fstat(fd, &st);
        send(c_.out_fd, Json{{"type", "output"}, {"option", option}, {"size", static_cast<int64_t>(st.st_size)}});
        const bool ok = send_file_data(c_.out_fd, fd, st.st_size);
        ::close(fd);
        if (!ok) return false;
      }
    send(c_.out_fd, Json{{"type", "exit"},
                         {"code", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)},
                         {"how", describe_status(status)},
                         {"cancelled", cancelled}});
    // A session runs one study: its files go with it.
    remove_run_dir();
    files_.clear();
    return true;
  }

  // ---- Slurm: the agent on the login node starts the agent of a job through srun and relays -----------------

  std::string job_name() const { return "mnv2-agent-" + c_.hostname + "-" + std::to_string(::getpid()); }

  // The user's jobs of this host's agents that are gone: cancelled.
  void sweep_stale_jobs() {
    const Captured q = run_captured({"squeue", "-h", "-u", c_.user, "-o", "%i %j"}, 20);
    if (q.code != 0) return;
    const std::string prefix = "mnv2-agent-" + c_.hostname + "-";
    size_t start = 0;
    while (start < q.out.size()) {
      size_t end = q.out.find('\n', start);
      if (end == std::string::npos) end = q.out.size();
      const std::string line = q.out.substr(start, end - start);
      start = end + 1;
      const size_t sp = line.find(' ');
      if (sp == std::string::npos) continue;
      const std::string id = line.substr(0, sp), name = line.substr(sp + 1);
      if (name.rfind(prefix, 0) != 0) continue;
      const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
      if (!alive(pid)) run_captured({"scancel", id}, 20);
    }
  }

  struct JobState {
    std::string id, state, reason;
  };
  std::optional<JobState> job_state() {
    const Captured q = run_captured({"squeue", "-h", "-u", c_.user, "--name=" + job_name(), "-o", "%i|%T|%r"}, 20);
    if (q.code != 0 || q.out.empty()) return std::nullopt;
    const std::string line = q.out.substr(0, q.out.find('\n'));
    const size_t a = line.find('|'), b = line.find('|', a + 1);
    if (a == std::string::npos || b == std::string::npos) return std::nullopt;
    return JobState{line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)};
  }

  void cancel_job() { run_captured({"scancel", "-u", c_.user, "--name=" + job_name()}, 20); }

  int launch(const Json& m) {
    const Json& s = json::at(m, "slurm");
    auto field = [&](const char* key) {
      const Json* v = json::find(s, key);
      return v != nullptr ? json::as_string(*v) : std::string();
    };
    const int pending_timeout = static_cast<int>(json::int_at(s, "pending_timeout_s"));
    std::vector<std::string> argv = {"srun", "--job-name=" + job_name(), "--ntasks=1", "--unbuffered"};
    if (!field("partition").empty()) argv.push_back("--partition=" + field("partition"));
    if (!field("gres").empty()) argv.push_back("--gres=" + field("gres"));
    if (!field("time").empty()) argv.push_back("--time=" + field("time"));
    if (!field("account").empty()) argv.push_back("--account=" + field("account"));
    if (const Json* extra = json::find(s, "extra_args"))
      for (const Json& e : json::as_array(*extra)) argv.push_back(json::as_string(e));
    argv.insert(argv.end(), {c_.program, "agent", "--protocol", std::to_string(kProtocol)});
    std::string setup;
    if (const Json* lines = json::find(m, "setup"))
      for (const Json& l : json::as_array(*lines)) setup += json::as_string(l) + "\n";
    if (!setup.empty()) {
      argv.insert(argv.begin(), {"/bin/sh", "-c", setup + "exec \"$@\"", "mnv2-setup"});
    }
    sweep_stale_jobs();
    Child srun = Child::spawn(argv);
    LineReader from_job(srun.out);
    std::string srun_err;
    const auto started = Clock::now();
    bool running = false;  // the job's agent has spoken
    auto last_query = Clock::now() - std::chrono::seconds(10);
    std::string last_reason;
    int last_said = 0;
    bool in_open = true, out_open = true, err_open = true;
    while (out_open || err_open) {
      const int i = wait_readable({in_open ? c_.in_fd : -1, out_open ? srun.out : -1, err_open ? srun.err : -1},
                                  Clock::now() + std::chrono::seconds(1));
      if (!running && Clock::now() - last_query >= std::chrono::seconds(2)) {
        last_query = Clock::now();
        if (auto st = job_state(); st && st->state == "PENDING") {
          const int waited =
              static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count());
          if (st->reason != last_reason || waited - last_said >= 20) {
            send(c_.out_fd, Json{{"type", "pending"}, {"job", st->id}, {"reason", st->reason}, {"waited_s", waited}});
            last_reason = st->reason;
            last_said = waited;
          }
          if (waited >= pending_timeout) {
            cancel_job();
            srun.terminate();
            fail("pending_timeout", "Slurm job " + st->id + " was still pending after " + std::to_string(waited) +
                                        " s (reason: " + st->reason + ") and was cancelled");
            return 1;
          }
        }
      }
      if (i == 0) {
        char chunk[65536];
        const ssize_t got = ::read(c_.in_fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          // The client is gone (or cancelled): the job goes with it.
          in_open = false;
          cancel_job();
          srun.close_in();
          srun.terminate(std::chrono::milliseconds(3000));
          return 0;
        }
        if (!write_all(srun.in, std::string_view(chunk, static_cast<size_t>(got)))) in_open = false;
      } else if (i == 1) {
        char chunk[65536];
        const ssize_t got = ::read(srun.out, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          out_open = false;
          continue;
        }
        running = true;
        if (!write_all(c_.out_fd, std::string_view(chunk, static_cast<size_t>(got)))) {
          cancel_job();
          srun.terminate();
          return 0;
        }
      } else if (i == 2) {
        char chunk[8192];
        const ssize_t got = ::read(srun.err, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          err_open = false;
          continue;
        }
        if (srun_err.size() < 65536) srun_err.append(chunk, static_cast<size_t>(got));
      }
    }
    const int status = srun.wait_until(Clock::now() + std::chrono::seconds(10)).value_or(srun.terminate());
    if (!running) {
      std::string tail = srun_err.size() > 2000 ? srun_err.substr(srun_err.size() - 2000) : srun_err;
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      fail("slurm", "srun ended (" + describe_status(status) + ") before the job's agent started" +
                        (tail.empty() ? std::string() : ": " + tail));
      return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }

  const AgentConfig& c_;
  LineReader in_;
  std::string run_dir_;
  std::map<std::string, std::string> models_;               // sha -> path
  std::vector<std::pair<std::string, std::string>> files_;  // option -> path
};

}  // namespace

int run_agent(const AgentConfig& config) {
  // A client that goes away mid-write is an EPIPE, not a death.
  ::signal(SIGPIPE, SIG_IGN);
  try {
    Agent a(config);
    return a.serve();
  } catch (const std::exception& e) {
    send(config.out_fd, Json{{"type", "error"}, {"kind", "agent"}, {"message", e.what()}});
    return 1;
  }
}

}  // namespace mnv2::remote
