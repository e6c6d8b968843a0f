// Per-layer output error of one backend against a reference (a DiffReport): max abs, rel L2 and cosine,
// with the first layer over the threshold highlighted.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "mnv2/model.h"
#include "models/report_access.h"

namespace mnv2::ui {

class DiffTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Name, Kind, MaxAbs, RelL2, Cosine, Status, ColumnCount };
  enum Role {
    SortRole = Qt::UserRole,  // numbers as numbers; uncompared layers sort first
    LayerRole,
    FirstDivergentRole,  // bool
  };

  explicit DiffTableModel(QObject* parent = nullptr);

  // `topology` names the layers (the diff itself carries only indices); null diff clears.
  void setDiff(DiffPtr diff, std::vector<mnv2::Layer> topology);
  DiffPtr diff() const { return m_diff; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  DiffPtr m_diff;
  std::vector<mnv2::Layer> m_topology;
};

}  // namespace mnv2::ui
