// What mnv2's commands share to run on a remote target (mnv2/remote.h): the session settings from the
// environment, and the run of a study on the target --target names.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "common/environment.h"
#include "mnv2/options.h"
#include "mnv2/remote.h"

namespace mnv2::cli {

// ssh's program and control folder (a note on standard error when connections cannot be reused and `say_note`).
remote::SessionConfig session_config(const frontend::RemoteEnvironment& env, bool say_note);

// The target --target names, from the targets file; a UsageError lists the targets there when none has the name.
remote::Target target_named(const std::string& name);

// profile or compare on the target: the model and the input travel (an image is decoded here, so the target needs
// no image codecs), the study's output is shown as it arrives (escaped), and its report comes back, is read like
// any report and written here with the target named in its metadata.
int run_on_target(const Args& args, const OptionValues& options, const std::string& command);

// One place of `--target A,B@1,...`: a target, and the GPU there (-1: the command's --device).
struct Place {
  std::string target, label;
  int device = -1;
};
std::vector<Place> parse_places(const std::string& text);
// profile or compare of the same configuration on every place at once (remote_multi.cpp): one report file with every
// run, each set beside the first (comparability, difference headline).
int run_on_places(const Args& args, const OptionValues& options, const std::string& command,
                  const std::vector<Place>& places);

// bench, memory or roofline on the target: their arguments forwarded, the model and an image's tensor sent, every
// output file given brought back, read by its reader (JSON) within its budget, and written here all or nothing.
int study_on_target(const Args& args, const OptionValues& options, const std::string& command);

// eval on the target: the images the local rules pick (class folders or --list) travel as a stream of files that
// never follows a link out of the folder, with a list of them and their labels; the target decodes them.
int eval_on_target(const Args& args, const OptionValues& options);

}  // namespace mnv2::cli
