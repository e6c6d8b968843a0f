// Writing and reading RunReports: CSV (one row per layer per backend), JSON (everything, readable back)
// and a Chrome/Perfetto trace. Every file is written atomically (temporary file, then rename).
#pragma once

#include <string>
#include <vector>

#include "mnv2/json.h"
#include "mnv2/profiler.h"

namespace mnv2 {

inline constexpr int kReportSchemaVersion = 1;

// One layer's description and figures (index, kind, names, block, inputs, attributes, output shape, params,
// MACs, bytes), as reports and `mnv2 topology --format json` write it.
json::Value layer_json(const Layer& layer, const LayerStats& stats);

std::string report_csv(const std::vector<RunReport>& reports);  // header + rows

// A CSV field, quoted where it holds a comma, quote or line break.
std::string csv_quote(const std::string& text);

// A MemoryReport as reports write it ("memory" of a run), and back; fields a older report lacks stay default.
json::Value memory_json(const MemoryReport& memory);
MemoryReport memory_from_json(const json::Value& value);
json::Value report_json(const RunReport& report);
json::Value reports_json(const std::vector<RunReport>& reports);  // {"schema": ..., "runs": [...]}
std::string trace_json(const std::vector<RunReport>& reports);   // {"traceEvents": [...]}

// Reads what reports_json / report_json wrote. Throws Error naming the file for malformed, truncated
// or newer-schema files.
std::vector<RunReport> read_reports_file(const std::string& path);
std::vector<RunReport> reports_from_json(const json::Value& value);

void write_csv_report(const std::string& path, const std::vector<RunReport>& reports);
void write_json_report(const std::string& path, const std::vector<RunReport>& reports);
void write_trace(const std::string& path, const std::vector<RunReport>& reports);

}  // namespace mnv2
