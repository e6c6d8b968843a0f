// What mnv2's commands run on: the model the options locate, and the one run that profile, roofline and compare
// describe the same way (backends, counts, input, options).
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "mnv2/model.h"
#include "mnv2/model_lookup.h"
#include "mnv2/options.h"
#include "mnv2/profiler.h"

namespace mnv2::cli {

struct LoadedModel {
  Model model;
  ModelLocation location;
};

// The model --model (or the environment, or the lookup) names; its warnings go to standard error. The model file
// and its external data files are declared to the command's output set as inputs (one of them as an output is
// refused before any run).
LoadedModel load_model(const Args& args, const OptionValues& options);

// The run of profile, roofline (one backend) and compare (several): checked, its input read, its size one the
// network can take.
struct ProfileRequest {
  LoadedModel m;
  ProfileConfig base;
  std::vector<std::string> backends;
};
// `remote`: the run happens on a target (mnv2/remote.h), whose memory and devices this machine cannot check: the
// target's own mnv2 checks them before it runs.
ProfileRequest parse_profile_request(const Args& args, const OptionValues& options, bool compare, bool remote = false);

}  // namespace mnv2::cli
