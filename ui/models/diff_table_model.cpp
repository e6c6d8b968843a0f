// The output-diff table model (see diff_table_model.h).
#include "models/diff_table_model.h"

#include "models/report_access.h"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace mnv2::ui {

DiffTableModel::DiffTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiffTableModel::setDiff(DiffPtr diff, std::vector<mnv2::Layer> topology) {
  beginResetModel();
  m_diff = std::move(diff);
  m_topology = std::move(topology);
  endResetModel();
}

int DiffTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_diff ? 0 : static_cast<int>(m_diff->layers.size());
}

int DiffTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DiffTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const mnv2::LayerDiff& d = m_diff->layers[static_cast<size_t>(index.row())];
  const mnv2::Layer* layer = d.layer >= 0 && d.layer < static_cast<int>(m_topology.size())
                                 ? &m_topology[static_cast<size_t>(d.layer)]
                                 : nullptr;
  const bool firstDivergent = d.layer == m_diff->first_divergent_layer;
  const bool over = d.compared && (!d.error.finite || d.error.rel_l2 > m_diff->threshold);
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Index:
          return d.layer;
        case Name:
          return layer ? shownText(layer->name) : QString();
        case Kind:
          return layer ? QString::fromLatin1(mnv2::to_string(layer->kind)) : QString();
        case MaxAbs:
          return d.compared ? QString::number(d.error.max_abs, 'e', 3) : QString();
        case RelL2:
          return d.compared ? QString::number(d.error.rel_l2, 'e', 3) : QString();
        case Cosine:
          return d.compared ? cosineText(d.error.cosine) : QString();
        case Status:
          if (!d.compared) return QStringLiteral("not compared (fused away)");
          if (!d.error.finite) return QStringLiteral("NaN/Inf in output");
          if (firstDivergent) return QStringLiteral("first divergent layer");
          return over ? QStringLiteral("over threshold") : QString();
        default:
          return {};
      }
    case SortRole:
      switch (column) {
        case MaxAbs:
          return d.compared ? d.error.max_abs : -1.0;
        case RelL2:
          return d.compared ? d.error.rel_l2 : -1.0;
        case Cosine:
          return d.compared ? d.error.cosine : 2.0;
        case Index:
          return d.layer;
        default:
          return data(index, Qt::DisplayRole);
      }
    case LayerRole:
      return d.layer;
    case FirstDivergentRole:
      return firstDivergent;
    case Qt::BackgroundRole:
      if (firstDivergent) return QBrush(QColor(255, 205, 200));
      return {};
    case Qt::ForegroundRole:
      if (!d.compared) return QBrush(QColor(140, 140, 140));
      if (over) return QBrush(QColor(170, 20, 20));
      return {};
    case Qt::FontRole:
      if (firstDivergent) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::TextAlignmentRole:
      if (column == Index || column == MaxAbs || column == RelL2 || column == Cosine)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default:
      return {};
  }
}

QVariant DiffTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::DisplayRole) {
    static const char* const names[] = {"#", "Name", "Kind", "Max abs", "Rel L2", "Cosine", "Status"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case MaxAbs:
        return QStringLiteral("Largest absolute difference of the layer's output, first image of the batch");
      case RelL2:
        return QStringLiteral("||output − reference|| / ||reference||");
      case Cosine:
        return QStringLiteral("cosine similarity of output and reference");
      default:
        return {};
    }
  }
  return {};
}

}  // namespace mnv2::ui
