// Deep dives side by side: one column per run (a comparison's two runs, or one), one row per figure a performance
// engineer reads first — the layer's measured time and roofline point from the run, then Nsight Compute's speed of
// light, occupancy and its limiter, top warp stalls, L1/L2/DRAM bytes and both tensor pipes over the step's kernels.
// Only what the engine's deep-dive study produced is shown; a column whose dive failed shows the one-line reason.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <optional>
#include <vector>

#include "mnv2/deep_dive.h"

namespace mnv2::ui {

class DeepDiveModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Row {
    Status,
    Step,
    Layers,
    Measured,
    Roofline,
    NcuDuration,
    Kernels,
    SmThroughput,
    MemoryThroughput,
    DramThroughput,
    AchievedOccupancy,
    TheoreticalOccupancy,
    OccupancyLimiter,
    Stall1,
    Stall2,
    Stall3,
    L1Bytes,
    L2Bytes,
    DramBytes,
    HmmaPipe,
    GmmaPipe,
    Advice,
    NcuVersion,
    RowCount
  };
  // One run's dive: its name on the pages, and its result or why there is none (or that it is still running).
  struct Column {
    QString run;
    std::optional<mnv2::DeepDiveResult> result;
    QString status;  // "running: ...", the failure's line, "cancelled"; empty when `result` is there
  };

  explicit DeepDiveModel(QObject* parent = nullptr);

  void setColumns(std::vector<Column> columns);
  void setColumn(int column, Column value);
  const std::vector<Column>& columns() const { return m_columns; }

  static QString rowName(Row row);
  static QString rowTip(Row row);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QString text(const Column& column, Row row) const;
  std::vector<Column> m_columns;
};

}  // namespace mnv2::ui
