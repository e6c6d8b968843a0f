// Writing and reading RunReports (profile and compare): CSV (one row per layer per backend), JSON (schema
// mnv2.report, everything, readable back) and a Chrome/Perfetto trace. Files are written through
// mnv2/output_files.h (a report set is all or nothing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"

namespace mnv2 {

inline constexpr int kReportSchemaVersion = 1;
// A report file is read within inputs::kReport (size, parsed memory, strings; mnv2/input_files.h).

// One layer's description and figures (index, kind, names, block, inputs, attributes, output shape, params,
// MACs, bytes), as reports and `mnv2 topology --format json` write it.
json::Json layer_json(const Layer& layer, const LayerStats& stats);

// The model a bench or eval file was made with ("model" of mnv2.bench/1 and mnv2.eval/1): what the CLI
// and the app both know of it.
struct ReportModel {
  std::string source;
  std::string found_by;  // how the file was located: "--model", "MNV2_MODEL", ...
  std::string checksum;
  bool synthetic = false;
  int classes = 0;
  int64_t layers = 0;
  std::vector<std::string> warnings;
};
ReportModel report_model(const Model& model, const std::string& found_by);
json::Json model_json(const ReportModel& model);

// A run's reliability (mnv2/reliability.h) as reports and bench files write it: {"verdict": "unreliable",
// "findings": [{"code", "verdict", "reason", "value", "limit"}]}. The reader refuses unknown verdicts, empty
// codes and figures that are not finite.
json::Json reliability_json(const Reliability& reliability);
Reliability reliability_from_json(const json::Json& value);

// The GPU a run used (mnv2/device.h GpuRecord) as reports and bench files write it: {"index", "uuid", "name",
// "pci_bus_id", "sm_clock_max_mhz", "sm_clock_applications_mhz", "memory_clock_mhz", "power_limit_w"} (-1: not
// known), and "nvml_problem" where NVML gave nothing. The reader refuses an index outside 0..1023, a clock outside
// -1..100000 MHz and a power limit that is not -1 or a positive finite figure.
json::Json gpu_record_json(const GpuRecord& gpu);
GpuRecord gpu_record_from_json(const json::Json& value);

// The options a backend resolved (PreparedNet::resolved_options()) as reports and bench files write them:
// {"cuda-fusion": {"requested": "auto", "resolved": "block", "why": "..."}}. The reader refuses an option this
// program does not know and values that are not one of the option's choices.
json::Json resolved_options_json(const std::vector<ResolvedOption>& options);
std::vector<ResolvedOption> resolved_options_from_json(const json::Json& value);

std::string report_csv(const std::vector<RunReport>& reports);  // header + rows

json::Json report_json(const RunReport& report);
json::Json reports_json(const std::vector<RunReport>& reports);        // {"schema": ..., "runs": [...]}
std::string reports_json_text(const std::vector<RunReport>& reports);  // reports_json as the file holds it
std::string trace_json(const std::vector<RunReport>& reports);         // {"traceEvents": [...]}

// Reads what reports_json / report_json wrote. Throws Error naming the file for malformed, truncated,
// oversized or newer-schema files.
std::vector<RunReport> read_reports_file(const std::string& path);
std::vector<RunReport> reports_from_json(const json::Json& value);

// One file each, through write_output_file (mnv2/output_files.h).
void write_csv_report(const std::string& path, const std::vector<RunReport>& reports);
void write_json_report(const std::string& path, const std::vector<RunReport>& reports);
void write_trace(const std::string& path, const std::vector<RunReport>& reports);

// ---- sessions ---------------------------------------------------------------------------------------------

// A working session's runs (the app's run history), with the names and notes the user gave them and the
// pinned baseline, in one mnv2.report file: "runs" as any report, plus a "session" object that readers of
// plain reports ignore. Any report opens as a session (no names or notes, no baseline).
struct SessionRun {
  RunReport report;
  std::string name;  // as the user named it; empty: the front end's default name
  std::string note;  // free text
};
struct Session {
  std::vector<SessionRun> runs;
  int baseline = -1;  // index into runs; -1: none pinned
};
inline constexpr size_t kMaxSessionText = 4096;  // bytes of a run's name or note (longer is refused on read)

json::Json session_json(const Session& session);
Session session_from_json(const json::Json& value);  // Error for a bad "session" object or bad runs
// Read within inputs::kReport; throws Error naming the file.
Session read_session_file(const std::string& path);
void write_session_file(const std::string& path, const Session& session);  // through write_output_file

}  // namespace mnv2
