// The topology tab: the layer table, filterable by block, kind and name, with a summary line.
#pragma once

#include <QWidget>

#include "models/report_access.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;

namespace mnv2::ui {

class LayerFilterProxy;
class LayerSelection;
class LayerTableModel;

class TopologyPage : public QWidget {
  Q_OBJECT
 public:
  TopologyPage(LayerTableModel* model, LayerSelection* selection, QWidget* parent = nullptr);

  QTableView* view() const { return m_view; }
  LayerFilterProxy* proxy() const { return m_proxy; }
  QComboBox* blockCombo() const { return m_block; }
  QComboBox* kindCombo() const { return m_kind; }
  void setSummary(const QString& html);

 private:
  void refillFilters();
  void showLayer(int layer);

  LayerTableModel* m_model;
  LayerSelection* m_selection;
  LayerFilterProxy* m_proxy;
  QTableView* m_view;
  QComboBox* m_block;
  QComboBox* m_kind;
  QLineEdit* m_name;
  QLabel* m_summary;
};

}  // namespace mnv2::ui
