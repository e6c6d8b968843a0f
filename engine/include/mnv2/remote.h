// Remote targets: where a run happens when it is not this machine. A target is an SSH host (a name from the
// user's ~/.ssh/config, or user@host[:port]) reached with the user's own OpenSSH, optionally through Slurm's
// srun on that host. Nothing of ours listens anywhere: the one remote command is `mnv2 agent --protocol N`,
// started by ssh (docs/REMOTE.md); the study, its options, its files and its results travel over the agent's
// standard input and output as JSON lines (the protocol below), so no user string meets a remote shell.
//
// The engine reads no environment: the front end names the targets file, the runtime folder for ssh's
// control sockets and the program to run, and gives the agent the environment facts it needs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mnv2/profiler.h"

namespace mnv2::remote {

// The version of the agent protocol: the entry point is `mnv2 agent --protocol kProtocol`. A client and an
// agent of different protocols refuse each other with a message naming both.
inline constexpr int kProtocol = 1;

// ---- targets ----------------------------------------------------------------------------------------------------

struct SlurmLauncher {
  std::string partition;           // --partition ("" = the cluster's default)
  std::string gres;                // --gres, e.g. "gpu:1" or "gpu:h100:1" ("" = none)
  std::string time_limit;          // --time, e.g. "10:00" ("" = the partition's default)
  std::string account;             // --account ("" = the user's default)
  std::vector<std::string> extra;  // more srun arguments, one per element (never split by a shell)
  int pending_timeout_s = 300;     // a job pending longer is cancelled, with Slurm's reason
};

struct Target {
  std::string name;        // [A-Za-z0-9._-]{1,64}, unique in the file; "local" is this machine
  std::string host;        // an ssh destination: a Host of the ssh configuration, or [user@]host
  int port = 0;            // 0: ssh's own (configuration or 22)
  std::string ssh_config;  // ssh -F FILE ("" = the user's own ~/.ssh/config)
  std::optional<SlurmLauncher> slurm;
  std::vector<std::string> setup;  // shell lines run before the agent on the target ("module load cuda")
};

// Checks a target's fields; throws UsageError naming the field: a name outside [A-Za-z0-9._-], a host or user
// that starts with '-' or holds a space, control character or one of '\'"`$;&|<>', a port outside 1..65535,
// Slurm fields with control characters, a setup line with a newline.
void check_target(const Target& target);

// "user@host[:port]" or "host" or "user@[v6addr]:port" as typed: the host and port parts (check_target'd).
Target target_from_destination(const std::string& name, const std::string& destination);

// The targets file ($XDG_CONFIG_HOME/mnv2-profiler/targets.json, the front end names it): read within a budget
// and checked target by target (an Error names the file and the target); a missing file is no targets.
std::vector<Target> read_targets(const std::string& path);
// Written through the output-file writer with mode 0600 in a folder created 0700.
void write_targets(const std::string& path, const std::vector<Target>& targets);
const Target* find_target(const std::vector<Target>& targets, const std::string& name);

// ---- the ssh command line ---------------------------------------------------------------------------------------

struct SshSettings {
  std::string ssh_program = "ssh";
  std::string control_dir;  // 0700 folder for ControlPath %C sockets ("" = no connection reuse)
  int connect_timeout_s = 10;
  int control_persist_s = 60;  // a master connection stays this long after its last use
  bool batch = true;           // BatchMode=yes; false only to open the master interactively (askpass)
};

// The whole argv of ssh for `remote_command` (the fixed entry point; never user text): ssh, -F where the target
// names one, -p, the fixed -o options, "--", the destination, then the command.
std::vector<std::string> ssh_argv(const Target& target, const SshSettings& settings,
                                  const std::vector<std::string>& remote_command);
// The remote command lines this program uses, in the order tried: the installed bundle's program
// (~/.local/share/mnv2-profiler/VERSION/bin/mnv2, relative to the login folder), then `mnv2` on PATH.
std::vector<std::vector<std::string>> agent_commands(const std::string& version);
// ssh -O exit for the target's master connection (nothing when no control_dir).
std::vector<std::string> ssh_exit_argv(const Target& target, const SshSettings& settings);

// What ssh makes of the target's destination with its configuration (`ssh -G`): "user@hostname:port", or "" with
// `why` set when ssh cannot say (bounded, never throws).
std::string ssh_resolve(const Target& target, const SshSettings& settings, std::string* why = nullptr);

// Closes the target's master connection (ssh -O exit), if one is open; bounded, never throws (the app on quit).
void close_connection(const Target& target, const SshSettings& settings);

// A private runtime folder for ssh's control sockets: `base`/mnv2-profiler-ssh (base = $XDG_RUNTIME_DIR, else
// /tmp with the uid appended), created 0700 and checked to be this user's and private; "" with `note` set when
// none can be had (connections are then not reused).
std::string control_folder(const std::string& base, std::string* note);

// ---- what a target has ------------------------------------------------------------------------------------------

struct ProbeGpu {
  int index = -1;
  std::string name, uuid, compute_capability;
  int64_t memory_bytes = 0;
};
struct ProbeBackend {
  std::string name;
  bool available = false;
  std::string reason;  // why not
};
struct ProbeResult {
  std::string target, host;  // the target's name; the host the agent ran on (a compute node under Slurm)
  std::string mnv2_version, mnv2_commit, mnv2_path;
  int protocol = 0;
  std::string glibc;
  std::string driver, cuda_runtime, cudnn;  // "" where none
  std::string architectures;                // the GPU plugin's SASS/PTX
  std::vector<ProbeGpu> gpus;
  std::vector<ProbeBackend> backends;
  std::string slurm_job;              // the job id when run through Slurm
  std::vector<std::string> problems;  // what will not work there, one sentence each (driver too old, ...)
  double seconds = 0;                 // connect to answer
};

// ---- a connection to a target's agent ------------------------------------------------------------------------

// How far a remote step is: connecting, waiting for a Slurm allocation (with its reason), uploading, running
// (the study's own phase, done, total), downloading.
struct RemoteProgress {
  std::string stage;  // "connect", "pending", "upload", "run", "download"
  std::string phase;  // the study's phase under "run"; Slurm's reason under "pending"
  int64_t done = 0, total = 0;
};
using RemoteProgressFn = std::function<void(const RemoteProgress&)>;

// A file that travels with a run: its bytes, and the name it has on the target (any bytes but '/' and NUL).
struct RemoteFile {
  std::string option;  // the option that names it on the target ("--tensor")
  std::string name;    // its file name there, as the user's file is called here
  std::string path;    // read from here
};

// A folder that travels as a stream of its files (an eval's images): each file opened beneath `root` here without
// following a link out of it, and written beneath a fresh folder there under the same relative name. The folder
// there is what `option` names.
struct RemoteTree {
  std::string option;                 // "--images"
  std::string root;                   // the folder here
  std::vector<std::string> relative;  // the files to send, relative to root ("n01440764/x.JPEG")
};

struct RemoteRunRequest {
  std::string command;            // profile, compare, ...
  std::vector<std::string> args;  // the command's arguments, without any file option
  std::string model_path;         // "" = the built-in model (the target is told to use it, not its own)
  std::vector<RemoteFile> files;
  std::vector<RemoteTree> trees;
  // Names of files left out of a tree (a link out of the folder, unreadable): what it said, one line each.
  std::vector<std::string>* tree_notes = nullptr;
  std::vector<std::string> outputs;  // the output options whose files come back ("--json")
  // The study's standard output and error as they arrive (raw bytes: escape them before showing).
  std::function<void(bool is_stderr, const std::string& bytes)> on_output;
};

struct RemoteRunResult {
  int exit_code = -1;
  std::string stdout_text, stderr_text;        // the remote command's, size-bounded, as received (escape to show)
  std::map<std::string, std::string> outputs;  // option -> bytes (size-bounded, to be validated by the reader)
  std::string host, slurm_job;
};

struct SessionConfig {
  SshSettings ssh;
  std::string version;                            // this program's version: the installed bundle's folder name
  int hello_timeout_s = 60;                       // connect + start of the agent (Slurm's pending time comes on top)
  int idle_timeout_s = 120;                       // no message at all from the agent for this long ends the session
  int64_t max_output_bytes = int64_t{256} << 20;  // of all a run sends back
  // Asked every 200 ms while the session waits: true cancels, as Session::cancel() (a front end's Cancel button).
  std::function<bool()> cancelled;
};

// One agent process on a target, reached over ssh (through srun for a Slurm target). Every wait has a time-out;
// cancel() (from any thread) closes the agent's input, which makes it kill its process group and cancel its
// job. Errors are mnv2::Error with a message that says what went wrong and what to do.
class Session {
 public:
  Session(const Target& target, const SessionConfig& config, const RemoteProgressFn& progress = {});
  ~Session();  // ends the agent (closes its input), waits a bounded time, kills ssh if it must
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ProbeResult probe();
  // Makes the model `path` present in the target's model cache (sent once; "sha256:" identity).
  void put_model(const std::string& path);
  RemoteRunResult run(const RemoteRunRequest& request);
  void cancel();

  const std::string& host() const;
  const std::string& slurm_job() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- the profile study on a target (what the app runs; the CLI forwards its own arguments) --------------------

// The arguments of `mnv2 profile` (one backend) or `mnv2 compare` (several) that run `config` there: every per-run
// option of the table as --NAME VALUE (the model and the input are files: they travel); one rule for both front ends.
std::vector<std::string> profile_arguments(const ProfileConfig& config, const std::vector<std::string>& backends);

// What the target sent back, read like any report file (within the report budget, every field checked) and named:
// the target, the host and Slurm job in each run's origin, the model file and input as the user named them here,
// each option's source as this front end resolved it. Error when the run failed (with the target's last words) or
// the report does not read.
std::vector<RunReport> reports_from_target(const RemoteRunResult& result, const Target& target,
                                           const ProfileConfig& config, const std::string& model_path);

// profile (or compare, with two or more backends) of `config` on the target: the model file and the input tensor
// travel; the study's output goes to `on_output` as it arrives; the result as reports_from_target gives it.
std::vector<RunReport> profile_on_target(
    const Target& target, const SessionConfig& session, const ProfileConfig& config,
    const std::vector<std::string>& backends, const std::string& model_path, const RemoteProgressFn& progress = {},
    const std::function<void(bool is_stderr, const std::string& bytes)>& on_output = {});

// ---- installing mnv2 on a target -------------------------------------------------------------------------------

// One file of the bundle: `source` here, `dest` relative to the installed folder (bin/mnv2, lib/libx.so.1).
struct BundleFile {
  std::string source, dest;
  bool executable = false;
};
struct InstallResult {
  std::string folder;  // on the target, relative to the login folder
  int64_t bytes = 0;   // of the files
  int files = 0;
};
// Copies the files (through ssh, with a fixed remote command: sh, tar and sha256sum of the target) into
// ~/.local/share/mnv2-profiler/VERSION/ on the target: unpacked beside it in a private folder, every file checked
// against its SHA-256 there, then moved into place (the old one replaced only then). Error says what failed.
InstallResult install_bundle(const Target& target, const SessionConfig& config, const std::vector<BundleFile>& files,
                             const RemoteProgressFn& progress = {});

// ---- the agent (the target's side) ------------------------------------------------------------------------------

struct AgentConfig {
  int protocol = 0;     // --protocol as given
  std::string program;  // this program (/proc/self/exe): runs the studies and, under srun, the agent
  std::string version, commit;
  std::string temp_root;    // $TMPDIR or /tmp: the private run folders go under it
  std::string model_cache;  // a private folder for models by SHA-256 ("" = none: each run sends its model)
  std::string slurm_job;    // $SLURM_JOB_ID where the agent runs inside a job
  std::string user;         // the login name (Slurm's stale-job sweep)
  std::string hostname;
  int in_fd = 0, out_fd = 1;
  // The front end's rule for a run's arguments: "" when `args` are fit for `command` on the target (no option
  // that names a file: files travel and are named by the agent), else why not.
  std::function<std::string(const std::string& command, const std::vector<std::string>& args)> check_run;
};

// Serves one client until its input ends; returns the process's exit code. Never throws for what the client
// sends: a bad message is answered with an error message and the session ends.
int run_agent(const AgentConfig& config);

// ---- the wire (shared by both sides; exposed for the tests) ----------------------------------------------------

inline constexpr size_t kMaxLine = size_t{8} << 20;  // one JSON line; files travel in chunks well below it
std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);  // Error on a malformed encoding

}  // namespace mnv2::remote
