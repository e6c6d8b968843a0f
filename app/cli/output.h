// What several of mnv2's commands print the same way: the model's warnings, a run's reliability and summary,
// progress on standard error, and the report files of a set of runs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "args.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/reliability.h"

namespace mnv2::cli {

void print_warnings(std::ostream& out, const Model& model, const char* prefix = "WARNING: ");

// A run's reliability (mnv2/reliability.h) under its summary: the verdict, then one line per finding, worst
// first as found ("    unreliable: end-to-end CV 80% (> 10%)").
void print_reliability(const Reliability& rel, const char* indent);

// Nanoseconds as microseconds with two decimals.
std::string us(double ns);

// A profiled run's summary under its table: end to end, per layer, memory, timeline, clocks, the two-timer
// check, per kind, warnings and reliability.
void print_summary(const RunReport& r);

// The profiler's progress of `backend` on standard error: a line that rewrites itself on a terminal, a line per
// phase otherwise.
// With --progress-fd N (the agent's run of a study), each step also goes to descriptor N as "P DONE TOTAL PHASE".
ProfileProgress stderr_progress(const std::string& backend);
void set_progress_fd(int fd);

// --csv, --json and --trace of profile and compare.
void put_reports(const Args& args, const std::vector<RunReport>& reports);

}  // namespace mnv2::cli
