// Filters the topology table by block, by layer kind and by a name fragment; sorts numbers as numbers.
#pragma once

#include <QSortFilterProxyModel>

namespace mnv2::ui {

class LayerFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit LayerFilterProxy(QObject* parent = nullptr);

  void setBlockFilter(int block);               // -1: every block
  void setKindFilter(const QString& kind);      // empty: every kind
  void setNameFilter(const QString& fragment);  // case-insensitive substring of the name; empty: all
  int blockFilter() const { return m_block; }
  QString kindFilter() const { return m_kind; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  int m_block = -1;
  QString m_kind;
  QString m_name;
};

}  // namespace mnv2::ui
