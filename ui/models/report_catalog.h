// Every run the app knows: the current run (one report, or one per backend after a compare) and the runs
// of opened report files. Combo boxes pick the two runs to compare and the diffs to show from it.
#pragma once

#include <QAbstractListModel>
#include <vector>

#include "models/report_access.h"

namespace mnv2::ui {

class ReportCatalog : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Role { OriginRole = Qt::UserRole, IsCurrentRole, HasDiffRole };

  struct Entry {
    ReportPtr report;
    QString origin;  // empty: the current run; else the report file's path
    QString label;
  };

  explicit ReportCatalog(QObject* parent = nullptr);

  // Replaces the current run's entries.
  void setCurrentRun(const std::vector<ReportPtr>& reports);
  // Adds (or replaces) the runs of a report file; returns the row of its first run.
  int addFile(const QString& path, const std::vector<ReportPtr>& reports);

  const Entry& entry(int row) const { return m_entries.at(static_cast<size_t>(row)); }
  ReportPtr report(int row) const;
  int firstCurrentRow() const;  // -1 when there is no current run
  int count() const { return static_cast<int>(m_entries.size()); }

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  static QString makeLabel(const mnv2::RunReport& r, const QString& origin);
  std::vector<Entry> m_entries;
};

}  // namespace mnv2::ui
