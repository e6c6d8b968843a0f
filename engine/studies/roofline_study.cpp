// The roofline study: a profiled run under the ceilings of the device it ran on (mnv2/studies.h).
#include "mnv2/backend.h"
#include "mnv2/roofline.h"
#include "mnv2/studies.h"

namespace mnv2 {

RooflineResult roofline_study(const RunReport& run, const RooflineConfig& config) {
  RooflineResult r;
  // The device the run ran on (its GPU ordinal, or the host at its thread count), in the precision it ran: a
  // GPU's compute roof depends on it (fp16 and tf32 tensor cores).
  r.ceilings = device_ceilings(run.backend, config.recalibrate, &r.warning, run.config.precision,
                               run.config.cpu_threads, run.config.device);
  r.points = roofline_points(run, r.ceilings);
  return r;
}

}  // namespace mnv2
