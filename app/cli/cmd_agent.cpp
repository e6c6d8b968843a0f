// mnv2 agent --protocol N: the fixed entry point of a remote target (mnv2/remote.h, docs/REMOTE.md), started by ssh
// (or by srun under the agent of a Slurm login node). It speaks JSON lines on standard input and output; nothing
// else may write to standard output, so the study runs as a child process of its own.
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "commands.h"
#include "common/environment.h"
#include "mnv2/build_info.h"
#include "mnv2/model_lookup.h"
#include "mnv2/remote.h"

namespace mnv2::cli {

void declare_agent(Args& a) { a.value("--protocol", "the agent protocol the client speaks"); }

int cmd_agent(const Args& args, const OptionValues&) {
  remote::AgentConfig c;
  c.protocol = parse_int(args.get_or("--protocol", "0"), "--protocol", 0, 1 << 20);
  c.program = std::filesystem::read_symlink("/proc/self/exe").string();
  c.version = MNV2_VERSION;
  c.commit = mnv2::build_commit();
  const frontend::RemoteEnvironment env = frontend::remote_environment();
  c.temp_root = env.temp_root;
  c.slurm_job = env.slurm_job;
  const std::string cache = cache_dir();
  if (!cache.empty()) c.model_cache = cache + "/models";
  if (const passwd* pw = ::getpwuid(::geteuid())) c.user = pw->pw_name;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  c.hostname = host;
  c.check_run = check_remote_args;
  return remote::run_agent(c);
}

}  // namespace mnv2::cli
