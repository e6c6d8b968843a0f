// How both front ends reach a remote target (mnv2/remote.h): the session settings (this program's version, the ssh
// program, the private folder of ssh's control sockets) and the interactive "connect" line. Include it where
// MNV2_VERSION is defined (both programs); what needs no version is in remote_targets.h.
#pragma once

#include <string>
#include <vector>

#include "common/environment.h"
#include "common/remote_targets.h"
#include "mnv2/remote.h"

namespace mnv2::frontend {

// ssh's program and control folder from the environment, and this program's version (the installed bundle's folder
// on a target). `note` (when given) says why connections will not be reused, or stays empty.
inline remote::SessionConfig remote_session_config(const RemoteEnvironment& env, std::string* note = nullptr) {
  remote::SessionConfig c;
  c.version = MNV2_VERSION;
  c.ssh.ssh_program = env.ssh_program;
  std::string why;
  c.ssh.control_dir = remote::control_folder(env.runtime_dir, &why);
  if (note != nullptr) *note = why;
  return c;
}

// The ssh line of "connect": an interactive login that stays as the master connection for an hour, so that
// passphrases, one-time codes and new host keys go to OpenSSH's own prompt (the terminal, or $SSH_ASKPASS where there
// is none) once, and runs (always BatchMode) reuse the connection. Empty when there is no control folder.
inline std::vector<std::string> connect_argv(const remote::Target& target, remote::SessionConfig config) {
  if (config.ssh.control_dir.empty()) return {};
  config.ssh.batch = false;
  config.ssh.control_persist_s = 3600;
  return remote::ssh_argv(target, config.ssh, {"true"});
}

}  // namespace mnv2::frontend
