// The 99-layer topology as a table: index, block, kind, name, output shape, params, MACs and, once a run
// report is set, the layer's median time, p10–p90, share, GFLOP/s and implementation.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "mnv2/model.h"
#include "models/report_access.h"

namespace mnv2::ui {

class LayerTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Index,
    Block,
    Kind,
    Name,
    Output,
    Params,
    Macs,
    Median,
    Range,
    Share,
    GFlops,
    Implementation,
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole,  // numbers as numbers (fused layers without their own time sort last)
    LayerRole,                // int: topology index
    BlockRole,                // int: 0 stem, 1..17 bottlenecks, 18 head
    KindRole,                 // QString: "Conv2d", "ReLU6", ...
  };

  explicit LayerTableModel(QObject* parent = nullptr);

  // The model's own topology (batch 1 at its declared size), shown before any run.
  void setTopology(std::vector<mnv2::Layer> layers, std::vector<mnv2::LayerStats> stats);
  // A run: its topology and figures (for its batch and input size) replace the above; null clears timings.
  void setReport(ReportPtr report);
  ReportPtr report() const { return m_report; }

  const std::vector<mnv2::Layer>& layers() const { return m_layers; }
  int rowOfLayer(int layer) const { return layer >= 0 && layer < rowCount() ? layer : -1; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant display(int row, int column) const;
  QVariant sortValue(int row, int column) const;

  std::vector<mnv2::Layer> m_layers;
  std::vector<mnv2::LayerStats> m_stats;
  ReportPtr m_report;
};

}  // namespace mnv2::ui
