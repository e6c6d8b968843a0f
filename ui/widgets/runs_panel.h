// The Runs panel: the run history as a table (name, backend, precision, batch, size, end-to-end time, when,
// note, source). Checked runs are shown on the pages; two chosen runs go to the Run comparison; one run can be
// pinned as the baseline that every new run is shown beside; runs can be removed; the whole session is saved
// as one report file.
#pragma once

#include <QWidget>
#include <vector>

class QPushButton;
class QTableView;

namespace mnv2::ui {

class ReportCatalog;

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunsPanel(ReportCatalog* catalog, QWidget* parent = nullptr);

  QTableView* view() const { return m_view; }
  // The rows the buttons act on: the selected rows, else the checked ones.
  std::vector<int> chosenRows() const;
  // The two runs Compare would take (A, B): the baseline first when it is one of them, else the older first;
  // {-1, -1} unless exactly two runs are chosen.
  std::pair<int, int> comparePair() const;

 Q_SIGNALS:
  void compareRequested(int rowA, int rowB);
  void saveRequested();

 private:
  void updateButtons();
  void fitColumns();

  ReportCatalog* m_catalog;
  QTableView* m_view;
  QPushButton* m_compare;
  QPushButton* m_baseline;
  QPushButton* m_remove;
  QPushButton* m_save;
};

}  // namespace mnv2::ui
