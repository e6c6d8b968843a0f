// Read-only helpers over the engine's RunReport / DiffReport for the item models and charts: which step's
// time a layer carries, the noise rule, labels and tool-tip texts. No widgets here.
#pragma once

#include <QString>
#include <memory>
#include <optional>
#include <vector>

#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/studies.h"

namespace mnv2::ui {

// Reports are shared read-only between pages once they reach the GUI thread.
using ReportPtr = std::shared_ptr<const mnv2::RunReport>;
using DiffPtr = std::shared_ptr<const mnv2::DiffReport>;

// The step whose time a topology layer carries. Only the step's first layer shows the time; the other
// layers of a fused step are "fused into" it, so nothing is counted twice.
struct LayerTiming {
  const mnv2::StepProfile* step = nullptr;  // null when the report does not cover the layer
  bool first = false;                       // the layer is its step's first layer
};
LayerTiming layerTiming(const mnv2::RunReport& report, int layer);

// The noise rule of the run comparison: two timings differ beyond the measured noise only when their
// p10..p90 ranges do not overlap.
bool rangesOverlap(double p10a, double p90a, double p10b, double p90b);
QString noiseRuleText();

// Engine text on its way to a widget (names, kernel names, paths, warnings, reasons), bounded: a string past
// kMaxShownChars bytes keeps its start and end around an ellipsis. Reports bound their strings when read
// (mnv2/input_files.h), but a label cell still should not lay out kilobytes; this is the one conversion the
// models and pages use.
inline constexpr int kMaxShownChars = 512;
QString shownText(const std::string& text);

// The rows of the run comparison: the engine's alignment of two runs' steps (fused steps on either side).
using mnv2::AlignedSegment;

// "fp32", "tf32", "fp16"
QString precisionName(mnv2::Precision precision);
// The name of a run wherever one is shown (legends, run lists, table headers, titles): the backend and
// the arithmetic it ran, "cudnn fp16"; a run on a remote target names the target and the host it ran on, and its
// Slurm job where there was one: "cuda fp16 on h200 (gpu-node-3, Slurm job 123)".
QString runLabel(const QString& backend, mnv2::Precision precision);
QString runLabel(const mnv2::RunReport& report);
// Where a run ran (RunReport::origin): "h200 (gpu-node-3, Slurm job 123)"; empty for a run on the machine that
// wrote the report.
QString targetText(const mnv2::RunOrigin& origin);
// How a diff is judged: "rel L2 0.0001 (fp32 against fp32)" or "rel L2 0.01 (the reduced-precision bound:
// fp16 against fp32)";
// `precision` is what the backend under test ran, `reference` what the reference ran.
QString diffThresholdText(const mnv2::DiffReport& diff, mnv2::Precision precision, mnv2::Precision reference);

// "cpu fp32 · CPU · b1 · 224×224 · host_clock · 2 threads" (the thread count where a cpu backend ran; a
// "⚠ unreliable" marker where the run's figures are not to be trusted)
QString reportSummary(const mnv2::RunReport& report);
// The run's reliability (mnv2/reliability.h) for a marker column or a badge: "⚠ unreliable", "noted", or
// empty where the run is ok (or only some check could not be made).
QString reliabilityMarker(const mnv2::RunReport& report);
// The verdict and every finding at noted or above, with the measured numbers: "⚠ unreliable: end-to-end CV
// 80% (> 10%); host busy: other processes used 1.9 of 2 cores ..."; empty where the marker is.
QString reliabilityText(const mnv2::RunReport& report);
// The reasons of the findings at noted or above, the unreliable ones first (each group in the engine's
// order); empty where the marker is.
QStringList reliabilityReasons(const mnv2::RunReport& report);
QString shapeText(const mnv2::Shape& shape);        // "1×32×112×112"
QString groupedNumber(qint64 value);                // "3,504,872"
QString micros(double ns, int decimals = 2);        // "123.45"
QString cosineText(double cosine);                  // "1 − 3.1e-13" near 1, else "0.998712"
QString kindShortName(const QString& kind);         // "Add", "Pool" for the two long kind names
QString blockShortName(const QString& blockName);   // "stem", "b3", "head"
QString layerShortLabel(const mnv2::Layer& layer);  // "expand", "dw 3×3", "ReLU6", "add", "FC"

// Rich-text tool-tip for a layer's timing in a report: statistics of its step, derived figures,
// implementation variant and the kernels CUPTI saw.
QString layerTimingToolTip(const mnv2::RunReport& report, int layer);

// The label of a class index in a model of `classes` classes, from the built-in label lists.
QString classLabel(int index, int classes);

}  // namespace mnv2::ui
