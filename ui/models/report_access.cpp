// Read-only helpers over RunReport / DiffReport (see report_access.h).
#include "models/report_access.h"

#include <QLocale>
#include <QStringList>
#include <algorithm>
#include <map>
#include <numeric>

#include "mnv2/labels.h"

namespace mnv2::ui {

LayerTiming layerTiming(const mnv2::RunReport& report, int layer) {
  LayerTiming t;
  if (layer < 0 || layer >= static_cast<int>(report.layers.size())) return t;
  const int step = report.layers[static_cast<size_t>(layer)].step;
  if (step < 0 || step >= static_cast<int>(report.steps.size())) return t;
  t.step = &report.steps[static_cast<size_t>(step)];
  t.first = !t.step->layers.empty() && t.step->layers.front() == layer;
  return t;
}

bool rangesOverlap(double p10a, double p90a, double p10b, double p90b) { return !(p90a < p10b || p90b < p10a); }

QString noiseRuleText() {
  return QStringLiteral(
      "Greyed: the difference is inside the measured noise, i.e. the two runs' p10–p90 ranges of this layer "
      "overlap. Only differences between non-overlapping p10–p90 ranges are shown in full colour.");
}

QString precisionName(mnv2::Precision precision) { return QString::fromLatin1(mnv2::to_string(precision)); }

QString runLabel(const QString& backend, mnv2::Precision precision) {
  return backend + QLatin1Char(' ') + precisionName(precision);
}

QString targetText(const mnv2::RunOrigin& o) {
  if (o.target.empty()) return {};
  QStringList where;
  if (!o.host.empty()) where << shownText(o.host);
  if (!o.slurm_job.empty()) where << QStringLiteral("Slurm job %1").arg(shownText(o.slurm_job));
  return shownText(o.target) +
         (where.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(where.join(QStringLiteral(", "))));
}

QString runLabel(const mnv2::RunReport& r) {
  const QString label = runLabel(shownText(r.backend), r.config.precision);
  const QString where = targetText(r.origin);
  return where.isEmpty() ? label : label + QStringLiteral(" on ") + where;
}

QString diffThresholdText(const mnv2::DiffReport& d, mnv2::Precision precision, mnv2::Precision reference) {
  // The engine picks the threshold from the precision of the backend under test (DiffReport::threshold).
  const QString value = QStringLiteral("rel L2 %1").arg(d.threshold, 0, 'g', 2);
  if (precision == mnv2::Precision::fp32 && reference == mnv2::Precision::fp32)
    return value + QStringLiteral(" (fp32 against fp32)");
  return value + QStringLiteral(" (the reduced-precision bound: %1 against %2)")
                     .arg(precisionName(precision), precisionName(reference));
}

QString reportSummary(const mnv2::RunReport& r) {
  QString text = QStringLiteral("%1 · %2 · b%3 · %4×%5 · %6")
                     .arg(runLabel(r), shownText(r.device))
                     .arg(r.config.batch)
                     .arg(r.config.height)
                     .arg(r.config.width)
                     .arg(shownText(r.timer));
  if (r.config.cpu_threads > 0)
    text += QStringLiteral(" · %1 thread%2").arg(r.config.cpu_threads).arg(r.config.cpu_threads == 1 ? "" : "s");
  if (r.reliability.verdict() == mnv2::Verdict::unreliable) text += QStringLiteral(" · ") + reliabilityMarker(r);
  return text;
}

QString reliabilityMarker(const mnv2::RunReport& r) {
  switch (r.reliability.verdict()) {
    case mnv2::Verdict::unreliable:
      return QStringLiteral("⚠ unreliable");
    case mnv2::Verdict::noted:
      return QStringLiteral("noted");
    case mnv2::Verdict::ok:
    case mnv2::Verdict::unknown:
      break;
  }
  return {};
}

QStringList reliabilityReasons(const mnv2::RunReport& r) {
  if (reliabilityMarker(r).isEmpty()) return {};
  QStringList reasons;
  for (const mnv2::Verdict level : {mnv2::Verdict::unreliable, mnv2::Verdict::noted})
    for (const mnv2::ReliabilityFinding& f : r.reliability.findings)
      if (f.verdict == level) reasons << shownText(f.reason);
  return reasons;
}

QString reliabilityText(const mnv2::RunReport& r) {
  const QStringList reasons = reliabilityReasons(r);
  if (reasons.isEmpty()) return {};
  return reliabilityMarker(r) + QStringLiteral(": ") + reasons.join(QStringLiteral("; "));
}

QString shapeText(const mnv2::Shape& s) { return QStringLiteral("%1×%2×%3×%4").arg(s.n).arg(s.c).arg(s.h).arg(s.w); }

QString groupedNumber(qint64 value) { return QLocale(QLocale::English).toString(value); }

QString micros(double ns, int decimals) { return QString::number(ns / 1000.0, 'f', decimals); }

QString cosineText(double cosine) {
  // Backends agree to many digits: "0.999999999" hides the interesting part.
  if (cosine > 0.999 && cosine <= 1.0) {
    const double gap = 1.0 - cosine;
    return gap == 0 ? QStringLiteral("1") : QStringLiteral("1 − %1").arg(gap, 0, 'e', 1);
  }
  return QString::number(cosine, 'f', 6);
}

QString kindShortName(const QString& kind) {
  if (kind == QLatin1String("ResidualAdd")) return QStringLiteral("Add");
  if (kind == QLatin1String("GlobalAveragePool")) return QStringLiteral("Pool");
  return kind;
}

QString blockShortName(const QString& blockName) {
  if (blockName.startsWith(QLatin1String("block"))) return QLatin1Char('b') + blockName.mid(5);
  return blockName;
}

QString layerShortLabel(const mnv2::Layer& l) {
  switch (l.kind) {
    case mnv2::LayerKind::Conv2d: {
      if (l.conv.depthwise()) return QStringLiteral("dw %1×%2").arg(l.conv.kernel_h).arg(l.conv.kernel_w);
      const QString name = shownText(l.name);
      const QString tail = name.section(QLatin1Char('.'), -1);
      if (tail == QLatin1String("expand") || tail == QLatin1String("project")) return tail;
      if (l.conv.pointwise()) return QStringLiteral("conv 1×1");
      return QStringLiteral("conv %1×%2").arg(l.conv.kernel_h).arg(l.conv.kernel_w);
    }
    case mnv2::LayerKind::ReLU6:
      return QStringLiteral("ReLU6");
    case mnv2::LayerKind::ReLU:
      return QStringLiteral("ReLU");
    case mnv2::LayerKind::ResidualAdd:
      return QStringLiteral("add");
    case mnv2::LayerKind::GlobalAveragePool:
      return QStringLiteral("pool");
    case mnv2::LayerKind::Linear:
      return QStringLiteral("FC");
  }
  return shownText(l.name);
}

QString layerTimingToolTip(const mnv2::RunReport& r, int layer) {
  const LayerTiming t = layerTiming(r, layer);
  QString name = QStringLiteral("layer %1").arg(layer);
  QString kind;
  if (layer >= 0 && layer < static_cast<int>(r.topology.size())) {
    const mnv2::Layer& l = r.topology[static_cast<size_t>(layer)];
    name = QStringLiteral("#%1 %2").arg(layer).arg(shownText(l.name).toHtmlEscaped());
    kind = QString::fromLatin1(mnv2::to_string(l.kind));
  }
  QString html = QStringLiteral("<b>%1</b> %2 — <b>%3</b> (%4)")
                     .arg(name, kind, shownText(r.backend).toHtmlEscaped(), shownText(r.timer));
  if (!t.step) return html + QStringLiteral("<br>not timed in this report");
  const mnv2::StepProfile& p = *t.step;
  if (p.layers.size() > 1) {
    html += QStringLiteral("<br>fused step <i>%1</i> (layers %2–%3)%4")
                .arg(shownText(p.name).toHtmlEscaped())
                .arg(p.layers.front())
                .arg(p.layers.back())
                .arg(t.first ? QString() : QStringLiteral(": its time is shown on layer %1").arg(p.layers.front()));
  }
  const mnv2::Summary& s = p.time_ns;
  html += QStringLiteral(
              "<table cellspacing=0 cellpadding=1>"
              "<tr><td>median</td><td align=right>%1 µs</td><td>&nbsp;p10</td><td align=right>%2 µs</td>"
              "<td>&nbsp;p90</td><td align=right>%3 µs</td></tr>"
              "<tr><td>min</td><td align=right>%4 µs</td><td>&nbsp;max</td><td align=right>%5 µs</td>"
              "<td>&nbsp;mean</td><td align=right>%6 µs</td></tr>"
              "<tr><td>n</td><td align=right>%7</td><td>&nbsp;cv</td><td align=right>%8%</td>"
              "<td>&nbsp;share</td><td align=right>%9%</td></tr></table>")
              .arg(micros(s.median), micros(s.p10), micros(s.p90), micros(s.min), micros(s.max), micros(s.mean))
              .arg(s.n)
              .arg(s.cv * 100, 0, 'f', 1)
              .arg(p.share * 100, 0, 'f', 2);
  html += QStringLiteral("%1 GFLOP/s · %2 GB/s").arg(p.gflops, 0, 'f', 1).arg(p.gbytes_per_s, 0, 'f', 1);
  if (!p.variant.empty()) html += QStringLiteral("<br>variant: %1").arg(shownText(p.variant).toHtmlEscaped());
  if (p.event_ns) {
    html += QStringLiteral("<br>cudaEvent median %1 µs%2")
                .arg(micros(p.event_ns->median))
                .arg(p.timers_disagree ? QStringLiteral(" — <b>timers disagree</b>") : QString());
  }
  if (!p.kernel_names.empty()) {
    html += QStringLiteral("<br>kernels (%1 per iteration):").arg(p.kernels_per_iter, 0, 'f', 1);
    const size_t shown = std::min<size_t>(p.kernel_names.size(), 6);
    for (size_t k = 0; k < shown; ++k) {
      QString kn = shownText(p.kernel_names[k]);
      if (kn.size() > 90) kn = kn.left(87) + QStringLiteral("...");
      html += QStringLiteral("<br>&nbsp;&nbsp;<tt>%1</tt>").arg(kn.toHtmlEscaped());
    }
    if (p.kernel_names.size() > shown)
      html += QStringLiteral("<br>&nbsp;&nbsp;… %1 more").arg(p.kernel_names.size() - shown);
    if (!p.grid.empty()) {
      html += QStringLiteral("<br>longest kernel: grid (%1), block (%2)").arg(shownText(p.grid), shownText(p.block));
    }
  }
  return html;
}

QString classLabel(int index, int classes) {
  static int cachedClasses = -1;
  static std::vector<std::string> cached;
  if (cachedClasses != classes) {
    cached = mnv2::builtin_labels(classes);
    cachedClasses = classes;
  }
  if (index < 0 || index >= static_cast<int>(cached.size())) return QStringLiteral("class %1").arg(index);
  return shownText(cached[static_cast<size_t>(index)]);
}

QString shownText(const std::string& text) {
  if (text.size() <= static_cast<size_t>(kMaxShownChars)) return QString::fromStdString(text);
  // Cut on UTF-8 character boundaries (never inside a multi-byte sequence).
  auto boundary = [&text](size_t at) {
    while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    return at;
  };
  const size_t half = static_cast<size_t>(kMaxShownChars) / 2;
  const size_t head = boundary(half), tail = boundary(text.size() - half);
  return QString::fromStdString(text.substr(0, head)) + QStringLiteral(" … (%1 bytes) … ").arg(text.size()) +
         QString::fromStdString(text.substr(tail));
}

}  // namespace mnv2::ui
