// The run comparison model (see run_comparison_model.h).
#include "models/run_comparison_model.h"

#include "models/report_access.h"

#include <QBrush>
#include <QColor>
#include <cmath>

namespace mnv2::ui {

RunComparisonModel::RunComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunComparisonModel::setRuns(ReportPtr a, ReportPtr b, QString nameA, QString nameB) {
  beginResetModel();
  m_a = std::move(a);
  m_b = std::move(b);
  m_nameA = std::move(nameA);
  m_nameB = std::move(nameB);
  m_rows.clear();
  m_totalA = m_totalB = 0;
  m_note.clear();
  if (m_a && m_b) {
    m_rows = mnv2::align_runs(*m_a, *m_b);
    for (const auto& s : m_rows) {
      m_totalA += s.median_a;
      m_totalB += s.median_b;
    }
    if (m_a->topology.size() != m_b->topology.size()) {
      m_note = QStringLiteral("The runs have %1 and %2 layers; the first %3 are compared.")
                   .arg(m_a->topology.size())
                   .arg(m_b->topology.size())
                   .arg(std::min(m_a->topology.size(), m_b->topology.size()));
    } else {
      for (size_t l = 0; l < m_a->topology.size(); ++l) {
        if (m_a->topology[l].name != m_b->topology[l].name || m_a->topology[l].kind != m_b->topology[l].kind) {
          m_note = QStringLiteral("The topologies differ from layer %1 on; rows are aligned by index.").arg(l);
          break;
        }
      }
    }
    // The engine's rule (compare_settings): checksums of different algorithms are unknown, not different.
    if (m_note.isEmpty())
      for (const SettingDifference& d : compare_settings(*m_a, *m_b).differences)
        if (d.setting == "model") m_note = QStringLiteral("Model: %1.").arg(QString::fromStdString(d.consequence));
  }
  endResetModel();
}

int RunComparisonModel::rowsOutsideNoise() const {
  int n = 0;
  for (const auto& s : m_rows)
    if (!rangesOverlap(s.p10_a, s.p90_a, s.p10_b, s.p90_b)) ++n;
  return n;
}

int RunComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int RunComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString RunComparisonModel::segmentName(const AlignedSegment& s) const {
  auto name = [&](int l) {
    return l < static_cast<int>(m_a->topology.size()) ? shownText(m_a->topology[static_cast<size_t>(l)].name)
                                                      : QString::number(l);
  };
  if (s.layers.size() == 1) return name(s.first_layer);
  return QStringLiteral("%1 … %2").arg(name(s.layers.front()), name(s.layers.back()));
}

QVariant RunComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const AlignedSegment& s = m_rows[static_cast<size_t>(index.row())];
  const bool noise = rangesOverlap(s.p10_a, s.p90_a, s.p10_b, s.p90_b);
  const double delta = s.median_b - s.median_a;
  const double speedUp = s.median_b > 0 ? s.median_a / s.median_b : 0.0;
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Index:
          return s.layers.size() == 1 ? QString::number(s.first_layer)
                                      : QStringLiteral("%1–%2").arg(s.layers.front()).arg(s.layers.back());
        case Name:
          return segmentName(s);
        case Kind: {
          const mnv2::Layer& l = m_a->topology[static_cast<size_t>(s.first_layer)];
          QString kind = QString::fromLatin1(mnv2::to_string(l.kind));
          return s.layers.size() > 1 ? kind + QStringLiteral(" +%1").arg(s.layers.size() - 1) : kind;
        }
        case MedianA:
          return micros(s.median_a);
        case RangeA:
          return QStringLiteral("%1 – %2").arg(micros(s.p10_a), micros(s.p90_a));
        case MedianB:
          return micros(s.median_b);
        case RangeB:
          return QStringLiteral("%1 – %2").arg(micros(s.p10_b), micros(s.p90_b));
        case Delta:
          return (delta > 0 ? QStringLiteral("+") : QString()) + micros(delta);
        case SpeedUp:
          if (speedUp <= 0) return QString();
          return QStringLiteral("%1×").arg(speedUp, 0, speedUp >= 0.1 ? 'f' : 'g', 2);
        default:
          return {};
      }
    case SortRole:
      switch (column) {
        case Index:
          return s.first_layer;
        case MedianA:
          return s.median_a;
        case RangeA:
          return s.p90_a - s.p10_a;
        case MedianB:
          return s.median_b;
        case RangeB:
          return s.p90_b - s.p10_b;
        case Delta:
          return delta;
        case SpeedUp:
          return speedUp;
        default:
          return data(index, Qt::DisplayRole);
      }
    case LayerRole:
      return s.first_layer;
    case WithinNoiseRole:
      return noise;
    case Qt::ForegroundRole:
      if (noise) return QBrush(QColor(150, 150, 150));
      if (column == Delta || column == SpeedUp) return QBrush(delta < 0 ? QColor(0, 120, 40) : QColor(180, 30, 30));
      return {};
    case Qt::ToolTipRole: {
      QString tip = noise ? QStringLiteral("Within noise: the p10–p90 ranges overlap.")
                          : QStringLiteral("Outside noise: the p10–p90 ranges do not overlap.");
      if (s.steps_a > 1 || s.steps_b > 1 || s.layers.size() > 1) {
        tip += QStringLiteral(
                   "\nSegment of %1 layers (%2 step(s) in A, %3 in B); times and p10/p90 are sums over the steps.")
                   .arg(s.layers.size())
                   .arg(s.steps_a)
                   .arg(s.steps_b);
      }
      return tip;
    }
    case Qt::TextAlignmentRole:
      if (column != Name && column != Kind) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default:
      return {};
  }
}

QVariant RunComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  const QString a = !m_nameA.isEmpty() ? m_nameA : m_a ? runLabel(*m_a) : QStringLiteral("A");
  const QString b = !m_nameB.isEmpty() ? m_nameB : m_b ? runLabel(*m_b) : QStringLiteral("B");
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Index:
        return QStringLiteral("#");
      case Name:
        return QStringLiteral("Layer(s)");
      case Kind:
        return QStringLiteral("Kind");
      case MedianA:
        return QStringLiteral("A: %1 median µs").arg(a);
      case RangeA:
        return QStringLiteral("A p10 – p90");
      case MedianB:
        return QStringLiteral("B: %1 median µs").arg(b);
      case RangeB:
        return QStringLiteral("B p10 – p90");
      case Delta:
        return QStringLiteral("Δ B−A µs");
      case SpeedUp:
        return QStringLiteral("Speed-up A/B");
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    if (section == Delta) return QStringLiteral("B's median − A's median.\n") + noiseRuleText();
    if (section == SpeedUp) return QStringLiteral("A's median / B's median: above 1, B is faster.\n") + noiseRuleText();
  }
  return {};
}

}  // namespace mnv2::ui
