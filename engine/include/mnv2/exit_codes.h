// mnv2's exit codes: one table that the program returns from (main, mnv2 lab) and that `mnv2 --help`, the manual
// page's EXIT STATUS and docs/REPORTS.md (checked against the manual page) print.
#pragma once

#include <array>

namespace mnv2 {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitError = 1;            // a runtime error (Error), or a check that failed
inline constexpr int kExitUsage = 2;            // a usage error (UsageError)
inline constexpr int kExitLabCompileError = 3;  // mnv2 lab: the kernel did not compile
inline constexpr int kExitLabCrashed = 4;       // mnv2 lab: the kernel crashed the worker or timed out

struct ExitCodeDoc {
  int code;
  const char* meaning;
};

inline constexpr std::array<ExitCodeDoc, 5> kExitCodes{{
    {kExitSuccess, "success"},
    {kExitError,
     "a runtime error (\"error: ...\" on standard error), or a check that failed (runs refused, a lab kernel's check)"},
    {kExitUsage, "a usage error: an unknown command or option, a bad value"},
    {kExitLabCompileError, "mnv2 lab: the kernel did not compile"},
    {kExitLabCrashed, "mnv2 lab: the kernel crashed the worker or timed out"},
}};

}  // namespace mnv2
