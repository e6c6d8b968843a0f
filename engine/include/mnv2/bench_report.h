// End-to-end benchmark and sweep files: CSV and JSON (schema mnv2.bench/1), written by the CLI's bench
// and the app's sweep page alike.
#pragma once

#include <string>
#include <vector>

#include "mnv2/bench.h"
#include "mnv2/report.h"

namespace mnv2 {

// cudnn's GPU median over this result's GPU median, at the same batch and input size; 0 where either has
// no GPU figure or there is no cudnn result.
double speedup_vs_cudnn(const std::vector<BenchResult>& results, const BenchResult& result);

// One row per result: configuration, host and GPU latency figures (ms), images/s, memory.
std::string bench_csv(const std::vector<BenchResult>& results);
// Schema mnv2.bench/1: the model, the build commit, one record per result.
std::string bench_json(const std::vector<BenchResult>& results, const ReportModel& model);

}  // namespace mnv2
