// The op harness's benchmark rows and their printers (console table, CSV), which print the same columns from one
// list; the CSV goes through the engine's writer (mnv2/output_files.h) with the engine's quoting (mnv2/csv.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "mnv2/output_files.h"

namespace mnv2::ops {

// One timed case on one backend configuration. Timing is never a pass/fail criterion; `status` is the
// correctness verdict of the same case and configuration.
struct BenchRow {
  std::string case_name;  // op_cases.h case_name()
  std::string pattern;    // "conv", "block", ...
  int batch = 0;
  std::string input;      // "3x224x224" (per image)
  std::string backend;    // "cuda"
  std::string variant;    // "fast fusion=block splitk=separate", "threads=2", "reference"
  std::string precision;  // "fp32"
  std::string status;     // "pass", "FAIL"
  std::string timer;      // what the figures measure: "host" (wall time of run()), "gpu" (an event pair around the
                          // run on the stream: upload, layers, download), "device" (the network alone, input resident)
  int64_t n = 0;          // timed runs (after the warm-up)
  double median_us = 0, p90_us = 0, min_us = 0;
  double cv = 0;      // coefficient of variation of the timed runs
  int steps = 0;      // execution steps of the prepared net
  std::string plan;   // the steps: "Conv2d 0 + ReLU6 1 [variant]; ..."
  uint64_t seed = 0;  // the run's --seed
};

class BenchPrinter {
 public:
  virtual ~BenchPrinter() = default;
  virtual void row(const BenchRow& r) = 0;
  virtual void finish() {}
};

// A fixed-width table on `out`, a header first; long names are cut to the column's width.
std::unique_ptr<BenchPrinter> make_console_printer(std::FILE* out);
// Every column as CSV: put into `set` under `label` at finish() (the caller commits the set).
std::unique_ptr<BenchPrinter> make_csv_printer(OutputSet& set, const std::string& label);

}  // namespace mnv2::ops
