// The topology table model (see layer_table_model.h).
#include "models/layer_table_model.h"

#include "models/report_access.h"

#include <QBrush>
#include <QColor>
#include <limits>

namespace mnv2::ui {

LayerTableModel::LayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setTopology(std::vector<mnv2::Layer> layers, std::vector<mnv2::LayerStats> stats) {
  beginResetModel();
  m_layers = std::move(layers);
  m_stats = std::move(stats);
  m_stats.resize(m_layers.size());
  m_report.reset();
  endResetModel();
}

void LayerTableModel::setReport(ReportPtr report) {
  beginResetModel();
  m_report = std::move(report);
  if (m_report) {
    m_layers = m_report->topology;
    m_stats = m_report->layer_stats;
    m_stats.resize(m_layers.size());
  }
  endResetModel();
}

int LayerTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_layers.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerTableModel::display(int row, int column) const {
  const mnv2::Layer& l = m_layers[static_cast<size_t>(row)];
  const mnv2::LayerStats& s = m_stats[static_cast<size_t>(row)];
  switch (column) {
    case Index:
      return l.index;
    case Block:
      return shownText(l.block_name);
    case Kind:
      return QString::fromLatin1(mnv2::to_string(l.kind));
    case Name:
      return shownText(l.name);
    case Output:
      return shapeText(s.output);
    case Params:
      return groupedNumber(s.params);
    case Macs:
      return groupedNumber(s.macs);
    default:
      break;
  }
  if (!m_report) return {};
  const LayerTiming t = layerTiming(*m_report, row);
  if (!t.step) return {};
  if (!t.first)
    return column == Implementation ? QStringLiteral("fused into %1").arg(shownText(t.step->name))
                                    : (column == Median ? QStringLiteral("fused") : QVariant());
  const mnv2::StepProfile& p = *t.step;
  switch (column) {
    case Median:
      return micros(p.time_ns.median);
    case Range:
      return QStringLiteral("%1 – %2").arg(micros(p.time_ns.p10), micros(p.time_ns.p90));
    case Share:
      return QString::number(p.share * 100, 'f', 2);
    case GFlops:
      return QString::number(p.gflops, 'f', 1);
    case Implementation: {
      QString text = shownText(p.variant);
      if (!p.kernel_names.empty()) {
        const QString first = shownText(p.kernel_names.front());
        text = text.isEmpty() ? first : text + QStringLiteral(" · ") + first;
      }
      if (p.layers.size() > 1) text = QStringLiteral("[%1] %2").arg(shownText(p.name), text);
      return text;
    }
    default:
      return {};
  }
}

QVariant LayerTableModel::sortValue(int row, int column) const {
  const mnv2::LayerStats& s = m_stats[static_cast<size_t>(row)];
  switch (column) {
    case Index:
    case Block:
      return row;  // blocks in network order
    case Params:
      return static_cast<qlonglong>(s.params);
    case Macs:
      return static_cast<qlonglong>(s.macs);
    case Output:
      return static_cast<qlonglong>(s.output.numel());
    case Median:
    case Range:
    case Share:
    case GFlops: {
      if (!m_report) return -1.0;
      const LayerTiming t = layerTiming(*m_report, row);
      if (!t.step || !t.first) return -1.0;  // fused layers carry no time of their own
      if (column == Median) return t.step->time_ns.median;
      if (column == Range) return t.step->time_ns.p90 - t.step->time_ns.p10;
      if (column == Share) return t.step->share;
      return t.step->gflops;
    }
    default:
      return display(row, column);
  }
}

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const int row = index.row();
  const int column = index.column();
  const mnv2::Layer& l = m_layers[static_cast<size_t>(row)];
  switch (role) {
    case Qt::DisplayRole:
      return display(row, column);
    case SortRole:
      return sortValue(row, column);
    case LayerRole:
      return l.index;
    case BlockRole:
      return l.block;
    case KindRole:
      return QString::fromLatin1(mnv2::to_string(l.kind));
    case Qt::TextAlignmentRole:
      if (column == Params || column == Macs || column == Median || column == Range || column == Share ||
          column == GFlops || column == Index)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case Qt::BackgroundRole:
      // Bands by block so the 17 bottlenecks read as groups.
      return l.block % 2 ? QBrush(QColor(238, 243, 250)) : QVariant();
    case Qt::ForegroundRole:
      if (m_report && column >= Median) {
        const LayerTiming t = layerTiming(*m_report, row);
        if (t.step && !t.first) return QBrush(QColor(130, 130, 130));
      }
      return {};
    case Qt::ToolTipRole:
      if (column == Name || column == Kind) return shownText(mnv2::describe(l));
      if (m_report && column >= Median) return layerTimingToolTip(*m_report, row);
      return {};
    default:
      return {};
  }
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Index:
        return QStringLiteral("#");
      case Block:
        return QStringLiteral("Block");
      case Kind:
        return QStringLiteral("Kind");
      case Name:
        return QStringLiteral("Name");
      case Output:
        return QStringLiteral("Output");
      case Params:
        return QStringLiteral("Params");
      case Macs:
        return QStringLiteral("MACs");
      case Median:
        return QStringLiteral("Median µs");
      case Range:
        return QStringLiteral("p10 – p90 µs");
      case Share:
        return QStringLiteral("Share %");
      case GFlops:
        return QStringLiteral("GFLOP/s");
      case Implementation:
        return QStringLiteral("Implementation");
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Output:
        return QStringLiteral("Output shape N×C×H×W for the run's batch and input size");
      case Macs:
        return QStringLiteral("Multiply-accumulates for the whole batch");
      case Median:
        return QStringLiteral("Median time of the layer's execution step over the timed iterations (per-layer phase)");
      case Share:
        return QStringLiteral("Share of the sum of all step medians");
      case GFlops:
        return QStringLiteral("2 × MACs / median time");
      default:
        return {};
    }
  }
  return {};
}

}  // namespace mnv2::ui
