// Per-kind / per-block totals model (see totals_model.h).
#include "models/totals_model.h"

#include "models/report_access.h"
#include "models/run_differences.h"

#include <QColor>

namespace mnv2::ui {

TotalsModel::TotalsModel(QObject* parent) : QAbstractTableModel(parent) {}

void TotalsModel::setReports(std::vector<ReportPtr> reports, QStringList names) {
  beginResetModel();
  m_reports = std::move(reports);
  // Without the run history's names, each run's label and what differs, so that two cpu runs read apart.
  if (names.size() != static_cast<qsizetype>(m_reports.size())) names = distinctRunNames(m_reports);
  m_names = std::move(names);
  rebuild();
  endResetModel();
}

void TotalsModel::setGrouping(Grouping grouping) {
  if (grouping == m_grouping) return;
  beginResetModel();
  m_grouping = grouping;
  rebuild();
  endResetModel();
}

void TotalsModel::rebuild() {
  m_groups.clear();
  for (const auto& r : m_reports) {
    for (const auto& g : m_grouping == Grouping::Kind ? r->per_kind : r->per_block) {
      const QString name = shownText(g.name);
      if (!m_groups.contains(name)) m_groups.push_back(name);
    }
  }
}

const mnv2::GroupTotal* TotalsModel::find(int report, int group) const {
  if (report < 0 || report >= static_cast<int>(m_reports.size()) || group < 0 || group >= m_groups.size())
    return nullptr;
  const std::string name = m_groups[group].toStdString();
  const auto& list = m_grouping == Grouping::Kind ? m_reports[static_cast<size_t>(report)]->per_kind
                                                  : m_reports[static_cast<size_t>(report)]->per_block;
  for (const auto& g : list)
    if (g.name == name) return &g;
  return nullptr;
}

double TotalsModel::medianMs(int report, int group) const {
  const mnv2::GroupTotal* g = find(report, group);
  return g ? g->median_ns / 1e6 : 0.0;
}

double TotalsModel::share(int report, int group) const {
  const mnv2::GroupTotal* g = find(report, group);
  return g ? g->share : 0.0;
}

int TotalsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_groups.size(); }

int TotalsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : 1 + 2 * static_cast<int>(m_reports.size());
}

QVariant TotalsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const int row = index.row();
  const int column = index.column();
  if (column == 0) {
    if (role == Qt::DisplayRole) return m_groups[row];
    if (role == SortRole) return m_grouping == Grouping::Block ? QVariant(row) : QVariant(m_groups[row]);
    return {};
  }
  const int report = (column - 1) / 2;
  const bool isShare = (column - 1) % 2 == 1;
  const double value = isShare ? share(report, row) * 100 : medianMs(report, row);
  const mnv2::GroupTotal* g = find(report, row);
  // A group with no step of its own is not zero-cost: its layers ran inside other groups' steps (fused),
  // or the report does not have it at all.
  const bool fusedAway = g && g->steps == 0 && g->fused_layers > 0;
  switch (role) {
    case Qt::DisplayRole:
      if (!g) return QStringLiteral("—");
      if (fusedAway) return isShare ? QString() : QStringLiteral("fused");
      return QString::number(value, 'f', isShare ? 1 : 3);
    case Qt::ToolTipRole:
      if (!g) return QStringLiteral("not in this report");
      if (g->fused_layers > 0)
        return QStringLiteral(
                   "%1 of the %2 layers run fused inside steps counted under another %3; their time is "
                   "there")
            .arg(g->fused_layers)
            .arg(g->layers)
            .arg(m_grouping == Grouping::Kind ? QStringLiteral("kind") : QStringLiteral("block"));
      return {};
    case Qt::ForegroundRole:
      if (!g || fusedAway) return QColor(Qt::gray);
      return {};
    case SortRole:
      return value;
    case Qt::TextAlignmentRole:
      return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default:
      return {};
  }
}

QVariant TotalsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  if (role == Qt::DisplayRole) {
    if (section == 0) return m_grouping == Grouping::Kind ? QStringLiteral("Kind") : QStringLiteral("Block");
    return QStringLiteral("%1 %2").arg(m_names.at((section - 1) / 2),
                                       (section - 1) % 2 ? QStringLiteral("%") : QStringLiteral("ms"));
  }
  if (role == Qt::ToolTipRole && section > 0) {
    return QStringLiteral(
        "Sum of the medians of the steps whose first layer is in the group (a fused step counts once)");
  }
  return {};
}

}  // namespace mnv2::ui
