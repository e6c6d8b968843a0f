// Remote targets: the targets file, the checks on every field, and the ssh command line (mnv2/remote.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/output_files.h"
#include "mnv2/private_cache.h"
#include "mnv2/remote.h"
#include "remote/process.h"

namespace mnv2::remote {

namespace fs = std::filesystem;
using json::Json;

namespace {

bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

void check_text(const std::string& value, const std::string& what) {
  if (has_control(value)) throw UsageError(what + " holds a control character");
  if (value.size() > 4096) throw UsageError(what + " is longer than 4096 bytes");
}

// An ssh destination part (user or host): what a shell, ssh's own parser or a later '-o' could read as
// something else is refused.
void check_destination_part(const std::string& value, const std::string& what) {
  if (value.empty()) throw UsageError(what + " is empty");
  if (value.front() == '-') throw UsageError(what + " '" + value + "' starts with '-': ssh would read it as an option");
  for (unsigned char c : value)
    if (c <= 0x20 || c == 0x7f || std::strchr("'\"`$;&|<>\\()*?!{}#,", c) != nullptr)
      throw UsageError(what + " '" + value + "' holds a character no host or user name has");
}

}  // namespace

void check_target(const Target& t) {
  if (t.name.empty() || t.name.size() > 64) throw UsageError("a target name must have 1 to 64 characters");
  for (unsigned char c : t.name)
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-')
      throw UsageError("target name '" + t.name + "': only letters, digits, '.', '_' and '-'");
  if (t.name.front() == '-' || t.name.front() == '.')
    throw UsageError("target name '" + t.name + "' must start with a letter or digit");
  if (t.name == "local") throw UsageError("'local' is this machine: choose another name for a target");
  const std::string where = "target '" + t.name + "': ";
  std::string host = t.host;
  if (const size_t at = host.rfind('@'); at != std::string::npos) {
    check_destination_part(host.substr(0, at), where + "the user");
    host = host.substr(at + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  check_destination_part(host, where + "the host");
  if (t.port < 0 || t.port > 65535) throw UsageError(where + "the port must be in 1..65535");
  if (!t.ssh_config.empty()) {
    check_text(t.ssh_config, where + "the ssh configuration file");
    if (t.ssh_config.front() != '/') throw UsageError(where + "the ssh configuration file must be an absolute path");
  }
  if (t.slurm) {
    const SlurmLauncher& s = *t.slurm;
    for (const auto& [value, what] : {std::pair{s.partition, "partition"}, std::pair{s.gres, "GRES"},
                                      std::pair{s.time_limit, "time limit"}, std::pair{s.account, "account"}}) {
      check_text(value, where + "the Slurm " + what);
      if (value.find_first_of(" \t") != std::string::npos)
        throw UsageError(where + "the Slurm " + what + " '" + value + "' holds a space");
    }
    for (const std::string& e : s.extra) check_text(e, where + "an extra srun argument");
    if (s.pending_timeout_s < 1 || s.pending_timeout_s > 7 * 24 * 3600)
      throw UsageError(where + "the pending time-out must be in 1..604800 s");
  }
  for (const std::string& line : t.setup) check_text(line, where + "a setup line");
}

Target target_from_destination(const std::string& name, const std::string& destination) {
  Target t;
  t.name = name;
  std::string d = destination;
  // user@host:port, user@[v6]:port; a bare v6 address without brackets has no port.
  const size_t at = d.rfind('@');
  const size_t host_start = at == std::string::npos ? 0 : at + 1;
  if (d.size() > host_start && d[host_start] == '[') {
    const size_t close = d.find(']', host_start);
    if (close == std::string::npos) throw UsageError("destination '" + destination + "': '[' without ']'");
    if (close + 1 < d.size()) {
      if (d[close + 1] != ':') throw UsageError("destination '" + destination + "': text after ']'");
      t.port = std::atoi(d.c_str() + close + 2);
      if (d.substr(close + 2) != std::to_string(t.port) || t.port < 1 || t.port > 65535)
        throw UsageError("destination '" + destination + "': the port must be in 1..65535");
      d = d.substr(0, close + 1);
    }
  } else if (const size_t colon = d.find(':', host_start);
             colon != std::string::npos && d.find(':', colon + 1) == std::string::npos) {
    const std::string port = d.substr(colon + 1);
    t.port = std::atoi(port.c_str());
    if (port != std::to_string(t.port) || t.port < 1 || t.port > 65535)
      throw UsageError("destination '" + destination + "': the port must be in 1..65535");
    d = d.substr(0, colon);
  }
  t.host = d;
  check_target(t);
  return t;
}

namespace {

inline constexpr InputBudget kTargetsFile{"targets file", 4 * inputs::kMiB, 64 * inputs::kMiB, 64 * inputs::kKiB};

std::vector<std::string> strings_at(const Json& o, const std::string& key) {
  std::vector<std::string> out;
  if (const Json* a = json::find(o, key))
    for (const Json& v : json::as_array(*a)) out.push_back(json::as_string(v));
  return out;
}

std::string string_or(const Json& o, const std::string& key) {
  const Json* v = json::find(o, key);
  return v != nullptr ? json::as_string(*v) : std::string();
}

Target target_from(const Json& j) {
  Target t;
  t.name = json::string_at(j, "name");
  t.host = json::string_at(j, "host");
  if (json::find(j, "port")) t.port = static_cast<int>(json::int_at(j, "port"));
  t.ssh_config = string_or(j, "ssh_config");
  if (const Json* s = json::find(j, "slurm"); s != nullptr && !s->is_null()) {
    SlurmLauncher l;
    l.partition = string_or(*s, "partition");
    l.gres = string_or(*s, "gres");
    l.time_limit = string_or(*s, "time");
    l.account = string_or(*s, "account");
    l.extra = strings_at(*s, "extra_args");
    if (json::find(*s, "pending_timeout_s"))
      l.pending_timeout_s = static_cast<int>(json::int_at(*s, "pending_timeout_s"));
    t.slurm = l;
  }
  t.setup = strings_at(j, "setup");
  return t;
}

Json target_json(const Target& t) {
  Json j{{"name", t.name}, {"host", t.host}};
  if (t.port > 0) j["port"] = t.port;
  if (!t.ssh_config.empty()) j["ssh_config"] = t.ssh_config;
  if (t.slurm) {
    const SlurmLauncher& s = *t.slurm;
    j["slurm"] = Json{{"partition", s.partition}, {"gres", s.gres},        {"time", s.time_limit},
                      {"account", s.account},     {"extra_args", s.extra}, {"pending_timeout_s", s.pending_timeout_s}};
  }
  if (!t.setup.empty()) j["setup"] = t.setup;
  return j;
}

}  // namespace

std::vector<Target> read_targets(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return {};
  std::vector<Target> out;
  try {
    const Json doc = json::parse_file(path, kTargetsFile);
    if (json::int_at(doc, "schema_version") != 1)
      throw Error("schema_version " + std::to_string(json::int_at(doc, "schema_version")) + " is not 1");
    for (const Json& j : json::array_at(doc, "targets")) {
      Target t = target_from(j);
      try {
        check_target(t);
      } catch (const UsageError& e) {
        throw Error(e.what());
      }
      if (find_target(out, t.name) != nullptr) throw Error("target '" + t.name + "' appears twice");
      out.push_back(std::move(t));
    }
  } catch (const Error& e) {
    throw Error("the targets file " + path + ": " + e.what());
  }
  return out;
}

void write_targets(const std::string& path, const std::vector<Target>& targets) {
  const fs::path folder = fs::path(path).parent_path();
  std::error_code ec;
  if (!folder.empty() && !fs::exists(folder, ec)) {
    fs::create_directories(folder, ec);
    if (ec) throw Error("cannot create " + folder.string() + ": " + ec.message());
    ::chmod(folder.c_str(), 0700);
  }
  // The file holds host names and launch lines: readable by this user only, created so before any byte is in it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot write " + path + ": " + std::strerror(errno));
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && ::fchmod(fd, 0600) == 0;
  ::close(fd);
  if (!ok) throw Error("the targets file " + path + " is not a regular file of this user's");
  Json list = Json::array();
  for (const Target& t : targets) list.push_back(target_json(t));
  write_output_file(path, json::dump(Json{{"schema_version", 1}, {"targets", list}}, 2) + "\n");
}

const Target* find_target(const std::vector<Target>& targets, const std::string& name) {
  for (const Target& t : targets)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> ssh_argv(const Target& t, const SshSettings& s, const std::vector<std::string>& command) {
  check_target(t);
  std::vector<std::string> a = {s.ssh_program};
  if (!t.ssh_config.empty()) a.insert(a.end(), {"-F", t.ssh_config});
  if (t.port > 0) a.insert(a.end(), {"-p", std::to_string(t.port)});
  a.insert(a.end(), {"-o", std::string("BatchMode=") + (s.batch ? "yes" : "no"),  //
                     "-o", "ConnectTimeout=" + std::to_string(s.connect_timeout_s), "-o", "ServerAliveInterval=5", "-o",
                     "ServerAliveCountMax=3",                            //
                     "-o", "RemoteCommand=none", "-o", "RequestTTY=no",  //
                     "-o", "ClearAllForwardings=yes", "-o", "PermitLocalCommand=no", "-o", "EscapeChar=none"});
  if (!s.control_dir.empty())
    a.insert(a.end(), {"-o", "ControlMaster=auto", "-o", "ControlPath=" + s.control_dir + "/%C", "-o",
                       "ControlPersist=" + std::to_string(s.control_persist_s)});
  a.push_back("--");
  a.push_back(t.host);
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::vector<std::string> ssh_exit_argv(const Target& t, const SshSettings& s) {
  if (s.control_dir.empty()) return {};
  std::vector<std::string> a = {s.ssh_program};
  if (!t.ssh_config.empty()) a.insert(a.end(), {"-F", t.ssh_config});
  if (t.port > 0) a.insert(a.end(), {"-p", std::to_string(t.port)});
  a.insert(a.end(), {"-o", "ControlPath=" + s.control_dir + "/%C", "-O", "exit", "--", t.host});
  return a;
}

std::string ssh_resolve(const Target& t, const SshSettings& s, std::string* why) {
  std::vector<std::string> argv = {s.ssh_program};
  if (!t.ssh_config.empty()) argv.insert(argv.end(), {"-F", t.ssh_config});
  if (t.port > 0) argv.insert(argv.end(), {"-p", std::to_string(t.port)});
  argv.insert(argv.end(), {"-G", "--", t.host});
  const Captured c = run_captured(argv, 10);
  if (c.code != 0) {
    if (why != nullptr) *why = c.err.empty() ? "ssh -G failed" : c.err.substr(0, c.err.find('\n'));
    return {};
  }
  std::string user, host, port;
  size_t start = 0;
  while (start < c.out.size()) {
    size_t end = c.out.find('\n', start);
    if (end == std::string::npos) end = c.out.size();
    const std::string line = c.out.substr(start, end - start);
    start = end + 1;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
    if (key == "user") user = value;
    if (key == "hostname") host = value;
    if (key == "port") port = value;
  }
  return user + "@" + host + ":" + port;
}

void close_connection(const Target& t, const SshSettings& s) {
  const std::vector<std::string> argv = ssh_exit_argv(t, s);
  if (!argv.empty()) run_captured(argv, 10);
}

std::vector<std::vector<std::string>> agent_commands(const std::string& version) {
  const std::string protocol = std::to_string(kProtocol);
  // Relative to the login folder, where ssh starts the command: no '~', which not every login shell expands the
  // same way, and nothing a shell would read as more than a word.
  return {{".local/share/mnv2-profiler/" + version + "/bin/mnv2", "agent", "--protocol", protocol},
          {"mnv2", "agent", "--protocol", protocol}};
}

std::string control_folder(const std::string& base, std::string* note) {
  const std::string dir =
      base.empty() ? "/tmp/mnv2-profiler-ssh-" + std::to_string(::geteuid()) : base + "/mnv2-profiler-ssh";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (note != nullptr) *note = "cannot create " + dir + ": " + std::strerror(errno) + "; connections are not reused";
    return {};
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (note != nullptr) *note = "cannot examine " + dir + ": " + std::strerror(errno);
    return {};
  }
  const std::string why = why_not_private("the ssh control folder " + dir, st.st_mode, st.st_uid);
  if (!why.empty()) {
    if (note != nullptr) *note = why + "; connections are not reused";
    return {};
  }
  // ssh's control socket path must fit sun_path (108 bytes) with "/", the 40-character %C and the 17 characters
  // ssh appends to the socket it binds before renaming it.
  if (dir.size() + 1 + 40 + 17 >= 108) {
    if (note != nullptr)
      *note = "the ssh control folder " + dir + " is too long for a socket; connections are not reused";
    return {};
  }
  return dir;
}

}  // namespace mnv2::remote
