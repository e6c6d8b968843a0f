// The Roofline page (see roofline_page.h). The engine computes the points, ceilings, memory figures and
// the ncu command; this page only draws and lists them.
#include "widgets/roofline_page.h"

#include "models/report_access.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <map>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/memory.h"
#include "mnv2/ncu.h"
#include "mnv2/studies.h"
#include "models/layer_selection.h"
#include "widgets/chart_style.h"

namespace mnv2::ui {

RooflinePage::RooflinePage(LayerSelection* selection, QWidget* parent) : QWidget(parent), m_selection(selection) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  m_summary = new QLabel(this);
  m_summary->setWordWrap(true);
  m_measure = new QCheckBox(QStringLiteral("Measure ceilings with the next run (cached per device)"), this);
  m_measure->setToolTip(QStringLiteral(
      "GPU: a 1 GiB device copy and a cuBLAS SGEMM without TF32; CPU: memcpy and oneDNN SGEMM. Measured once "
      "per device and kept in the cache folder (mnv2 roofline --recalibrate measures again)."));
  m_measureTip = m_measure->toolTip();
  m_runs = new QComboBox(this);
  m_runs->setObjectName(QStringLiteral("rooflineRun"));
  m_runs->setToolTip(QStringLiteral("The run placed on the roofline"));
  top->addWidget(m_runs);
  top->addWidget(m_summary, 1);
  top->addWidget(m_measure);
  layout->addLayout(top);

  auto* split = new QSplitter(Qt::Horizontal, this);
  m_plot = new QCustomPlot(split);
  applyPlotStyle(m_plot);
  m_plot->xAxis->setLabel(QStringLiteral("arithmetic intensity (FLOP/byte)"));
  m_plot->yAxis->setLabel(QStringLiteral("achieved GFLOP/s"));
  applyLogScale(m_plot->xAxis, true);
  applyLogScale(m_plot->yAxis, true);
  m_plot->legend->setVisible(true);
  m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  m_plot->setMinimumSize(420, 220);  // the page fits a 700 px screen beside a Runs panel three rows tall

  auto* side = new QWidget(split);
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  m_memoryHeld = new QLabel(side);
  m_memoryHeld->setWordWrap(true);
  m_memory = new QTableWidget(0, 5, side);
  m_memory->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  m_memory->setHorizontalHeaderLabels({QStringLiteral("layer"), QStringLiteral("kind"), QStringLiteral("output"),
                                       QStringLiteral("activation bytes"), QStringLiteral("weight bytes")});
  m_memory->verticalHeader()->setVisible(false);
  m_memory->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_memory->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_memory->setSelectionMode(QAbstractItemView::SingleSelection);
  m_memory->setObjectName(QStringLiteral("memoryTable"));
  m_memory->horizontalHeader()->setStretchLastSection(true);
  sideLayout->addWidget(new QLabel(QStringLiteral("<b>Memory</b>"), side));
  sideLayout->addWidget(m_memoryHeld);
  sideLayout->addWidget(m_memory, 1);
  split->addWidget(m_plot);
  split->addWidget(side);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  auto* ncuRow = new QHBoxLayout;
  m_ncu = new QLineEdit(this);
  m_ncu->setReadOnly(true);
  m_ncu->setPlaceholderText(QStringLiteral("select a layer of a GPU run for its Nsight Compute command"));
  m_copy = new QPushButton(QStringLiteral("Copy"), this);
  m_copy->setEnabled(false);
  ncuRow->addWidget(new QLabel(QStringLiteral("Nsight Compute:"), this));
  ncuRow->addWidget(m_ncu, 1);
  ncuRow->addWidget(m_copy);
  layout->addLayout(ncuRow);

  connect(m_copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(m_ncu->text()); });
  connect(m_runs, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0 || index >= static_cast<int>(m_reports.size()) || m_reports[static_cast<size_t>(index)] == m_report)
      return;
    m_report = m_reports[static_cast<size_t>(index)];
    rebuild();
  });
  connect(m_selection, &LayerSelection::currentLayerChanged, this, [this](int layer) { showLayer(layer); });
  connect(m_memory, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (row >= 0) m_selection->setCurrentLayer(row);
  });
  connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { onMouseMove(e); });
  connect(m_plot, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* p, int index, QMouseEvent*) {
    const QVariant layers = p->property("layers");
    const QList<QVariant> list = layers.toList();
    if (index >= 0 && index < list.size()) m_selection->setCurrentLayer(list[index].toInt());
  });
  rebuild();
}

bool RooflinePage::selectRun(int index) {
  if (index < 0 || index >= m_runs->count()) return false;
  m_runs->setCurrentIndex(index);
  return true;
}

bool RooflinePage::measureCeilings() const { return m_measure->isChecked() && m_remoteRefusal.isEmpty(); }

void RooflinePage::setRemoteRefusal(const QString& reason) {
  m_remoteRefusal = reason;
  m_measure->setEnabled(reason.isEmpty());
  m_measure->setToolTip(reason.isEmpty() ? m_measureTip : reason);
}
void RooflinePage::setMeasureCeilings(bool on) { m_measure->setChecked(on); }

void RooflinePage::setReports(std::vector<ReportPtr> reports, std::vector<RunIdentity> identities) {
  m_reports = std::move(reports);
  m_report = m_reports.empty() ? nullptr : m_reports.front();
  {
    const QSignalBlocker block(m_runs);
    m_runs->clear();
    for (size_t i = 0; i < m_reports.size(); ++i) {
      const ReportPtr& r = m_reports[i];
      m_runs->addItem(QStringLiteral("%1 (%2)").arg(
          identities.size() == m_reports.size() ? identities[i].name : runLabel(*r), shownText(r->device)));
    }
  }
  rebuild();
}

void RooflinePage::setCeilings(std::optional<mnv2::Ceilings> ceilings, const QString& note) {
  m_ceilings = std::move(ceilings);
  m_ceilingsNote = note;
  rebuild();
}

void RooflinePage::rebuild() {
  m_plot->clearGraphs();
  m_plot->clearItems();
  m_points.clear();
  m_memory->setRowCount(0);
  m_memoryHeld->clear();
  if (!m_report) {
    m_summary->setText(QStringLiteral("Run a profile (or open a report) to place its layers on the roofline."));
    m_plot->replot();
    return;
  }
  const mnv2::RunReport& r = *m_report;
  // Without measured ceilings the points are placed under an unbounded roof (intensity and GFLOP/s only).
  // Ceilings apply to runs on their kind of device only (a compare may hold cpu and GPU runs).
  m_roofShown = m_ceilings && m_ceilings->key.rfind(mnv2::is_host_backend(r.backend) ? "cpu|" : "gpu|", 0) == 0;
  mnv2::Ceilings c = m_roofShown ? *m_ceilings : mnv2::Ceilings{};
  if (!m_roofShown) c.gflop_s = c.bandwidth_gb_s = 1e30;
  m_points = mnv2::roofline_points(r, c);

  std::map<QString, QCPGraph*> byKind;  // one scatter per kind, in the legend once
  double xmin = 1e30, xmax = 0, ymin = 1e30, ymax = 0;
  for (const auto& p : m_points) {
    const mnv2::Layer& layer = r.topology[static_cast<size_t>(p.layer)];
    QString kind = shownText(p.kind);
    if (layer.kind == mnv2::LayerKind::Conv2d && layer.conv.depthwise()) kind += QStringLiteral(" depthwise");
    QCPGraph*& g = byKind[kind];
    if (!g) {
      g = m_plot->addGraph();
      g->setName(kind);
      g->setLineStyle(QCPGraph::lsNone);
      g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, layerKindColor(layer), 7));
      g->setProperty("layers", QVariantList{});
      // Keep the insertion order: graph data sorts by key, so the layer list is rebuilt below.
    }
    g->addData(p.intensity, p.gflop_s);
    xmin = std::min(xmin, p.intensity);
    xmax = std::max(xmax, p.intensity);
    ymin = std::min(ymin, p.gflop_s);
    ymax = std::max(ymax, p.gflop_s);
  }
  // Each graph's data is sorted by intensity; store the layer of each sorted point for clicks and tool-tips.
  for (auto& [kind, g] : byKind) {
    QVariantList layers;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
      for (const auto& p : m_points)
        if (p.intensity == it->key && p.gflop_s == it->value) {
          layers.push_back(p.layer);
          break;
        }
    g->setProperty("layers", layers);
  }
  QString head = QStringLiteral("%1 on %2, batch %3, %4x%5: %6 steps.")
                     .arg(runLabel(r), shownText(r.device))
                     .arg(r.config.batch)
                     .arg(r.config.height)
                     .arg(r.config.width)
                     .arg(m_points.size());
  if (m_roofShown) {
    const double lo = std::max(1e-3, xmin / 4), hi = std::max(xmax * 4, c.ridge() * 4);
    QCPGraph* roof = m_plot->addGraph();
    roof->setName(QStringLiteral("roof"));
    roof->setPen(QPen(Qt::black, 1.5));
    roof->setData({lo, c.ridge(), hi}, {c.bandwidth_gb_s * lo, c.gflop_s, c.gflop_s});
    int bound = 0;
    for (const auto& p : m_points) bound += p.memory_bound ? 1 : 0;
    head += QStringLiteral(
                " Ceilings of %1: %2 GB/s, %3 GFLOP/s, ridge %4 FLOP/byte; %5 steps memory-bound, %6 "
                "compute-bound.")
                .arg(shownText(c.device))
                .arg(c.bandwidth_gb_s, 0, 'f', 1)
                .arg(c.gflop_s, 0, 'f', 1)
                .arg(c.ridge(), 0, 'f', 2)
                .arg(bound)
                .arg(static_cast<int>(m_points.size()) - bound);
    xmin = std::min(xmin, lo);
    xmax = std::max(xmax, hi);
    ymax = std::max(ymax, c.gflop_s);
  } else {
    head +=
        QStringLiteral(" No ceilings: %1")
            .arg(
                m_ceilings
                    ? QStringLiteral("the measured ones are of another device (%1).").arg(shownText(m_ceilings->device))
                : m_ceilingsNote.isEmpty() ? QStringLiteral("tick the box above and run again to measure them.")
                                           : m_ceilingsNote);
  }
  m_summary->setText(head);
  if (!m_points.empty()) {
    m_plot->xAxis->setRange(xmin / 1.5, xmax * 1.5);
    m_plot->yAxis->setRange(std::max(ymin / 2, 1e-6), ymax * 2);
  }

  // Memory: per layer from the model analysis, what the backend held from its own account.
  m_memoryHeld->setText(QStringLiteral("Held by %1: %2").arg(runLabel(r), shownText(mnv2::describe_memory(r.memory))));
  mnv2::Model network;
  network.layers = r.topology;
  const auto layers = mnv2::layer_memory(network, r.layer_stats);
  m_memory->setRowCount(static_cast<int>(layers.size()));
  for (const auto& l : layers) {
    const mnv2::Layer& layer = r.topology[static_cast<size_t>(l.layer)];
    const QStringList cells = {QString::number(l.layer) + QStringLiteral(" ") + shownText(layer.name),
                               QString::fromLatin1(mnv2::to_string(layer.kind)),
                               shownText(r.layer_stats[static_cast<size_t>(l.layer)].output.str()),
                               QString::number(l.activation_bytes), QString::number(l.weight_bytes)};
    for (int col = 0; col < cells.size(); ++col) {
      auto* item = new QTableWidgetItem(cells[col]);
      if (col >= 3) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_memory->setItem(l.layer, col, item);
    }
  }
  // Each column as wide as its header and cells ("activation bytes" was cut to "ctivation byte"); a narrow
  // panel scrolls sideways instead.
  m_memory->resizeColumnsToContents();
  m_plot->replot();
  showLayer(m_selection->currentLayer());
}

QString RooflinePage::ncuCommand() const { return m_ncu->text(); }

void RooflinePage::showLayer(int layer) {
  m_ncu->clear();
  m_copy->setEnabled(false);
  if (!m_report || layer < 0 || layer >= static_cast<int>(m_report->layers.size())) return;
  const mnv2::RunReport& r = *m_report;
  if (m_memory->currentRow() != layer) m_memory->selectRow(layer);
  // The engine's ncu-command study from the run's report, the line `mnv2 profile --ncu-command` prints; where
  // there is none (a cpu run launches no GPU kernels), the study's reason in its place.
  try {
    const QString program = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("mnv2"));
    m_ncu->setText(shownText(mnv2::shell_join(mnv2::ncu_command(r, layer, program.toStdString()).argv)));
  } catch (const mnv2::Error& e) {
    m_ncu->setPlaceholderText(shownText(e.what()));
    return;
  }
  m_ncu->setCursorPosition(0);
  m_copy->setEnabled(true);
}

void RooflinePage::onMouseMove(QMouseEvent* event) {
  const double px = event->position().x(), py = event->position().y();
  const mnv2::RooflinePoint* best = nullptr;
  double bestDist = 8 * 8;  // pixels squared
  for (const auto& p : m_points) {
    const double dx = m_plot->xAxis->coordToPixel(p.intensity) - px, dy = m_plot->yAxis->coordToPixel(p.gflop_s) - py;
    if (dx * dx + dy * dy < bestDist) {
      bestDist = dx * dx + dy * dy;
      best = &p;
    }
  }
  if (!best) {
    QToolTip::hideText();
    return;
  }
  const mnv2::Layer& layer = m_report->topology[static_cast<size_t>(best->layer)];
  QString text = QStringLiteral("<b>%1</b> (%2)<br>%3 FLOP/byte, %4 GFLOP/s, median %5 µs")
                     .arg(shownText(best->name), shownText(layer.name))
                     .arg(best->intensity, 0, 'f', 2)
                     .arg(best->gflop_s, 0, 'f', 1)
                     .arg(best->time_ns / 1000.0, 0, 'f', 2);
  if (m_roofShown)
    text += QStringLiteral("<br>roof %1 GFLOP/s (%2%), %3-bound")
                .arg(best->attainable_gflop_s, 0, 'f', 1)
                .arg(100 * best->gflop_s / best->attainable_gflop_s, 0, 'f', 1)
                .arg(best->memory_bound ? QStringLiteral("memory") : QStringLiteral("compute"));
  QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

}  // namespace mnv2::ui
