// Roofline CSV and JSON (see mnv2/roofline_report.h).
#include "mnv2/roofline_report.h"

#include <locale>
#include <sstream>

#include "mnv2/csv.h"
#include "mnv2/report.h"

namespace mnv2 {

namespace {

// What std::to_string(double) writes ("%f": six decimals), with '.' whatever the locale (the app sets the
// user's, which may have a decimal comma).
std::string f6(double v) {
  std::ostringstream o;
  o.imbue(std::locale::classic());
  o.setf(std::ios::fixed);
  o.precision(6);
  o << v;
  return o.str();
}

}  // namespace

std::string roofline_csv(const std::vector<RooflinePoint>& points) {
  std::string csv = "step,layer,name,kind,flops,bytes,flop_per_byte,median_ns,gflop_s,roof_gflop_s,memory_bound\n";
  for (const RooflinePoint& q : points)
    csv += std::to_string(q.step) + "," + std::to_string(q.layer) + "," + csv_quote(q.name) + "," + csv_quote(q.kind) +
           "," + f6(q.flops) + "," + f6(q.bytes) + "," + f6(q.intensity) + "," + f6(q.time_ns) + "," + f6(q.gflop_s) +
           "," + f6(q.attainable_gflop_s) + "," + (q.memory_bound ? "1" : "0") + "\n";
  return csv;
}

std::string roofline_json(const Ceilings& ceilings, const RunReport& report) {
  const json::Json j = {{"schema", "mnv2.roofline/1"}, {"ceilings", ceilings}, {"run", report_json(report)}};
  return json::dump(j, 2) + "\n";
}

}  // namespace mnv2
