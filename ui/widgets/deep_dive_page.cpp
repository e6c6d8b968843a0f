// The Deep dive page (deep_dive_page.h).
#include "widgets/deep_dive_page.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "lab_process.h"
#include "models/layer_selection.h"
#include "models/report_catalog.h"

namespace mnv2::ui {

DeepDivePage::DeepDivePage(ReportCatalog* catalog, LayerSelection* selection, QWidget* parent)
    : QWidget(parent), m_catalog(catalog), m_selection(selection) {
  setObjectName(QStringLiteral("deepDivePage"));
  m_job = new DeepDiveJob(this);
  m_model = new DeepDiveModel(this);
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("deepDiveMessage"));
  m_message->setWordWrap(true);
  m_message->setTextFormat(Qt::PlainText);
  m_progress = new QLabel(this);
  m_progress->setObjectName(QStringLiteral("deepDiveProgress"));
  m_progress->setTextFormat(Qt::PlainText);
  m_progress->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // a long ncu line is cut, not widening
  m_start = new QPushButton(QStringLiteral("&Deep dive into the selected layer"), this);
  m_start->setObjectName(QStringLiteral("deepDiveButton"));
  m_start->setToolTip(QStringLiteral(
      "Nsight Compute profiles the kernels of the step that runs the selected layer (clocks as the GPU sets them), "
      "in the shown runs (the Run comparison's two when it is in front)"));
  m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
  m_cancel->setObjectName(QStringLiteral("deepDiveCancel"));
  m_view = new QTableView(this);
  m_view->setObjectName(QStringLiteral("deepDiveTable"));
  m_view->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  m_view->setModel(m_model);
  m_view->setWordWrap(false);
  m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  m_view->setSelectionBehavior(QAbstractItemView::SelectItems);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_start);
  buttons->addWidget(m_cancel);
  buttons->addWidget(m_progress, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addWidget(m_message);
  layout->addWidget(m_view, 1);
  m_message->setText(QStringLiteral(
      "Select a layer (Timings, Topology, Run comparison) of a cuda or cudnn run, then Deep dive: Nsight Compute "
      "profiles that layer's step and this page shows why it takes the time it does."));

  connect(m_start, &QPushButton::clicked, this, [this] { diveInto(m_catalog->shownRows()); });
  connect(m_cancel, &QPushButton::clicked, this, &DeepDivePage::cancel);
  connect(m_job, &DeepDiveJob::progress, this, [this](int index, const QString& line) {
    m_progress->setText(line);
    auto columns = m_model->columns();
    if (index < static_cast<int>(columns.size()) && !columns[static_cast<size_t>(index)].result) {
      DeepDiveModel::Column c = columns[static_cast<size_t>(index)];
      c.status = QStringLiteral("running: ") + line;
      m_model->setColumn(index, c);
    }
  });
  connect(m_job, &DeepDiveJob::finished, this, [this](const DeepDiveJob::Outcome& o) {
    if (o.index >= static_cast<int>(m_model->columns().size())) return;
    DeepDiveModel::Column c = m_model->columns()[static_cast<size_t>(o.index)];
    c.result = o.result;
    c.status = o.cancelled ? QStringLiteral("cancelled") : o.error;
    m_model->setColumn(o.index, c);
  });
  connect(m_job, &DeepDiveJob::done, this, [this] {
    m_progress->clear();
    // Requests after a cancelled one never ran: say so rather than leave "waiting".
    auto columns = m_model->columns();
    for (size_t i = 0; i < columns.size(); ++i)
      if (!columns[i].result && columns[i].status.startsWith(QStringLiteral("waiting"))) {
        columns[i].status = QStringLiteral("cancelled");
        m_model->setColumn(static_cast<int>(i), columns[i]);
      }
    updateButtons();
    Q_EMIT diveFinished();
  });
  updateButtons();
}

bool DeepDivePage::diveInto(const std::vector<int>& rows, const QString& ncu) {
  if (m_job->isRunning()) {
    m_message->setText(QStringLiteral("A deep dive runs already: cancel it first."));
    return false;
  }
  const int layer = m_selection->currentLayer();
  if (layer < 0) {
    m_message->setText(QStringLiteral("No layer is selected: select one in Timings, Topology or Run comparison."));
    return false;
  }
  std::vector<DeepDiveJob::Request> requests;
  std::vector<DeepDiveModel::Column> columns;
  for (int row : rows) {
    if (row < 0 || row >= m_catalog->count() || requests.size() == 2) continue;
    DeepDiveJob::Request r;
    r.report = m_catalog->report(row);
    r.layer = layer;
    if (!r.report) continue;
    requests.push_back(r);
    DeepDiveModel::Column c;
    c.run = m_catalog->identity(row).name;
    c.status = QStringLiteral("waiting");
    columns.push_back(c);
  }
  if (requests.empty()) {
    m_message->setText(QStringLiteral("No run is shown: run cuda or cudnn, or check a run in the Runs panel."));
    return false;
  }
  QString why;
  const QString cli = findLabCli(&why);
  if (cli.isEmpty()) {
    m_message->setText(why);
    return false;
  }
  const auto& topology = requests.front().report->topology;
  const QString name = layer < static_cast<int>(topology.size())
                           ? QString::fromStdString(topology[static_cast<size_t>(layer)].name)
                           : QString::number(layer);
  m_message->setText(QStringLiteral("Layer %1 (%2): Nsight Compute profiles its step in %3 run%4; ncu starts %5")
                         .arg(layer)
                         .arg(name)
                         .arg(requests.size())
                         .arg(requests.size() == 1 ? QString() : QStringLiteral("s, one after the other"))
                         .arg(cli));
  m_model->setColumns(std::move(columns));
  m_job->start(std::move(requests), cli, ncu);
  updateButtons();
  return true;
}

void DeepDivePage::cancel() { m_job->cancel(); }

QString DeepDivePage::message() const { return m_message->text(); }
QString DeepDivePage::progress() const { return m_progress->text(); }

void DeepDivePage::updateButtons() {
  m_start->setEnabled(!m_job->isRunning());
  m_cancel->setEnabled(m_job->isRunning());
}

}  // namespace mnv2::ui
