// The client's side of a remote target (mnv2/remote.h): ssh to the fixed entry point, the agent's hello (through
// srun for a Slurm target), the probe, the model cache, a run's files, its progress and its results. Every wait
// has a deadline; a failure says what went wrong in the user's terms.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mnv2/contained_open.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/remote.h"
#include "remote/process.h"
#include "remote/wire.h"
#include "util/sha256.h"

namespace mnv2::remote {

namespace fs = std::filesystem;
using json::Json;

namespace {

std::string last_lines(const std::string& text, size_t max = 600) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  if (t.size() > max) t = "..." + t.substr(t.size() - max);
  return t;
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

}  // namespace

// What ssh's own words (exit status 255) mean for the user.
std::string ssh_failure(const Target& t, const std::string& err) {
  const std::string who = "target '" + t.name + "' (" + t.host + ")";
  if (contains(err, "Host key verification failed") || contains(err, "REMOTE HOST IDENTIFICATION HAS CHANGED") ||
      contains(err, "No ED25519 host key is known") || contains(err, "host key is known"))
    return who +
           ": its host key is not in your known_hosts (or has changed). mnv2 never accepts a host key by "
           "itself: check the fingerprint and connect once with 'ssh " +
           t.host + "' (or 'mnv2 targets connect " + t.name + "'). ssh said: " + last_lines(err);
  if (contains(err, "Permission denied") || contains(err, "Too many authentication failures"))
    return who +
           ": authentication failed. Runs never prompt: load your key into ssh-agent, or log in once "
           "with 'mnv2 targets connect " +
           t.name +
           "' (passphrases and one-time codes go to OpenSSH's own "
           "prompt). ssh said: " +
           last_lines(err);
  if (contains(err, "Could not resolve hostname"))
    return who + ": the host name does not resolve. ssh said: " + last_lines(err);
  if (contains(err, "Connection refused") || contains(err, "timed out") || contains(err, "No route to host") ||
      contains(err, "Network is unreachable") || contains(err, "Connection closed") ||
      contains(err, "Connection reset"))
    return who + ": the host is unreachable. ssh said: " + last_lines(err);
  if (contains(err, "Bad configuration option") || contains(err, "Can't open user config file") ||
      contains(err, "bad configuration"))
    return who + ": ssh refused its configuration: " + last_lines(err);
  return who + ": ssh failed: " + (err.empty() ? std::string("(no message)") : last_lines(err));
}

struct Session::Impl {
  Target t;
  SessionConfig c;
  RemoteProgressFn progress;
  Child ssh;
  LineReader reader;
  std::string ssh_err;
  std::atomic<bool> cancelled{false};
  bool cancel_sent = false;
  std::string host, slurm_job, agent_version;

  std::string who() const { return "target '" + t.name + "'"; }

  void report(const std::string& stage, const std::string& phase = {}, int64_t done = 0, int64_t total = 0) {
    if (progress) progress(RemoteProgress{stage, phase, done, total});
  }

  void drain_stderr() {
    if (ssh.err < 0) return;
    char chunk[4096];
    for (;;) {
      const ssize_t got = ::read(ssh.err, chunk, sizeof chunk);
      if (got <= 0) break;
      ssh_err.append(chunk, static_cast<size_t>(got));
      if (ssh_err.size() > 65536) ssh_err.erase(0, ssh_err.size() - 65536);
    }
  }

  void tick() {
    drain_stderr();
    if (c.cancelled && c.cancelled()) cancelled = true;
    if (cancelled && !cancel_sent) {
      cancel_sent = true;
      ssh.close_in();  // the agent sees its input end: it kills its run and cancels its job
    }
  }

  // The next message, or Error: the agent's own error message, the connection's end (ssh's words), a time-out.
  Json next(Clock::time_point deadline, const std::string& waiting_for) {
    std::optional<Json> m;
    try {
      m = receive(reader, deadline, [this] { tick(); });
    } catch (const TimeoutError&) {
      throw Error(who() + ": no answer within the time-out while " + waiting_for);
    }
    if (!m) {
      const auto st = ssh.wait_until(Clock::now() + std::chrono::seconds(3));
      drain_stderr();
      if (cancelled) throw Error("cancelled");
      if (st && WIFEXITED(*st) && WEXITSTATUS(*st) == 255) throw Error(ssh_failure(t, ssh_err));
      throw Error(who() + ": the connection ended while " + waiting_for +
                  (st ? " (ssh: " + describe_status(*st) + ")" : std::string()) +
                  (ssh_err.empty() ? std::string() : ": " + last_lines(ssh_err)));
    }
    if ((*m)["type"] == "error") {
      const Json* text = json::find(*m, "message");
      throw Error(who() + ": " + (text != nullptr && text->is_string() ? text->get<std::string>() : "an error"));
    }
    return *m;
  }

  // Starts ssh with one of the entry points; true when the agent said hello.
  bool try_start(const std::vector<std::string>& command, std::string* missing) {
    SpawnOptions o;
    o.env = {"SSH_ASKPASS_REQUIRE=" + std::string(c.ssh.batch ? "never" : "force")};
    ssh = Child::spawn(ssh_argv(t, c.ssh, command), o);
    ::fcntl(ssh.err, F_SETFL, ::fcntl(ssh.err, F_GETFL) | O_NONBLOCK);
    reader = LineReader(ssh.out);
    ssh_err.clear();
    const auto deadline = Clock::now() + std::chrono::seconds(c.hello_timeout_s);
    std::optional<Json> m;
    try {
      m = receive(reader, deadline, [this] { tick(); });
    } catch (const TimeoutError&) {
      ssh.terminate(std::chrono::milliseconds(500));
      drain_stderr();
      throw Error(who() + ": no answer within " + std::to_string(c.hello_timeout_s) + " s" +
                  (ssh_err.empty() ? std::string() : " (ssh said: " + last_lines(ssh_err) + ")"));
    } catch (const Error& e) {
      ssh.terminate(std::chrono::milliseconds(500));
      drain_stderr();
      throw Error(who() + ": the target's login prints something before the agent speaks (" + e.what() +
                  "); a login script that writes to standard output breaks non-interactive ssh");
    }
    if (m && (*m)["type"] == "hello") {
      host = (*m).value("host", "");
      slurm_job = (*m).value("slurm_job", "");
      agent_version = (*m).value("version", "");
      const int protocol = static_cast<int>((*m).value("protocol", 0));
      if (protocol != kProtocol)
        throw Error(who() + " runs mnv2 " + agent_version + " with agent protocol " + std::to_string(protocol) +
                    "; this mnv2 speaks " + std::to_string(kProtocol) + ": run 'mnv2 remote install " + t.name + "'");
      return true;
    }
    if (m && (*m)["type"] == "error") {
      const std::string text = (*m).value("message", "an error");
      throw Error(who() + ": " + text + ": run 'mnv2 remote install " + t.name + "'");
    }
    const auto st = ssh.wait_until(Clock::now() + std::chrono::seconds(5));
    drain_stderr();
    if (!st) ssh.terminate(std::chrono::milliseconds(500));
    if (cancelled) throw Error("cancelled");
    const int code = st && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
    if (code == 255) throw Error(ssh_failure(t, ssh_err));
    if (contains(ssh_err, "GLIBC_"))
      throw Error(who() + ": the target's C library is older than this mnv2 build needs: " + last_lines(ssh_err));
    if (code == 127 || contains(ssh_err, "not found") || contains(ssh_err, "No such file")) {
      *missing += (missing->empty() ? "" : "; ") + command.front() + ": " + last_lines(ssh_err, 200);
      return false;
    }
    if (contains(ssh_err, "unknown command 'agent'") || contains(ssh_err, "agent"))
      throw Error(who() + " has an mnv2 too old to serve remote runs (it has no agent): run 'mnv2 remote install " +
                  t.name + "'");
    throw Error(who() + ": the agent ended before it spoke (" + (st ? describe_status(*st) : "still running") + ")" +
                (ssh_err.empty() ? std::string() : ": " + last_lines(ssh_err)));
  }

  void start() {
    report("connect", t.host);
    std::string missing;
    bool started = false;
    for (const auto& command : agent_commands(c.version))
      if ((started = try_start(command, &missing))) break;
    if (!started)
      throw Error(who() + ": mnv2 is not installed there (tried " + missing + "): run 'mnv2 remote install " + t.name +
                  "', or install the package there");
    if (!t.slurm) return;
    const SlurmLauncher& s = *t.slurm;
    Json launch{{"type", "launch"},
                {"slurm", Json{{"partition", s.partition},
                               {"gres", s.gres},
                               {"time", s.time_limit},
                               {"account", s.account},
                               {"extra_args", s.extra},
                               {"pending_timeout_s", s.pending_timeout_s}}},
                {"setup", t.setup}};
    if (!send(ssh.in, launch)) throw Error(who() + ": the connection ended before the Slurm launch");
    const auto deadline = Clock::now() + std::chrono::seconds(s.pending_timeout_s + c.hello_timeout_s + 30);
    for (;;) {
      Json m = next(deadline, "waiting for the Slurm job to start");
      const std::string type = m["type"];
      if (type == "pending") {
        report("pending", "job " + m.value("job", "") + ": " + m.value("reason", ""), m.value("waited_s", 0),
               s.pending_timeout_s);
        continue;
      }
      if (type == "hello") {
        host = m.value("host", "");
        slurm_job = m.value("slurm_job", "");
        return;
      }
      throw Error(who() + ": unexpected message '" + type + "' while the Slurm job started");
    }
  }

  Clock::time_point idle() const { return Clock::now() + std::chrono::seconds(c.idle_timeout_s); }

  void send_or_throw(const Json& m) {
    if (!send(ssh.in, m)) throw Error(who() + ": the connection ended");
  }
};

Session::Session(const Target& target, const SessionConfig& config, const RemoteProgressFn& progress)
    : impl_(std::make_unique<Impl>()) {
  impl_->t = target;
  impl_->c = config;
  impl_->progress = progress;
  impl_->start();
}

Session::~Session() {
  if (!impl_) return;
  if (impl_->ssh.in >= 0) send(impl_->ssh.in, Json{{"type", "bye"}});
  impl_->ssh.close_in();
  if (!impl_->ssh.wait_until(Clock::now() + std::chrono::seconds(5))) impl_->ssh.terminate();
}

void Session::cancel() { impl_->cancelled = true; }
const std::string& Session::host() const { return impl_->host; }
const std::string& Session::slurm_job() const { return impl_->slurm_job; }

namespace {

int64_t int_or(const Json& j, const char* key, int64_t fallback) {
  const Json* v = j.is_object() ? json::find(j, key) : nullptr;
  return v != nullptr && v->is_number_integer() ? v->get<int64_t>() : fallback;
}
std::string str_or(const Json& j, const char* key) {
  const Json* v = j.is_object() ? json::find(j, key) : nullptr;
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

ProbeResult Session::probe() {
  Impl& s = *impl_;
  const auto t0 = Clock::now();
  s.send_or_throw(Json{{"type", "probe"}});
  Json m = s.next(Clock::now() + std::chrono::seconds(180), "waiting for the probe");
  if (m["type"] != "probe") throw Error(s.who() + ": unexpected message '" + m["type"].get<std::string>() + "'");
  ProbeResult r;
  r.target = s.t.name;
  r.host = str_or(m, "host");
  r.slurm_job = str_or(m, "slurm_job");
  r.mnv2_version = str_or(m, "version");
  r.mnv2_commit = str_or(m, "commit");
  r.mnv2_path = str_or(m, "program");
  r.protocol = static_cast<int>(int_or(m, "protocol", 0));
  r.glibc = str_or(m, "glibc");
  if (const Json* info = json::find(m, "info"); info != nullptr && info->is_object()) {
    const Json& build = info->value("build", Json::object());
    for (const Json& a : build.value("cuda_architectures", Json::array()))
      if (a.is_string()) r.architectures += (r.architectures.empty() ? "" : " ") + a.get<std::string>();
    r.cuda_runtime = str_or(build, "cuda_runtime");
    const Json& cuda = info->value("cuda", Json::object());
    r.driver = str_or(cuda, "driver_release");
    if (r.driver.empty()) r.driver = str_or(cuda, "driver");
    for (const Json& d : cuda.value("devices", Json::array())) {
      ProbeGpu g;
      g.index = static_cast<int>(int_or(d, "index", -1));
      g.name = str_or(d, "name");
      g.uuid = str_or(d, "uuid");
      g.compute_capability = str_or(d, "compute_capability");
      g.memory_bytes = int_or(d, "memory_bytes", 0);
      if (const std::string why = str_or(d, "cannot_run"); !why.empty())
        r.problems.push_back("GPU " + std::to_string(g.index) + ": " + why);
      r.gpus.push_back(g);
    }
    if (r.gpus.empty() && !str_or(cuda, "why_none").empty())
      r.problems.push_back("no GPU: " + str_or(cuda, "why_none"));
    const Json& plugin = build.value("gpu_plugin", Json::object());
    if (!plugin.value("loaded", false) && !str_or(plugin, "problem").empty())
      r.problems.push_back("GPU backends: " + str_or(plugin, "problem"));
    for (const Json& b : info->value("backends", Json::array())) {
      ProbeBackend pb{str_or(b, "name"), b.is_object() && b.value("available", false), str_or(b, "reason")};
      r.backends.push_back(pb);
    }
    // CUDA 13 needs a driver of the 580 series or later.
    if (!r.gpus.empty()) {
      const int major = std::atoi(str_or(cuda, "driver_release").c_str());
      if (major > 0 && major < 580)
        r.problems.push_back("driver " + str_or(cuda, "driver_release") + " is older than 580, which CUDA 13 needs");
    }
  } else {
    r.problems.push_back("the target's 'mnv2 info' failed: " + str_or(m, "info_error"));
  }
  if (r.protocol != kProtocol) r.problems.push_back("agent protocol " + std::to_string(r.protocol));
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

void Session::put_model(const std::string& path) {
  Impl& s = *impl_;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read the model " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("the model " + path + " is not a regular file");
  }
  try {
    const std::string sha = sha256_fd_hex(fd, path);
    s.send_or_throw(Json{{"type", "model"}, {"sha256", sha}, {"size", static_cast<int64_t>(st.st_size)}});
    Json m = s.next(s.idle(), "offering the model");
    if (m["type"] == "send") {
      s.report("upload", "model", 0, st.st_size);
      if (!send_file_data(s.ssh.in, fd, st.st_size, [&](int64_t done) {
            s.report("upload", "model", done, st.st_size);
            s.tick();
            if (s.cancelled) throw Error("cancelled");
          }))
        throw Error(s.who() + ": the connection ended while the model was sent");
      m = s.next(s.idle(), "storing the model");
    }
    if (m["type"] != "model") throw Error(s.who() + ": unexpected message '" + m["type"].get<std::string>() + "'");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

RemoteRunResult Session::run(const RemoteRunRequest& req) {
  Impl& s = *impl_;
  Json run{{"type", "run"}, {"command", req.command}, {"outputs", req.outputs}};
  if (!req.model_path.empty()) {
    put_model(req.model_path);
    const int fd = ::open(req.model_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot read the model " + req.model_path);
    run["model_sha256"] = sha256_fd_hex(fd, req.model_path);
    ::close(fd);
  }
  for (const RemoteFile& f : req.files) {
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot read " + f.path + ": " + std::strerror(errno));
    struct stat st {};
    ::fstat(fd, &st);
    try {
      s.send_or_throw(Json{{"type", "file"},
                           {"option", f.option},
                           {"name_b64", base64_encode(f.name)},
                           {"size", static_cast<int64_t>(st.st_size)}});
      if (!send_file_data(s.ssh.in, fd, st.st_size, [&](int64_t done) {
            s.report("upload", f.option, done, st.st_size);
            s.tick();
            if (s.cancelled) throw Error("cancelled");
          }))
        throw Error(s.who() + ": the connection ended while " + f.option + " was sent");
      const Json ack = s.next(s.idle(), "sending " + f.option);
      if (ack["type"] != "file") throw Error(s.who() + ": unexpected message while sending " + f.option);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  for (const RemoteTree& tree : req.trees) {
    const int dir = ::open(tree.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) throw Error("cannot open the folder " + tree.root + ": " + std::strerror(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{dir};
    // Opened first, all of them: the count is known before the stream starts, and a file that would lead out of the
    // folder (a link) is left out, with its reason, never followed.
    std::vector<std::pair<std::string, ContainedFile>> open_files;
    struct Opened {
      std::vector<std::pair<std::string, ContainedFile>>& files;
      ~Opened() {
        for (auto& [name, f] : files)
          if (f.fd >= 0) ::close(f.fd);
      }
    } opened{open_files};
    int64_t total = 0;
    for (const std::string& rel : tree.relative) {
      ContainedFile f = open_beneath(dir, rel, ContainedLinks::refuse);
      if (!f.ok()) {
        if (req.tree_notes != nullptr) req.tree_notes->push_back(rel + ": " + f.why + " (not sent)");
        continue;
      }
      total += static_cast<int64_t>(f.size);
      open_files.emplace_back(rel, f);
    }
    s.send_or_throw(
        Json{{"type", "tree"}, {"option", tree.option}, {"count", static_cast<int64_t>(open_files.size())}});
    int64_t sent = 0;
    for (auto& [rel, f] : open_files) {
      s.send_or_throw(
          Json{{"type", "entry"}, {"path_b64", base64_encode(rel)}, {"size", static_cast<int64_t>(f.size)}});
      const int64_t before = sent;
      if (!send_file_data(s.ssh.in, f.fd, static_cast<int64_t>(f.size), [&](int64_t done) {
            sent = before + done;
            s.report("upload", tree.option, sent, total);
            s.tick();
            if (s.cancelled) throw Error("cancelled");
          }))
        throw Error(s.who() + ": the connection ended while " + tree.option + " was sent");
      sent = before + static_cast<int64_t>(f.size);
    }
    const Json ack = s.next(s.idle(), "sending " + tree.option);
    if (ack["type"] != "tree") throw Error(s.who() + ": unexpected message while sending " + tree.option);
  }
  Json args = Json::array();
  for (const std::string& a : req.args) args.push_back(base64_encode(a));
  run["args_b64"] = args;
  s.send_or_throw(run);
  RemoteRunResult r;
  r.host = s.host;
  r.slurm_job = s.slurm_job;
  int64_t received = 0;
  for (;;) {
    Json m = s.next(s.idle(), "the run went on");
    const std::string type = m["type"];
    if (type == "alive") continue;
    if (type == "progress") {
      s.report("run", m.value("phase", ""), m.value("done", 0), m.value("total", 0));
      continue;
    }
    if (type == "stdout" || type == "stderr") {
      const std::string bytes = base64_decode(json::string_at(m, "b64"));
      received += static_cast<int64_t>(bytes.size());
      if (received > s.c.max_output_bytes)
        throw Error(s.who() + ": the run sent back more than " + std::to_string(s.c.max_output_bytes >> 20) + " MiB");
      (type == "stdout" ? r.stdout_text : r.stderr_text) += bytes;
      if (req.on_output) req.on_output(type == "stderr", bytes);
      continue;
    }
    if (type == "output") {
      const std::string option = json::string_at(m, "option");
      const int64_t size = json::int_at(m, "size");
      if (size < 0 || received + size > s.c.max_output_bytes)
        throw Error(s.who() + ": the run's " + option + " is larger than " +
                    std::to_string(s.c.max_output_bytes >> 20) + " MiB");
      bool asked = false;
      for (const std::string& o : req.outputs) asked = asked || o == option;
      if (!asked || r.outputs.count(option)) throw Error(s.who() + ": the run sent an output it was not asked for");
      received += size;
      s.report("download", option, 0, size);
      // Into memory (bounded above): the caller validates it with the report reader before anything is written.
      std::string bytes;
      {
        // receive_file_data writes to a descriptor; a memfd keeps the bytes without a file on disk
        const int fd = ::memfd_create("mnv2-remote-output", MFD_CLOEXEC);
        if (fd < 0) throw Error(std::string("memfd_create: ") + std::strerror(errno));
        try {
          receive_file_data(s.reader, fd, size, s.idle(), [&s] { s.tick(); });
        } catch (...) {
          ::close(fd);
          throw;
        }
        bytes.resize(static_cast<size_t>(size));
        const ssize_t got = ::pread(fd, bytes.data(), bytes.size(), 0);
        ::close(fd);
        if (got != size) throw Error("cannot read back the received " + option);
      }
      r.outputs[option] = std::move(bytes);
      continue;
    }
    if (type == "exit") {
      r.exit_code = static_cast<int>(m.value("code", -1));
      if (m.value("cancelled", false)) throw Error("cancelled");
      return r;
    }
    throw Error(s.who() + ": unexpected message '" + type + "' during the run");
  }
}

}  // namespace mnv2::remote
