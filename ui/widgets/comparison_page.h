// The run comparison tab: two runs (two backends, or the current run against an opened report) aligned
// layer by layer, sortable by the difference; differences inside the measured noise are greyed.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace mnv2::ui {

class LayerSelection;
class ReportCatalog;
class RunComparisonModel;

class ComparisonPage : public QWidget {
  Q_OBJECT
 public:
  ComparisonPage(ReportCatalog* catalog, LayerSelection* selection, QWidget* parent = nullptr);

  void selectRuns(int rowA, int rowB);  // rows of the catalog
  int runA() const;
  int runB() const;
  RunComparisonModel* model() const { return m_model; }
  QTableView* view() const { return m_view; }
  QSortFilterProxyModel* proxy() const { return m_proxy; }
  QString summaryText() const;

 private:
  void update();

  ReportCatalog* m_catalog;
  LayerSelection* m_selection;
  QComboBox* m_a;
  QComboBox* m_b;
  QLabel* m_summary;
  RunComparisonModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_view;
};

}  // namespace mnv2::ui
