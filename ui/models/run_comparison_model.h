// Two runs side by side, layer by layer: both medians, their p10–p90 ranges, the difference and the
// speed-up. Rows are aligned segments (a layer, or the union of layers either run fused into one step).
// Differences inside the measured noise (overlapping p10–p90 ranges) are greyed.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "models/report_access.h"

namespace mnv2::ui {

class RunComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Name, Kind, MedianA, RangeA, MedianB, RangeB, Delta, SpeedUp, ColumnCount };
  enum Role {
    SortRole = Qt::UserRole,  // numbers as numbers
    LayerRole,                // first layer of the segment
    WithinNoiseRole,          // bool: the p10–p90 ranges overlap
  };

  explicit RunComparisonModel(QObject* parent = nullptr);

  // Either may be null (empty table). `nameA`, `nameB`: the runs' names on the pages (RunIdentity); empty: their
  // labels.
  void setRuns(ReportPtr a, ReportPtr b, QString nameA = {}, QString nameB = {});
  ReportPtr runA() const { return m_a; }
  ReportPtr runB() const { return m_b; }
  // Totals over the aligned segments (ns): sum of medians of A and of B.
  double totalA() const { return m_totalA; }
  double totalB() const { return m_totalB; }
  int rowsOutsideNoise() const;
  QString alignmentNote() const { return m_note; }  // non-empty when the two topologies differ

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QString segmentName(const AlignedSegment& s) const;

  ReportPtr m_a, m_b;
  QString m_nameA, m_nameB;
  std::vector<AlignedSegment> m_rows;
  double m_totalA = 0, m_totalB = 0;
  QString m_note;
};

}  // namespace mnv2::ui
