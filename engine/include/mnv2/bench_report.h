// End-to-end benchmark and sweep files: CSV and JSON (schema mnv2.bench/1), written by the CLI's bench
// and the app's sweep page alike.
#pragma once

#include <string>
#include <vector>

#include "mnv2/bench.h"
#include "mnv2/report.h"

namespace mnv2 {

// cudnn's GPU median over this result's GPU median, at the same batch, input size and precision; 0 where either has
// no GPU figure or there is no cudnn result.
double speedup_vs_cudnn(const std::vector<BenchResult>& results, const BenchResult& result);

// One row per result: configuration, host and GPU latency figures (ms), images/s, memory.
std::string bench_csv(const std::vector<BenchResult>& results);
// Schema mnv2.bench/1: the model, the build commit, one record per result.
std::string bench_json(const std::vector<BenchResult>& results, const ReportModel& model);

// A mnv2.bench/1 file read back: ours (`mnv2 bench --json`, the app's sweep export) or another program's in
// the same schema (scripts/pytorch-anchor.py: backend "pytorch"). Each result's configuration, host figures
// (median_ms ...), GPU and device-resident figures where present, memory and reliability where present;
// keys this reader does not know are ignored, a missing required key is an Error naming it.
struct BenchFile {
  ReportModel model;
  std::string commit;
  std::vector<BenchResult> results;
};
inline constexpr size_t kMaxBenchResults = 100000;  // far beyond any sweep; more is refused
// Read within inputs::kReport; throws Error "PATH: result N: ..." naming the file, the record and the key.
BenchFile read_bench_file(const std::string& path);
BenchFile bench_from_json(const json::Json& value);
// A cheap look (no parse) at the file's first 64 KiB: true when its "schema" is "mnv2.bench/1". Lets a front
// end that opens any report pick the reader; read_bench_file still checks everything.
bool is_bench_file(const std::string& path);

}  // namespace mnv2
