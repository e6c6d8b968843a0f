// The topology tab: a header with what the model's file declares, the layer table (filterable by block,
// kind and name) and a summary line.
#pragma once

#include <QList>
#include <QPair>
#include <QStringList>
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
  QLineEdit* nameFilter() const { return m_name; }
  void focusNameFilter();  // Find (Ctrl+F): the name filter, its text selected
  LayerFilterProxy* proxy() const { return m_proxy; }
  QComboBox* blockCombo() const { return m_block; }
  QComboBox* kindCombo() const { return m_kind; }
  void setSummary(const QString& html);
  // The model's name and file facts (label/value rows, as `mnv2 info` prints them) with its warnings; no
  // rows and no warnings hide the header.
  void setModelHeader(const QString& name, const QList<QPair<QString, QString>>& facts, const QStringList& warnings);
  QLabel* modelHeader() const { return m_header; }

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
  QLabel* m_header;
};

}  // namespace mnv2::ui
