// Roofline files: CSV (one row per profiled step) and JSON (schema mnv2.roofline/1: the ceilings and the
// profiled run, as a profile report writes it).
#pragma once

#include <string>
#include <vector>

#include "mnv2/roofline.h"

namespace mnv2 {

std::string roofline_csv(const std::vector<RooflinePoint>& points);
std::string roofline_json(const Ceilings& ceilings, const RunReport& report);

}  // namespace mnv2
