// Block / kind / name filter over LayerTableModel (see layer_filter_proxy.h).
#include "models/layer_filter_proxy.h"

#include "models/layer_table_model.h"

namespace mnv2::ui {

LayerFilterProxy::LayerFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(LayerTableModel::SortRole);
}

void LayerFilterProxy::setBlockFilter(int block) {
  if (block == m_block) return;
  m_block = block;
  invalidateRowsFilter();
}

void LayerFilterProxy::setKindFilter(const QString& kind) {
  if (kind == m_kind) return;
  m_kind = kind;
  invalidateRowsFilter();
}

void LayerFilterProxy::setNameFilter(const QString& fragment) {
  if (fragment == m_name) return;
  m_name = fragment;
  invalidateRowsFilter();
}

bool LayerFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  const QModelIndex index = sourceModel()->index(sourceRow, LayerTableModel::Name, sourceParent);
  if (m_block >= 0 && index.data(LayerTableModel::BlockRole).toInt() != m_block) return false;
  if (!m_kind.isEmpty() && index.data(LayerTableModel::KindRole).toString() != m_kind) return false;
  if (!m_name.isEmpty() && !index.data(Qt::DisplayRole).toString().contains(m_name, Qt::CaseInsensitive)) return false;
  return true;
}

}  // namespace mnv2::ui
