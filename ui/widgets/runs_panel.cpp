// The Runs panel (see runs_panel.h).
#include "widgets/runs_panel.h"

#include <QAction>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QPushButton>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "models/report_catalog.h"

namespace mnv2::ui {

RunsPanel::RunsPanel(ReportCatalog* catalog, QWidget* parent) : QWidget(parent), m_catalog(catalog) {
  setObjectName(QStringLiteral("runsPanel"));
  m_view = new QTableView(this);
  m_view->setObjectName(QStringLiteral("runsTable"));
  m_view->setModel(catalog);
  m_view->setColumnHidden(ReportCatalog::Label, true);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  m_view->setTabKeyNavigation(false);  // Tab leaves the table; arrows move inside it
  m_view->verticalHeader()->hide();
  m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
  m_view->setWordWrap(false);
  // Three rows at least, under the header and above a horizontal scroll bar (issue 35: about one and a half rows
  // at 720p); the dock can be made taller (the pages above leave it room).
  m_view->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  m_view->setMinimumHeight(m_view->horizontalHeader()->sizeHint().height() +
                           3 * m_view->verticalHeader()->defaultSectionSize() +
                           m_view->horizontalScrollBar()->sizeHint().height() + 2 * m_view->frameWidth());
  QHeaderView* header = m_view->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::Interactive);
  header->setStretchLastSection(false);
  header->setMinimumSectionSize(40);

  m_compare = new QPushButton(QStringLiteral("&Compare two"), this);
  m_compare->setObjectName(QStringLiteral("runsCompare"));
  m_compare->setToolTip(
      QStringLiteral("Open the two chosen runs (selected, else checked) in the Run comparison; "
                     "every setting in which they differ is stated there"));
  m_baseline = new QPushButton(QStringLiteral("&Pin as baseline"), this);
  m_baseline->setObjectName(QStringLiteral("runsBaseline"));
  m_baseline->setToolTip(QStringLiteral("Every new run is shown, and compared, beside the baseline"));
  m_remove = new QPushButton(QStringLiteral("Remo&ve"), this);
  m_remove->setObjectName(QStringLiteral("runsRemove"));
  m_save = new QPushButton(QStringLiteral("&Save session…"), this);
  m_save->setObjectName(QStringLiteral("runsSave"));
  m_save->setToolTip(
      QStringLiteral("All runs with their names, notes and the baseline, as one report file; "
                     "File > Open report reopens it"));

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_compare);
  buttons->addWidget(m_baseline);
  buttons->addWidget(m_remove);
  buttons->addStretch(1);
  buttons->addWidget(m_save);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(2);
  layout->addWidget(m_view, 1);
  layout->addLayout(buttons);

  connect(m_compare, &QPushButton::clicked, this, [this] {
    const auto [a, b] = comparePair();
    if (a >= 0) Q_EMIT compareRequested(a, b);
  });
  connect(m_baseline, &QPushButton::clicked, this, [this] {
    const std::vector<int> rows = chosenRows();
    if (rows.size() != 1) return;
    m_catalog->setBaseline(m_catalog->baselineRow() == rows.front() ? -1 : rows.front());
  });
  connect(m_remove, &QPushButton::clicked, this, [this] {
    const QModelIndexList selected = m_view->selectionModel()->selectedRows();
    std::vector<int> rows;
    for (const QModelIndex& i : selected) rows.push_back(i.row());
    m_catalog->remove(rows);
  });
  connect(m_save, &QPushButton::clicked, this, &RunsPanel::saveRequested);
  // Keyboard: Space checks a run (the delegate's own), Delete removes the selected ones.
  auto* removeKey = new QAction(this);
  removeKey->setShortcut(QKeySequence::Delete);
  removeKey->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(removeKey, &QAction::triggered, m_remove, &QPushButton::click);
  m_view->addAction(removeKey);
  connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] { updateButtons(); });
  for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved})
    connect(catalog, signal, this, [this] {
      updateButtons();
      fitColumns();
      m_view->scrollToBottom();
    });
  connect(catalog, &QAbstractItemModel::dataChanged, this, [this] {
    updateButtons();
    fitColumns();
  });
  connect(catalog, &ReportCatalog::baselineChanged, this, [this] { updateButtons(); });
  updateButtons();
}

std::vector<int> RunsPanel::chosenRows() const {
  std::vector<int> rows;
  for (const QModelIndex& i : m_view->selectionModel()->selectedRows()) rows.push_back(i.row());
  if (rows.empty()) rows = m_catalog->shownRows();
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::pair<int, int> RunsPanel::comparePair() const {
  std::vector<int> rows = chosenRows();
  if (rows.size() != 2) return {-1, -1};
  if (rows[1] == m_catalog->baselineRow()) std::swap(rows[0], rows[1]);
  return {rows[0], rows[1]};
}

void RunsPanel::fitColumns() {
  // Every column fits its contents (a name or note of a few hundred characters at most: the note column is
  // capped so the columns after it stay in view; its full text is in the cell's editor). What differs, capped the
  // same way, is whole in its tool-tip.
  m_view->resizeColumnsToContents();
  const int noteMax = std::max(160, m_view->viewport()->width() / 3);
  if (m_view->columnWidth(ReportCatalog::Differs) > noteMax) m_view->setColumnWidth(ReportCatalog::Differs, noteMax);
  if (m_view->columnWidth(ReportCatalog::Note) > noteMax) m_view->setColumnWidth(ReportCatalog::Note, noteMax);
  m_view->setColumnWidth(ReportCatalog::Note, std::max(m_view->columnWidth(ReportCatalog::Note), 160));
}

void RunsPanel::updateButtons() {
  const std::vector<int> selected = [this] {
    std::vector<int> r;
    for (const QModelIndex& i : m_view->selectionModel()->selectedRows()) r.push_back(i.row());
    return r;
  }();
  m_compare->setEnabled(comparePair().first >= 0);
  const std::vector<int> chosen = chosenRows();
  m_baseline->setEnabled(chosen.size() == 1);
  m_baseline->setText(chosen.size() == 1 && chosen.front() == m_catalog->baselineRow()
                          ? QStringLiteral("Un&pin baseline")
                          : QStringLiteral("&Pin as baseline"));
  m_remove->setEnabled(!selected.empty());
  m_save->setEnabled(m_catalog->count() > 0);
}

}  // namespace mnv2::ui
