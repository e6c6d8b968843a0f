// Remote targets with the real engines (issue 31): a real sshd on a loopback port, a throwaway user whose login shell
// is tcsh, and a real single-node Slurm cluster (tests/remote/fixture.sh starts them). mnv2 reaches them the way it
// reaches any target: the user's ssh, the fixed entry point, srun. Nothing here is mocked. Without root or the
// packages the tests skip with the fixture's reason; in CI (root, scripts/install-deps.sh) they run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "mnv2/printable.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mnv2::test::CliResult;
using mnv2::test::describe;
using mnv2::test::shell_quote;

namespace {

// A shell command's exit status and standard output (its standard error goes to the test's log).
struct Shell {
  int code = -1;
  std::string out;
};
Shell sh(const std::string& command) {
  Shell r;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::map<std::string, std::string> key_values(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (const size_t eq = line.find('='); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  return kv;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The daemons of one test and the local side's folders: everything beneath one scratch folder of the build tree
// (sshd's StrictModes wants root-owned parents that others cannot write: not /tmp).
class Remote {
 public:
  Remote() {
    const fs::path root = fs::path(MNV2_REMOTE_SCRATCH);
    fs::create_directories(root);
    ::chmod(root.c_str(), 0755);
    std::string dir = (root / "t-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = dir;
    ::chmod(dir_.c_str(), 0755);
    local_ = dir_ + "/local";
    fs::create_directories(local_ + "/config");
    fs::create_directories(local_ + "/cache");
    // The runtime folder of ssh's control sockets: short, as a socket path must be (XDG_RUNTIME_DIR is short too).
    std::string run = "/tmp/mnv2r-XXXXXX";
    if (::mkdtemp(run.data()) == nullptr) throw std::runtime_error("mkdtemp");
    run_ = run;
  }
  ~Remote() {
    if (slurm_) sh("bash " + shell_quote(MNV2_FIXTURE) + " slurm-stop " + shell_quote(dir_ + "/slurm") + " >&2");
    if (ssh_) sh("bash " + shell_quote(MNV2_FIXTURE) + " ssh-stop " + shell_quote(dir_ + "/ssh") + " >&2");
    std::error_code ec;
    fs::remove_all(dir_, ec);
    fs::remove_all(run_, ec);
  }

  // "" when started, else why it cannot (the test skips with it).
  std::string start_ssh(const std::string& setenv = "") {
    const Shell r = sh((setenv.empty() ? std::string() : "FIXTURE_SSHD_SETENV=" + shell_quote(setenv) + " ") + "bash " +
                       shell_quote(MNV2_FIXTURE) + " ssh-start " + shell_quote(dir_ + "/ssh"));
    ssh_ = true;
    if (r.code == 77) return r.out;
    if (r.code != 0) throw std::runtime_error("the ssh fixture failed: " + r.out);
    for (const auto& [k, v] : key_values(r.out)) kv_[k] = v;
    return {};
  }
  std::string start_slurm() {
    const Shell r = sh("bash " + shell_quote(MNV2_FIXTURE) + " slurm-start " + shell_quote(dir_ + "/slurm"));
    slurm_ = true;
    if (r.code == 77) return r.out;
    if (r.code != 0) throw std::runtime_error("the Slurm fixture failed: " + r.out);
    for (const auto& [k, v] : key_values(r.out)) kv_[k] = v;
    return {};
  }

  const std::string& operator[](const std::string& key) { return kv_.at(key); }
  const std::string& local() const { return local_; }

  std::vector<std::string> env() const {
    return {"XDG_CONFIG_HOME=" + local_ + "/config", "XDG_RUNTIME_DIR=" + run_, "XDG_CACHE_HOME=" + local_ + "/cache",
            "HOME=" + local_};
  }
  CliResult mnv2(const std::vector<std::string>& args, int timeout_s = 300) const {
    return mnv2::test::run_cli(args, env(), MNV2_CLI_PATH, timeout_s);
  }
  // A target named `name` for the fixture's host `host` (mnv2-test, mnv2-test-wrong-key, ...).
  void add_target(const std::string& name, const std::string& host, const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"targets", "add", name, host, "--ssh-config", kv_.at("SSH_CONFIG")};
    args.insert(args.end(), more.begin(), more.end());
    const CliResult r = mnv2(args);
    ASSERT_EQ(r.code, 0) << describe(r);
  }
  // The processes of the remote user whose command line has `pattern`.
  int remote_processes(const std::string& pattern) const {
    const Shell r = sh("pgrep -c -u " + shell_quote(kv_.at("SSH_USER")) + " -f " + shell_quote(pattern));
    return std::atoi(r.out.c_str());
  }
  int remote_run_folders() const {
    const Shell r =
        sh("find /tmp -maxdepth 1 -name 'mnv2-agent-*' -user " + shell_quote(kv_.at("SSH_USER")) + " | wc -l");
    return std::atoi(r.out.c_str());
  }

 private:
  std::string dir_, local_, run_;
  bool ssh_ = false, slurm_ = false;
  std::map<std::string, std::string> kv_;
};

// mnv2 started in the background (for Cancel): its output in files, its pid to signal.
struct Background {
  pid_t pid = -1;
  std::string out, err;
};
Background start_background(const Remote& r, const std::vector<std::string>& args, const std::string& dir) {
  Background b;
  b.out = dir + "/bg.out";
  b.err = dir + "/bg.err";
  b.pid = ::fork();
  if (b.pid == 0) {
    for (const std::string& e : r.env()) ::putenv(::strdup(e.c_str()));
    std::freopen("/dev/null", "r", stdin);
    std::freopen(b.out.c_str(), "w", stdout);
    std::freopen(b.err.c_str(), "w", stderr);
    std::vector<std::string> a = {MNV2_CLI_PATH};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(MNV2_CLI_PATH, argv.data());
    ::_exit(127);
  }
  return b;
}
int wait_exit(pid_t pid, int timeout_s) {
  for (int i = 0; i < timeout_s * 10; ++i) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}
template <class F>
bool eventually(F f, int timeout_s) {
  for (int i = 0; i < timeout_s * 10; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return f();
}

std::vector<std::string> profile_args(const std::string& target, int iters) {
  return {
      "profile",  "--target", target,    "--backend",           "cpu",       "--model", mnv2::test::main_model_path(),
      "--warmup", "1",        "--iters", std::to_string(iters), "--threads", "1"};
}

#define START_OR_SKIP(expr)                \
  do {                                     \
    const std::string why = (expr);        \
    if (!why.empty()) GTEST_SKIP() << why; \
  } while (0)

}  // namespace

// The whole path of a user's first day: a target, mnv2 missing there, remote install, a probe, a profile with
// progress, the model sent once and then found in the target's cache, Cancel, and a run killed on the target.
TEST(RemoteSsh, InstallProbeProfileCacheCancelAndKill) {
  Remote r;
  START_OR_SKIP(r.start_ssh("PATH=/usr/local/bin:/usr/bin:/bin"));
  r.add_target("lab", r["SSH_HOST"]);

  // Nothing installed there yet: said so, with what to do.
  CliResult c = r.mnv2({"targets", "probe", "lab"});
  EXPECT_EQ(c.code, 1) << describe(c);
  EXPECT_NE(c.err.find("mnv2 is not installed there"), std::string::npos) << describe(c);
  EXPECT_NE(c.err.find("mnv2 remote install lab"), std::string::npos) << describe(c);

  c = r.mnv2({"remote", "install", "lab"}, 600);
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_NE(c.out.find("each checked by SHA-256 there"), std::string::npos) << describe(c);
  const std::string installed = r["SSH_HOME"] + "/.local/share/mnv2-profiler/" MNV2_VERSION "/bin/mnv2";
  EXPECT_TRUE(fs::exists(installed)) << installed;

  c = r.mnv2({"targets", "probe", "lab", "--json"});
  ASSERT_EQ(c.code, 0) << describe(c);
  const auto probe = mnv2::json::parse(c.out);
  ASSERT_EQ(probe.size(), 1u);
  EXPECT_TRUE(probe[0]["ok"].get<bool>());
  EXPECT_EQ(probe[0]["protocol"].get<int>(), 1);
  EXPECT_FALSE(probe[0]["glibc"].get<std::string>().empty());
  EXPECT_NE(probe[0]["mnv2_path"].get<std::string>().find(".local/share/mnv2-profiler"), std::string::npos);
  bool cpu = false;
  for (const auto& b : probe[0]["backends"]) cpu = cpu || (b["name"] == "cpu" && b["available"].get<bool>());
  EXPECT_TRUE(cpu) << c.out;

  // A profile: the model travels (upload), the study's progress and table arrive, the report comes back here.
  const std::string report = r.local() + "/report.json";
  std::vector<std::string> args = profile_args("lab", 3);
  args.insert(args.end(), {"--image", mnv2::test::shared_path("images/cat.bmp"), "--json", report});
  c = r.mnv2(args);
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_NE(c.err.find("lab: upload model"), std::string::npos) << describe(c);
  EXPECT_NE(c.err.find("cpu: per-layer"), std::string::npos) << describe(c);  // the study's own progress
  EXPECT_NE(c.out.find("block17.project"), std::string::npos) << describe(c);
  EXPECT_NE(c.out.find("ran on target lab"), std::string::npos) << describe(c);
  const auto doc = mnv2::json::parse(read_all(report));
  const auto& meta = doc["runs"][0]["metadata"];
  EXPECT_EQ(meta["target"]["name"], "lab");
  EXPECT_FALSE(meta["target"]["host"].get<std::string>().empty());
  EXPECT_EQ(meta["input"], mnv2::test::shared_path("images/cat.bmp"));
  EXPECT_EQ(meta["model"], mnv2::test::main_model_path());
  // The model is in the target's private cache now: the next run does not send it again.
  EXPECT_EQ(
      sh("find " + shell_quote(r["SSH_HOME"] + "/.cache/mnv2-profiler/models") + " -name 'model-*.onnx' | wc -l").out,
      "1\n");
  c = r.mnv2(profile_args("lab", 2));
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_EQ(c.err.find("upload model"), std::string::npos) << describe(c);

  // compare, bench and memory go the same way; what comes back is read by its reader before it is written here.
  const std::string compared = r.local() + "/compare.json";
  c = r.mnv2({"compare", "--target", "lab", "--backends", "cpu-ref,cpu", "--model", mnv2::test::main_model_path(),
              "--warmup", "1", "--iters", "2", "--threads", "1", "--json", compared});
  ASSERT_EQ(c.code, 0) << describe(c);
  const auto runs = mnv2::json::parse(read_all(compared))["runs"];
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) EXPECT_EQ(run["metadata"]["target"]["name"], "lab");
  EXPECT_TRUE(runs[1].contains("diff")) << "the second backend's diff against the first";
  const std::string bench = r.local() + "/bench.json", memory = r.local() + "/memory.json";
  c = r.mnv2({"bench", "--target", "lab", "--model", mnv2::test::main_model_path(), "--backends", "cpu", "--batch",
              "1,2", "--warmup", "1", "--iters", "2", "--threads", "1", "--json", bench});
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_EQ(mnv2::json::parse(read_all(bench))["results"].size(), 2u);
  c = r.mnv2(
      {"memory", "--target", "lab", "--model", mnv2::test::main_model_path(), "--backend", "cpu", "--json", memory});
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_TRUE(fs::exists(memory));
  // eval: the images travel as a stream of files (a link out of the folder is not followed: left out, said so)
  // with a list of them; the target decodes them.
  {
    const std::string images = r.local() + "/images";
    fs::create_directories(images + "/sub dir");
    fs::copy_file(mnv2::test::shared_path("images/cat.bmp"), images + "/sub dir/cat one.bmp");
    fs::create_symlink("/etc/hostname", images + "/escape.jpg");
    const std::string list = r.local() + "/list.txt";
    std::ofstream(list) << "sub dir/cat one.bmp 282\nescape.jpg 1\n";
    const std::string evaluated = r.local() + "/eval.json";
    c = r.mnv2({"eval", "--target", "lab", "--images", images, "--list", list, "--model", mnv2::test::main_model_path(),
                "--backend", "cpu", "--json", evaluated});
    ASSERT_EQ(c.code, 0) << describe(c);
    EXPECT_NE(c.err.find("escape.jpg"), std::string::npos) << describe(c);
    EXPECT_NE(c.out.find("1 images from"), std::string::npos) << describe(c);
    EXPECT_NO_THROW(mnv2::json::parse(read_all(evaluated)));
  }

  // A run the target refuses (its own usage check): its message, its exit code, nothing written here.
  c = r.mnv2({"memory", "--target", "lab", "--model", mnv2::test::main_model_path(), "--backend", "cuda", "--json",
              r.local() + "/refused.json"});
  EXPECT_NE(c.code, 0) << describe(c);
  EXPECT_NE(c.err.find("on target 'lab'"), std::string::npos) << describe(c);
  EXPECT_FALSE(fs::exists(r.local() + "/refused.json"));

  // Cancel (SIGINT, as Ctrl-C): the run on the target ends, nothing of it is left there, no report here.
  {
    const std::string cancelled = r.local() + "/cancelled.json";
    std::vector<std::string> a = profile_args("lab", 100000);
    a.insert(a.end(), {"--json", cancelled});
    Background b = start_background(r, a, r.local());
    ASSERT_TRUE(eventually([&] { return r.remote_processes("mnv2.bin profile") > 0; }, 60)) << read_all(b.err);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::kill(b.pid, SIGINT);
    EXPECT_EQ(wait_exit(b.pid, 30), 1) << read_all(b.err);
    EXPECT_NE(read_all(b.err).find("error: cancelled"), std::string::npos) << read_all(b.err);
    EXPECT_TRUE(eventually([&] { return r.remote_processes("mnv2.bin") == 0; }, 10)) << sh("ps -ef").out;
    EXPECT_TRUE(eventually([&] { return r.remote_run_folders() == 0; }, 10));
    EXPECT_FALSE(fs::exists(cancelled));
  }

  // The remote side killed mid-run (an administrator, the OOM killer): a clear message, no partial report.
  {
    const std::string killed = r.local() + "/killed.json";
    std::vector<std::string> a = profile_args("lab", 100000);
    a.insert(a.end(), {"--json", killed});
    Background b = start_background(r, a, r.local());
    ASSERT_TRUE(eventually([&] { return r.remote_processes("mnv2.bin profile") > 0; }, 60)) << read_all(b.err);
    sh("pkill -KILL -u " + shell_quote(r["SSH_USER"]) + " -f 'mnv2.bin agent'");
    EXPECT_EQ(wait_exit(b.pid, 60), 1) << read_all(b.err);
    const std::string err = read_all(b.err);
    EXPECT_NE(err.find("the connection ended"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(killed));
  }
}

// What goes wrong before a run, each with its message: a key the host does not take, a host key not in
// known_hosts (never accepted by mnv2), nothing listening, a target that does not exist, destinations ssh would
// read as options.
TEST(RemoteSsh, FailuresSayWhatIsWrong) {
  Remote r;
  START_OR_SKIP(r.start_ssh());
  r.add_target("wrongkey", "mnv2-test-wrong-key");
  r.add_target("newhost", "mnv2-test-unknown-hostkey");
  r.add_target("nobody", "root@127.0.0.1:1");

  CliResult c = r.mnv2({"targets", "probe", "wrongkey"});
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("authentication failed"), std::string::npos) << describe(c);

  c = r.mnv2({"targets", "probe", "newhost"});
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("host key is not in your known_hosts"), std::string::npos) << describe(c);
  EXPECT_NE(c.err.find("never accepts a host key"), std::string::npos) << describe(c);

  c = r.mnv2({"targets", "probe", "nobody"});
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("unreachable"), std::string::npos) << describe(c);

  c = r.mnv2(profile_args("nosuch", 1));
  EXPECT_EQ(c.code, 2) << describe(c);
  EXPECT_NE(c.err.find("no target 'nosuch'"), std::string::npos) << describe(c);

  // ("-host" alone is CLI11's -h even after "--": it prints the help and adds nothing; the unit test checks the rule.)
  for (const std::string& bad : {"-oProxyCommand=touch /tmp/x", "user@-host", "-user@host", "a b@host"}) {
    c = r.mnv2({"targets", "add", "bad", "--", bad});  // after "--": our own check, not the parser's, refuses it
    EXPECT_EQ(c.code, 2) << bad << "\n" << describe(c);
  }
  // The connection to the fixture works with the right key: the failures were the failures named.
  r.add_target("good", r["SSH_HOST"]);
  c = r.mnv2({"targets", "probe", "good"});
  EXPECT_NE(c.err.find("mnv2 is not installed there"), std::string::npos) << describe(c);
}

// File names no shell could be trusted with arrive on the target as those names (the login shell is tcsh).
TEST(RemoteSsh, HostileFileNamesArriveAsThemselves) {
  Remote r;
  START_OR_SKIP(r.start_ssh());
  r.add_target("lab", r["SSH_HOST"]);
  ASSERT_EQ(r.mnv2({"remote", "install", "lab"}, 600).code, 0);
  const std::string tensor = mnv2::test::shared_path("golden/cat.input.f32");
  ASSERT_TRUE(fs::exists(tensor)) << tensor;
  const std::vector<std::string> names = {
      "with space.f32", "quote'and\"double.f32", "semi;colon.f32", "$(touch pwned).f32",
      "new\nline.f32",  "-leading-dash.f32",     "bang!.f32",      std::string("latin1-\xe9\xff.f32")};
  for (const std::string& name : names) {
    const std::string local = r.local() + "/" + name;
    fs::copy_file(tensor, local, fs::copy_options::overwrite_existing);
    const std::string report = r.local() + "/names.json";
    std::vector<std::string> args = profile_args("lab", 1);
    args.insert(args.end(), {"--tensor", local, "--json", report});
    const CliResult c = r.mnv2(args);
    ASSERT_EQ(c.code, 0) << mnv2::printable(name) << "\n" << describe(c);
    // The target's own table names its copy of the file: the same name, escaped for the terminal.
    EXPECT_NE(c.out.find("/" + mnv2::printable(name) + "; batch"), std::string::npos) << mnv2::printable(name) << "\n"
                                                                                      << c.out.substr(0, 600);
    // A report is JSON: bytes that are not UTF-8 are written as U+FFFD there, as in every report.
    EXPECT_EQ(mnv2::json::parse(read_all(report))["runs"][0]["metadata"]["input"],
              mnv2::json::parse(mnv2::json::dump(mnv2::json::Json(local))));
  }
  EXPECT_FALSE(fs::exists(r["SSH_HOME"] + "/pwned"));
  EXPECT_FALSE(fs::exists("pwned"));
}

// The Slurm launcher over the SSH target: a probe and a profile in a job, a Cancel that ends the job, and a job
// that cannot start (its partition DOWN) cancelled at the pending time-out with Slurm's reason.
TEST(RemoteSlurm, ProbeProfileCancelAndPendingTimeout) {
  Remote r;
  START_OR_SKIP(r.start_slurm());
  START_OR_SKIP(r.start_ssh("SLURM_CONF=" + r["SLURM_CONF"] + " PATH=/usr/local/bin:/usr/bin:/bin"));
  r.add_target("login", r["SSH_HOST"]);
  ASSERT_EQ(r.mnv2({"remote", "install", "login"}, 600).code, 0);
  r.add_target("cluster", r["SSH_HOST"],
               {"--slurm-partition", r["SLURM_PARTITION"], "--slurm-gres", r["SLURM_GRES"], "--slurm-time", "5"});
  r.add_target("down", r["SSH_HOST"], {"--slurm-partition", r["SLURM_DOWN_PARTITION"], "--pending-timeout", "6"});
  const std::string squeue = "SLURM_CONF=" + shell_quote(r["SLURM_CONF"]) + " squeue -h";

  CliResult c = r.mnv2({"targets", "probe", "cluster", "--json"});
  ASSERT_EQ(c.code, 0) << describe(c);
  const auto probe = mnv2::json::parse(c.out);
  EXPECT_FALSE(probe[0]["slurm_job"].get<std::string>().empty()) << c.out;

  const std::string report = r.local() + "/slurm.json";
  std::vector<std::string> args = profile_args("cluster", 2);
  args.insert(args.end(), {"--json", report});
  c = r.mnv2(args);
  ASSERT_EQ(c.code, 0) << describe(c);
  const auto meta = mnv2::json::parse(read_all(report))["runs"][0]["metadata"];
  EXPECT_EQ(meta["target"]["name"], "cluster");
  EXPECT_FALSE(meta["target"]["slurm_job"].get<std::string>().empty());
  EXPECT_TRUE(eventually([&] { return sh(squeue).out.empty(); }, 15)) << sh(squeue).out;

  {
    Background b = start_background(r, profile_args("cluster", 100000), r.local());
    ASSERT_TRUE(eventually([&] { return r.remote_processes("mnv2.bin profile") > 0; }, 60)) << read_all(b.err);
    ::kill(b.pid, SIGINT);
    EXPECT_EQ(wait_exit(b.pid, 30), 1) << read_all(b.err);
    EXPECT_TRUE(eventually([&] { return sh(squeue).out.empty(); }, 15)) << sh(squeue).out;
    EXPECT_TRUE(eventually([&] { return r.remote_processes("mnv2.bin") == 0; }, 15)) << sh("ps -ef").out;
  }

  // A partition the cluster does not have: Slurm's own words.
  r.add_target("nopart", r["SSH_HOST"], {"--slurm-partition", "nosuch"});
  c = r.mnv2({"targets", "probe", "nopart"}, 120);
  EXPECT_EQ(c.code, 1) << describe(c);
  EXPECT_NE(c.err.find("before the job's agent started"), std::string::npos) << describe(c);
  EXPECT_NE(c.err.find("nvalid partition"), std::string::npos) << describe(c);

  c = r.mnv2({"targets", "probe", "down"}, 120);
  EXPECT_EQ(c.code, 1) << describe(c);
  EXPECT_NE(c.err.find("still pending after"), std::string::npos) << describe(c);
  EXPECT_NE(c.err.find("PartitionDown"), std::string::npos) << describe(c);
  EXPECT_TRUE(eventually([&] { return sh(squeue).out.empty(); }, 15)) << sh(squeue).out;
}
