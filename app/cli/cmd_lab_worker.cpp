// mnv2 lab-worker (hidden): the process `mnv2 lab` starts to run a user's kernel apart from itself; the request
// comes in a file, the result goes out through a pipe.
#include <string>

#include "commands.h"
#include "mnv2/error.h"
#include "mnv2/lab.h"

namespace mnv2::cli {

void declare_lab_worker(Args& a) {
  a.value("--request", "the request file mnv2 lab wrote");
  a.value("--result-fd", "the pipe the result goes to");
}

int cmd_lab_worker(const Args& args, const OptionValues& /*options*/) {
  const std::string request = args.get_or("--request", "");
  const auto fd = args.get("--result-fd");
  if (request.empty() || !fd) throw UsageError("lab-worker is started by 'mnv2 lab' (--request FILE --result-fd N)");
  return lab_worker_main(request, parse_int(*fd, "--result-fd", 3, 1 << 20));
}

}  // namespace mnv2::cli
