// The run comparison tab (see comparison_page.h).
#include "widgets/comparison_page.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "models/layer_selection.h"
#include "models/report_access.h"
#include "models/report_catalog.h"
#include "models/run_comparison_model.h"
#include "models/run_differences.h"

namespace mnv2::ui {

ComparisonPage::ComparisonPage(ReportCatalog* catalog, LayerSelection* selection, QWidget* parent)
    : QWidget(parent), m_catalog(catalog), m_selection(selection) {
  m_a = new QComboBox(this);
  m_a->setObjectName(QStringLiteral("runA"));
  m_b = new QComboBox(this);
  m_b->setObjectName(QStringLiteral("runB"));
  for (QComboBox* c : {m_a, m_b}) {
    c->setModel(catalog);
    c->setModelColumn(ReportCatalog::Label);
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(40);
  }
  auto* swap = new QPushButton(QStringLiteral("Swap"), this);
  m_summary = new QLabel(QStringLiteral("Run something, or open a report, to compare two runs."), this);
  m_summary->setObjectName(QStringLiteral("comparisonSummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* rule = new QLabel(this);
  rule->setText(
      QStringLiteral("<span style='color:#777'>Grey rows: within noise — the p10–p90 ranges of the two runs "
                     "overlap. Green Δ: B faster, red Δ: B slower (outside noise). Rows where either run "
                     "fused layers into one step compare sums over the whole segment.</span>"));
  rule->setWordWrap(true);
  rule->setToolTip(
      QStringLiteral("Noise rule: a layer's difference counts only when the p10..p90 ranges of its "
                     "timings in the two runs do not overlap."));

  m_model = new RunComparisonModel(this);
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(RunComparisonModel::SortRole);
  m_view = new QTableView(this);
  m_view->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  m_view->setObjectName(QStringLiteral("comparisonTable"));
  m_view->setModel(m_proxy);
  m_view->setSortingEnabled(true);
  m_view->sortByColumn(RunComparisonModel::Index, Qt::AscendingOrder);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  m_view->verticalHeader()->hide();
  m_view->verticalHeader()->setDefaultSectionSize(20);
  m_view->horizontalHeader()->setStretchLastSection(true);

  auto* pick = new QGridLayout;
  pick->addWidget(new QLabel(QStringLiteral("Run A"), this), 0, 0);
  pick->addWidget(m_a, 0, 1);
  pick->addWidget(new QLabel(QStringLiteral("Run B"), this), 1, 0);
  pick->addWidget(m_b, 1, 1);
  pick->addWidget(swap, 0, 2, 2, 1);
  pick->setColumnStretch(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(pick);
  layout->addWidget(m_summary);
  layout->addWidget(rule);
  layout->addWidget(m_view, 1);

  connect(m_a, &QComboBox::currentIndexChanged, this, [this] { update(); });
  connect(m_b, &QComboBox::currentIndexChanged, this, [this] { update(); });
  connect(swap, &QPushButton::clicked, this, [this] { selectRuns(runB(), runA()); });
  connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (current.isValid()) m_selection->setCurrentLayer(current.data(RunComparisonModel::LayerRole).toInt());
  });
}

int ComparisonPage::runA() const { return m_a->currentIndex(); }
int ComparisonPage::runB() const { return m_b->currentIndex(); }

void ComparisonPage::selectRuns(int rowA, int rowB) {
  {
    QSignalBlocker ba(m_a), bb(m_b);
    m_a->setCurrentIndex(rowA);
    m_b->setCurrentIndex(rowB);
  }
  update();
}

QString ComparisonPage::summaryText() const { return m_summary->text(); }

void ComparisonPage::update() {
  const ReportPtr a = m_catalog->report(runA());
  const ReportPtr b = m_catalog->report(runB());
  if (!a || !b) {
    m_model->setRuns(nullptr, nullptr);
    m_summary->setText(QStringLiteral("Run something, or open a report, to compare two runs."));
    return;
  }
  // Each run under its name on the pages (the run history's identity).
  const QString nameA = m_catalog->identity(runA()).name, nameB = m_catalog->identity(runB()).name;
  // Every setting that differs is stated; runs of different networks are not paired layer by layer.
  const mnv2::RunComparability settings = mnv2::compare_settings(*a, *b);
  if (settings.refused()) {
    m_model->setRuns(nullptr, nullptr);
    m_summary->setText(QStringLiteral("A is <b>%1</b>, B is <b>%2</b>: <b>not compared</b> — %3.<br>%4")
                           .arg(nameA.toHtmlEscaped(), nameB.toHtmlEscaped(),
                                QString::fromStdString(settings.refusal()).toHtmlEscaped(), differencesHtml(settings)));
    return;
  }
  m_model->setRuns(a, b, nameA, nameB);
  m_view->resizeColumnsToContents();
  const double ta = m_model->totalA() / 1e6, tb = m_model->totalB() / 1e6;
  QString text = QStringLiteral("A is <b>%1</b>, B is <b>%2</b>. Sum of layer medians: A %3 ms, B %4 ms")
                     .arg(nameA.toHtmlEscaped(), nameB.toHtmlEscaped())
                     .arg(ta, 0, 'f', 3)
                     .arg(tb, 0, 'f', 3);
  const QString ratio = ratioText(ta, tb, settings.images_ratio);
  if (!ratio.isEmpty()) text += QStringLiteral(" — ") + ratio;
  text += QStringLiteral(". End to end (host median): A %1 ms, B %2 ms. %3 of %4 rows differ beyond the noise.")
              .arg(a->end_to_end.host_ms.median, 0, 'f', 3)
              .arg(b->end_to_end.host_ms.median, 0, 'f', 3)
              .arg(m_model->rowsOutsideNoise())
              .arg(m_model->rowCount());
  if (runA() == runB()) text += QStringLiteral(" (A and B are the same run.)");
  if (!m_model->alignmentNote().isEmpty()) text += QStringLiteral("<br><b>Note:</b> ") + m_model->alignmentNote();
  const QString differences = differencesHtml(settings);
  text += differences.isEmpty() ? QStringLiteral("<br>The two runs were taken with the same settings.")
                                : QStringLiteral("<br>") + differences;
  m_summary->setText(text);
}

}  // namespace mnv2::ui
