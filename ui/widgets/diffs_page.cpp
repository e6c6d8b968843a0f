// The diffs tab (see diffs_page.h).
#include "widgets/diffs_page.h"

#include "models/report_access.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "models/diff_table_model.h"
#include "models/layer_selection.h"
#include "widgets/chart_style.h"

namespace mnv2::ui {

namespace {
// Exact agreement (rel L2 = 0) has no place on a log axis; it is drawn on this floor line.
constexpr double kErrorFloor = 1e-12;
}  // namespace

DiffsPage::DiffsPage(LayerSelection* selection, QWidget* parent) : QWidget(parent), m_selection(selection) {
  m_source = new QComboBox(this);
  m_source->setObjectName(QStringLiteral("diffSource"));
  m_source->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_backend = new QComboBox(this);
  m_backend->setObjectName(QStringLiteral("diffBackend"));
  m_reference = new QComboBox(this);
  m_reference->setObjectName(QStringLiteral("diffReference"));
  m_compute = new QPushButton(QStringLiteral("Compute diff"), this);
  m_compute->setObjectName(QStringLiteral("computeDiff"));
  m_compute->setToolTip(
      QStringLiteral("Run both backends on the opened image (else the random input) with every "
                     "layer output kept, and compare them layer by layer. The backend runs the precision of the "
                     "run settings where it can (else fp32); the reference runs fp32 unless it runs that mode too."));
  m_computeTip = m_compute->toolTip();
  m_summary = new QLabel(QStringLiteral("No diff yet: press Compare (several backends), compute one here, or open a "
                                        "report made by `mnv2 compare`."),
                         this);
  m_summary->setObjectName(QStringLiteral("diffSummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("diffPlot"));
  m_plot->setMinimumHeight(160);  // the page fits a 700 px screen beside a Runs panel three rows tall
  applyPlotStyle(m_plot);
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
  m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
  m_plot->xAxis->setLabel(QStringLiteral("layer (grouped by block)"));
  m_plot->yAxis->setLabel(QStringLiteral("rel L2 error of the layer output"));
  applyLogScale(m_plot->yAxis, true);
  m_plot->xAxis->grid()->setVisible(false);

  m_model = new DiffTableModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(m_model);
  proxy->setSortRole(DiffTableModel::SortRole);
  m_view = new QTableView(this);
  m_view->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  m_view->setObjectName(QStringLiteral("diffTable"));
  m_view->setModel(proxy);
  m_view->setSortingEnabled(true);
  m_view->sortByColumn(DiffTableModel::Index, Qt::AscendingOrder);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  m_view->verticalHeader()->hide();
  m_view->verticalHeader()->setDefaultSectionSize(20);
  m_view->horizontalHeader()->setStretchLastSection(true);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(QStringLiteral("Diff"), this));
  bar->addWidget(m_source, 1);
  bar->addSpacing(20);
  bar->addWidget(new QLabel(QStringLiteral("Compute"), this));
  bar->addWidget(m_backend);
  bar->addWidget(new QLabel(QStringLiteral("vs"), this));
  bar->addWidget(m_reference);
  bar->addWidget(m_compute);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_plot);
  split->addWidget(m_view);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(m_summary);
  layout->addWidget(split, 1);

  connect(m_source, &QComboBox::currentIndexChanged, this, [this](int i) { showSource(i); });
  connect(m_compute, &QPushButton::clicked, this,
          [this] { Q_EMIT computeRequested(m_backend->currentText(), m_reference->currentText()); });
  connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (current.isValid()) m_selection->setCurrentLayer(current.data(DiffTableModel::LayerRole).toInt());
  });
  connect(m_plot, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* p, int dataIndex, QMouseEvent*) {
    auto* graph = qobject_cast<QCPGraph*>(p);
    if (graph && dataIndex >= 0 && dataIndex < graph->data()->size())
      m_selection->setCurrentLayer(static_cast<int>(graph->data()->at(dataIndex)->key));
  });
  connect(m_selection, &LayerSelection::currentLayerChanged, this, [this](int layer) { highlight(layer); });
  setBackends({});
}

void DiffsPage::setSources(const QString& origin, std::vector<Source> sources, bool show) {
  const DiffPtr shown = currentDiff();
  std::vector<Source> kept;
  for (Source& s : m_sources)
    if (s.origin != origin) kept.push_back(std::move(s));
  const int firstNew = static_cast<int>(kept.size());
  const bool added = !sources.empty();
  for (Source& s : sources) kept.push_back(std::move(s));
  m_sources = std::move(kept);
  QSignalBlocker block(m_source);
  m_source->clear();
  int keep = -1;
  for (int i = 0; i < static_cast<int>(m_sources.size()); ++i) {
    m_source->addItem(m_sources[static_cast<size_t>(i)].label);
    if (m_sources[static_cast<size_t>(i)].diff == shown) keep = i;
  }
  const int index = show && added ? firstNew : (keep >= 0 ? keep : (m_sources.empty() ? -1 : 0));
  m_source->setCurrentIndex(index);
  block.unblock();
  showSource(index);
}

void DiffsPage::setBackends(const std::vector<BackendStatus>& backends) {
  m_backend->clear();
  m_reference->clear();
  for (const BackendStatus& b : backends) {
    if (!b.available) continue;
    m_backend->addItem(b.name);
    m_reference->addItem(b.name);
  }
  // Usually a GPU backend (or the oneDNN cpu backend) against the reference, cpu-ref.
  int reference = m_reference->findText(QStringLiteral("cpu-ref"));
  if (reference < 0) reference = m_reference->findText(QStringLiteral("cpu"));
  m_reference->setCurrentIndex(std::max(0, reference));
  for (int i = 0; i < m_backend->count(); ++i)
    if (m_backend->itemText(i) != m_reference->currentText()) {
      m_backend->setCurrentIndex(i);
      break;
    }
  m_compute->setEnabled(!m_computing && m_backend->count() > 0 && m_remoteRefusal.isEmpty());
}

void DiffsPage::setComputing(bool computing) {
  m_computing = computing;
  m_compute->setEnabled(!computing && m_backend->count() > 0 && m_remoteRefusal.isEmpty());
}

void DiffsPage::setRemoteRefusal(const QString& reason) {
  m_remoteRefusal = reason;
  m_compute->setToolTip(reason.isEmpty() ? m_computeTip : reason);
  setComputing(m_computing);
}

DiffPtr DiffsPage::currentDiff() const {
  const int i = m_source->currentIndex();
  return i >= 0 && i < static_cast<int>(m_sources.size()) ? m_sources[static_cast<size_t>(i)].diff : nullptr;
}

QString DiffsPage::summaryText() const { return m_summary->text(); }

void DiffsPage::showSource(int index) {
  const Source* s =
      index >= 0 && index < static_cast<int>(m_sources.size()) ? &m_sources[static_cast<size_t>(index)] : nullptr;
  m_model->setDiff(s ? s->diff : nullptr, s ? s->topology : std::vector<mnv2::Layer>{});
  m_view->resizeColumnsToContents();
  if (!s) {
    rebuildPlot();
    Q_EMIT currentDiffChanged(nullptr);
    return;
  }
  const mnv2::DiffReport& d = *s->diff;
  auto names = [&](const std::vector<int>& top) {
    QStringList out;
    for (int i : top)
      out << QStringLiteral("%1 %2").arg(i).arg(classLabel(i, s->numClasses).section(QLatin1Char(','), 0, 0));
    return out.join(QStringLiteral(", "));
  };
  QString text = QStringLiteral("<b>%1</b> against <b>%2</b>: ")
                     .arg(runLabel(shownText(d.backend), s->precision).toHtmlEscaped(),
                          runLabel(shownText(d.reference), s->referencePrecision).toHtmlEscaped());
  if (d.top5_agree)
    text += QStringLiteral("<span style='color:#1a7f37'><b>top-5 agrees</b></span> (%1)")
                .arg(names(d.top5).toHtmlEscaped());
  else
    text += QStringLiteral("<span style='color:#b42318'><b>top-5 differs</b></span>: %1 vs %2")
                .arg(names(d.top5).toHtmlEscaped(), names(d.reference_top5).toHtmlEscaped());
  text += QStringLiteral("<br>logits: rel L2 %1, max abs %2, cosine %3. ")
              .arg(d.logits.rel_l2, 0, 'e', 2)
              .arg(d.logits.max_abs, 0, 'e', 2)
              .arg(cosineText(d.logits.cosine));
  if (d.first_divergent_layer >= 0) {
    const QString name = d.first_divergent_layer < static_cast<int>(s->topology.size())
                             ? shownText(s->topology[static_cast<size_t>(d.first_divergent_layer)].name)
                             : QString();
    text += QStringLiteral(
                "<span style='color:#b42318'>First layer over rel L2 %1: <b>#%2 %3</b></span> (red row and line).")
                .arg(d.threshold, 0, 'g', 2)
                .arg(d.first_divergent_layer)
                .arg(name.toHtmlEscaped());
  } else {
    text += QStringLiteral("No layer over rel L2 %1.").arg(d.threshold, 0, 'g', 2);
  }
  text += QStringLiteral("<br>Threshold: %1.")
              .arg(diffThresholdText(d, s->precision, s->referencePrecision).toHtmlEscaped());
  int compared = 0;
  for (const auto& l : d.layers) compared += l.compared ? 1 : 0;
  if (compared < static_cast<int>(d.layers.size()))
    text += QStringLiteral(" %1 of %2 layers compared (the others are fused away by one backend).")
                .arg(compared)
                .arg(d.layers.size());
  m_summary->setText(text);
  rebuildPlot();
  Q_EMIT currentDiffChanged(s->diff);
}

void DiffsPage::rebuildPlot() {
  m_plot->clearPlottables();
  m_plot->clearItems();
  m_graph = m_marker = nullptr;
  const int index = m_source->currentIndex();
  if (index < 0 || index >= static_cast<int>(m_sources.size())) {
    m_plot->replot();
    return;
  }
  const Source& s = m_sources[static_cast<size_t>(index)];
  const mnv2::DiffReport& d = *s.diff;
  m_graph = m_plot->addGraph();
  m_graph->setName(QStringLiteral("rel L2"));
  m_graph->setPen(QPen(QColor(60, 120, 200), 1.2));
  m_graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(60, 120, 200), Qt::white, 5));
  double lo = 1, hi = kErrorFloor;
  QVector<double> keys, values;
  for (const auto& l : d.layers) {
    if (!l.compared) continue;
    const double v = std::isfinite(l.error.rel_l2) ? std::max(l.error.rel_l2, kErrorFloor) : 1.0;
    keys << l.layer;
    values << v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  m_graph->setData(keys, values, true);
  m_marker = m_plot->addGraph();  // the selected layer
  m_marker->setLineStyle(QCPGraph::lsNone);
  m_marker->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(230, 40, 40), QColor(230, 40, 40), 9));
  auto* threshold = new QCPItemStraightLine(m_plot);
  threshold->setPen(QPen(QColor(180, 40, 40), 1, Qt::DashLine));
  threshold->point1->setCoords(0, d.threshold);
  threshold->point2->setCoords(1, d.threshold);
  auto* thresholdLabel = new QCPItemText(m_plot);
  thresholdLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
  thresholdLabel->position->setTypeY(QCPItemPosition::ptPlotCoords);
  thresholdLabel->position->setCoords(0.995, d.threshold);
  thresholdLabel->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
  thresholdLabel->setColor(QColor(180, 40, 40));
  thresholdLabel->setText(QStringLiteral("threshold %1 (%2)")
                              .arg(d.threshold, 0, 'g', 2)
                              .arg(s.precision == mnv2::Precision::fp32 && s.referencePrecision == mnv2::Precision::fp32
                                       ? QStringLiteral("fp32")
                                       : QStringLiteral("reduced precision: %1").arg(precisionName(s.precision))));
  if (d.first_divergent_layer >= 0) {
    auto* first = new QCPItemStraightLine(m_plot);
    first->setPen(QPen(QColor(220, 40, 40), 2));
    first->point1->setCoords(d.first_divergent_layer, 1);
    first->point2->setCoords(d.first_divergent_layer, 2);
    auto* label = new QCPItemText(m_plot);
    label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(d.first_divergent_layer, 0.02);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    label->setPadding(QMargins(4, 0, 0, 0));
    label->setColor(QColor(200, 30, 30));
    label->setText(QStringLiteral("first divergent: #%1").arg(d.first_divergent_layer));
  }
  if (hi <= kErrorFloor) {
    auto* note = new QCPItemText(m_plot);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.4);
    note->setText(
        QStringLiteral("identical outputs: every compared layer has rel L2 = 0 (drawn at %1)").arg(kErrorFloor));
  }
  if (!s.topology.empty()) {
    m_plot->xAxis->setTicker(blockTicker(s.topology));
    for (double x : blockBoundaries(s.topology)) {
      auto* line = new QCPItemStraightLine(m_plot);
      line->setLayer(QStringLiteral("grid"));
      line->setPen(QPen(QColor(215, 215, 215), 0, Qt::DashLine));
      line->point1->setCoords(x, 1);
      line->point2->setCoords(x, 2);
    }
  }
  m_plot->xAxis->setRange(-1, std::max<double>(d.layers.size(), 1));
  m_plot->yAxis->setRange(std::min(lo, d.threshold) / 5, std::max(hi, d.threshold) * 5);
  highlight(m_selection->currentLayer());
}

void DiffsPage::highlight(int layer) {
  if (m_marker && m_graph) {
    QVector<double> k, v;
    for (auto it = m_graph->data()->constBegin(); it != m_graph->data()->constEnd(); ++it) {
      if (static_cast<int>(it->key) == layer) {
        k << it->key;
        v << it->value;
      }
    }
    m_marker->setData(k, v);
  }
  m_plot->replot();
  auto* proxy = qobject_cast<QSortFilterProxyModel*>(m_view->model());
  for (int row = 0; row < m_model->rowCount(); ++row) {
    if (m_model->index(row, 0).data(DiffTableModel::LayerRole).toInt() != layer) continue;
    const QModelIndex p = proxy->mapFromSource(m_model->index(row, 0));
    if (m_view->currentIndex().row() != p.row())
      m_view->selectionModel()->setCurrentIndex(p, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(p);
    break;
  }
}

}  // namespace mnv2::ui
