// The catalog of known runs (see report_catalog.h).
#include "models/report_catalog.h"

#include "models/report_access.h"

#include <QFileInfo>

namespace mnv2::ui {

ReportCatalog::ReportCatalog(QObject* parent) : QAbstractListModel(parent) {}

QString ReportCatalog::makeLabel(const mnv2::RunReport& r, const QString& origin) {
  const QString where = origin.isEmpty() ? QStringLiteral("current run") : QFileInfo(origin).fileName();
  return QStringLiteral("%1 (%2) — %3 — b%4, %5 iters — %6")
      .arg(runLabel(r), shownText(r.device), shownText(r.timer))
      .arg(r.config.batch)
      .arg(r.config.iters)
      .arg(where);
}

void ReportCatalog::setCurrentRun(const std::vector<ReportPtr>& reports) {
  beginResetModel();
  std::vector<Entry> kept;
  for (const ReportPtr& r : reports) kept.push_back({r, QString(), makeLabel(*r, QString())});
  for (Entry& e : m_entries)
    if (!e.origin.isEmpty()) kept.push_back(std::move(e));
  m_entries = std::move(kept);
  endResetModel();
}

int ReportCatalog::addFile(const QString& path, const std::vector<ReportPtr>& reports) {
  beginResetModel();
  std::vector<Entry> kept;
  for (Entry& e : m_entries)
    if (e.origin != path) kept.push_back(std::move(e));
  const int first = static_cast<int>(kept.size());
  for (const ReportPtr& r : reports) kept.push_back({r, path, makeLabel(*r, path)});
  m_entries = std::move(kept);
  endResetModel();
  return first;
}

ReportPtr ReportCatalog::report(int row) const {
  return row >= 0 && row < count() ? m_entries[static_cast<size_t>(row)].report : nullptr;
}

int ReportCatalog::firstCurrentRow() const {
  for (int i = 0; i < count(); ++i)
    if (m_entries[static_cast<size_t>(i)].origin.isEmpty()) return i;
  return -1;
}

int ReportCatalog::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : count(); }

QVariant ReportCatalog::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= count() || index.column() != 0) return {};
  const Entry& e = m_entries[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      return e.label;
    case Qt::ToolTipRole:
      return QStringLiteral("%1\nmodel %2\ninput %3\n%4 (commit %5)")
          .arg(reportSummary(*e.report), shownText(e.report->model_source), shownText(e.report->config.input_name),
               shownText(e.report->date), shownText(e.report->commit));
    case OriginRole:
      return e.origin;
    case IsCurrentRole:
      return e.origin.isEmpty();
    case HasDiffRole:
      return e.report->diff.has_value();
    default:
      return {};
  }
}

}  // namespace mnv2::ui
