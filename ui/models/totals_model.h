// Time per layer kind or per block (the engine's GroupTotal figures), one column pair per run.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <vector>

#include "models/report_access.h"

namespace mnv2::ui {

class TotalsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum class Grouping { Kind, Block };
  enum Role { SortRole = Qt::UserRole };

  explicit TotalsModel(QObject* parent = nullptr);

  // `names`: each run's name (RunIdentity::name), one per report; without them, the runs' labels.
  void setReports(std::vector<ReportPtr> reports, QStringList names = {});
  void setGrouping(Grouping grouping);
  Grouping grouping() const { return m_grouping; }

  const QStringList& groups() const { return m_groups; }
  const std::vector<ReportPtr>& reports() const { return m_reports; }
  // Median ms of a group in a report (0 when the report has no such group), and its share 0..1.
  double medianMs(int report, int group) const;
  double share(int report, int group) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  void rebuild();
  const mnv2::GroupTotal* find(int report, int group) const;

  std::vector<ReportPtr> m_reports;
  QStringList m_names;  // one per report
  Grouping m_grouping = Grouping::Kind;
  QStringList m_groups;
};

}  // namespace mnv2::ui
