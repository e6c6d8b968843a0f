// The Sweep page (see sweep_page.h). The engine parses sizes and runs the sweep; this page lays out
// the fields and draws the results.
#include "widgets/sweep_page.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStringList>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <map>
#include <set>

#include "mnv2/error.h"
#include "models/report_access.h"
#include "widgets/backend_picker.h"
#include "widgets/chart_style.h"

namespace mnv2::ui {

namespace {

// A qualitative palette (Okabe–Ito, colour-blind safe) for the sweep's lines: neighbours stay apart however
// many lines one backend has.
QColor lineColor(int index) {
  static const QColor palette[] = {QColor(0, 114, 178),   QColor(230, 159, 0),  QColor(0, 158, 115),
                                   QColor(204, 121, 167), QColor(86, 180, 233), QColor(213, 94, 0),
                                   QColor(240, 228, 66),  QColor(0, 0, 0)};
  return palette[index % 8];
}

const QString kEmptyText = QStringLiteral("No sweep yet: set the lists above and press Run sweep.");

}  // namespace

SweepPage::SweepPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  m_backends = new QLineEdit(QStringLiteral("cpu"), this);
  m_sizes = new QLineEdit(QStringLiteral("224x224,500x334"), this);
  m_batches = new QLineEdit(QStringLiteral("1,2,4"), this);
  m_sizes->setToolTip(QStringLiteral("height x width, comma-separated (e.g. 224x224,500x334,1024x2048)"));
  m_precision = new PrecisionCombo(this);
  m_precision->setObjectName(QStringLiteral("sweepPrecision"));
  m_warmup = new QSpinBox(this);
  m_warmup->setRange(0, 100000);
  m_warmup->setValue(2);
  m_iters = new QSpinBox(this);
  m_iters->setRange(1, 100000);
  m_iters->setValue(10);
  m_xAxis = new QComboBox(this);
  m_xAxis->addItems({QStringLiteral("batch size"), QStringLiteral("input size (pixels)")});
  m_run = new QPushButton(QStringLiteral("Run sweep"), this);
  m_run->setObjectName(QStringLiteral("sweepRun"));
  m_export = new QPushButton(QStringLiteral("Export CSV…"), this);
  m_export->setObjectName(QStringLiteral("sweepExport"));
  m_export->setToolTip(QStringLiteral("The sweep's figures as the engine's bench CSV (File ▸ Export ▸ Sweep CSV)"));
  m_export->setEnabled(false);
  m_status = new QLabel(this);
  m_status->setWordWrap(true);
  auto* counts = new QHBoxLayout;
  counts->addWidget(new QLabel(QStringLiteral("precision"), this));
  counts->addWidget(m_precision);
  counts->addWidget(new QLabel(QStringLiteral("warm-up"), this));
  counts->addWidget(m_warmup);
  counts->addWidget(new QLabel(QStringLiteral("iterations"), this));
  counts->addWidget(m_iters);
  counts->addStretch(1);
  // The x axis and the buttons on a second row: one row was wider than a laptop's tab.
  auto* actions = new QHBoxLayout;
  actions->addWidget(new QLabel(QStringLiteral("x axis"), this));
  actions->addWidget(m_xAxis);
  actions->addStretch(1);
  actions->addWidget(m_run);
  actions->addWidget(m_export);
  form->addRow(QStringLiteral("Backends"), m_backends);
  form->addRow(QStringLiteral("Input sizes"), m_sizes);
  form->addRow(QStringLiteral("Batch sizes"), m_batches);
  form->addRow(counts);
  form->addRow(actions);
  layout->addLayout(form);
  layout->addWidget(m_status);
  auto* chartsBox = new QWidget(this);
  auto* charts = new QHBoxLayout(chartsBox);
  charts->setContentsMargins(0, 0, 0, 0);
  for (QCustomPlot** plot : {&m_latency, &m_throughput}) {
    *plot = new QCustomPlot(this);
    applyPlotStyle(*plot);
    (*plot)->legend->setVisible(true);
    // The legend in a row of its own above the axes: inside them it covered the points (issue 35).
    (*plot)->plotLayout()->insertRow(0);
    (*plot)->plotLayout()->addElement(0, 0, (*plot)->legend);
    (*plot)->legend->setFillOrder(QCPLegend::foColumnsFirst);
    (*plot)->legend->setWrap(3);
    (*plot)->plotLayout()->setRowStretchFactor(0, 0.001);
    (*plot)->setMinimumSize(240, 120);  // the page fits a 700 px screen beside a Runs panel three rows tall
    (*plot)->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    charts->addWidget(*plot, 1);
    QCustomPlot* self = *plot;
    connect(self, &QCustomPlot::mouseMove, this, [this, self](QMouseEvent* event) {
      const QString tip = toolTipAt(self, event->position());
      if (tip.isEmpty())
        QToolTip::hideText();
      else
        QToolTip::showText(event->globalPosition().toPoint(), tip, self);
    });
  }
  m_latency->setObjectName(QStringLiteral("sweepLatencyPlot"));
  m_throughput->setObjectName(QStringLiteral("sweepThroughputPlot"));
  // Every point's figures, to read and copy (the charts round them to pixels).
  m_table = new QTableWidget(this);
  m_table->setObjectName(QStringLiteral("sweepTable"));
  m_table->setTabKeyNavigation(false);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->verticalHeader()->hide();
  m_table->setColumnCount(7);
  m_table->setHorizontalHeaderLabels({QStringLiteral("backend"), QStringLiteral("input"), QStringLiteral("batch"),
                                      QStringLiteral("median ms"), QStringLiteral("p10 – p90 ms"),
                                      QStringLiteral("images/s"), QStringLiteral("runs")});
  m_table->horizontalHeader()->setStretchLastSection(true);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(chartsBox);
  split->addWidget(m_table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  // Short enough for the axis of a chart on a 700 px screen (the longer "median latency per batch (ms, host)" was
  // cut at both ends); each point is the host median, as the table says.
  m_latency->yAxis->setLabel(QStringLiteral("ms per batch"));
  m_throughput->yAxis->setLabel(QStringLiteral("images/s"));
  layout->addWidget(split, 1);

  connect(m_run, &QPushButton::clicked, this, [this] {
    QString error;
    if (auto c = config(&error))
      Q_EMIT sweepRequested(*c);
    else
      m_status->setText(error);
  });
  connect(m_export, &QPushButton::clicked, this, &SweepPage::exportRequested);
  connect(m_xAxis, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(m_backends, &QLineEdit::textChanged, this, [this] { updatePrecisions(); });
  rebuild();
}

std::optional<mnv2::SweepConfig> SweepPage::config(QString* error) const {
  mnv2::SweepConfig c;
  try {
    c.backends.clear();
    for (const QString& b : m_backends->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
      c.backends.push_back(b.trimmed().toStdString());
    c.sizes = mnv2::parse_size_list(m_sizes->text().remove(QLatin1Char(' ')).toStdString());
    c.batches.clear();
    for (const QString& b : m_batches->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
      bool ok = false;
      const int n = b.trimmed().toInt(&ok);
      if (!ok || n < 1 || n > 65536)
        throw mnv2::UsageError("batch sizes must be whole numbers 1..65536, got '" + b.toStdString() + "'");
      c.batches.push_back(n);
    }
    c.warmup = m_warmup->value();
    c.iters = m_iters->value();
    c.precision = m_precision->precision();
    for (const std::string& b : c.backends)
      for (const BackendStatus& known : m_known)
        if (known.name.toStdString() == b && !known.supports(c.precision))
          throw mnv2::UsageError(b + " does not run " + mnv2::to_string(c.precision) +
                                 ": choose another precision or leave it out of the list");
    mnv2::sweep_points(c);  // empty lists are refused here
  } catch (const mnv2::Error& e) {
    if (error) *error = shownText(e.what());
    return std::nullopt;
  }
  return c;
}

void SweepPage::setFields(const QString& backends, const QString& sizes, const QString& batches) {
  if (!backends.isEmpty()) m_backends->setText(backends);
  if (!sizes.isEmpty()) m_sizes->setText(sizes);
  if (!batches.isEmpty()) m_batches->setText(batches);
}

void SweepPage::setBackends(const std::vector<BackendStatus>& backends) {
  m_known = backends;
  updatePrecisions();
}

void SweepPage::updatePrecisions() {
  std::vector<const BackendStatus*> listed;
  for (const QString& b : m_backends->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
    for (const BackendStatus& known : m_known)
      if (known.name == b.trimmed()) listed.push_back(&known);
  m_precision->setSupported(listed);
}

bool SweepPage::setPrecision(mnv2::Precision precision) { return m_precision->setPrecision(precision); }

void SweepPage::setRemoteRefusal(const QString& reason) {
  m_remoteRefusal = reason;
  m_run->setToolTip(reason);
  setRunning(m_running);
}

void SweepPage::setRunning(bool running) {
  m_running = running;
  m_run->setEnabled(!running && m_remoteRefusal.isEmpty());
  m_export->setEnabled(!running && !m_results.empty());
}

void SweepPage::setXAxis(bool inputSize) { m_xAxis->setCurrentIndex(inputSize ? 1 : 0); }

int SweepPage::lineCount() const { return m_latency->graphCount(); }

void SweepPage::setResults(std::vector<mnv2::BenchResult> results) {
  m_fresh = std::move(results);
  showResults();
}

void SweepPage::addSavedResults(std::vector<mnv2::BenchResult> results, const QString& source) {
  for (auto it = m_saved.begin(); it != m_saved.end(); ++it)
    if (it->first == source) {
      m_saved.erase(it);
      break;
    }
  m_saved.emplace_back(source, std::move(results));
  showResults();
}

void SweepPage::clearSavedResults() {
  m_saved.clear();
  showResults();
}

int SweepPage::savedCount() const {
  size_t n = 0;
  for (const auto& [source, results] : m_saved) n += results.size();
  return static_cast<int>(n);
}

void SweepPage::showResults() {
  m_results = m_fresh;
  QStringList sources;
  for (const auto& [source, results] : m_saved) {
    m_results.insert(m_results.end(), results.begin(), results.end());
    sources << source;
  }
  QString status = QStringLiteral(
                       "%1 points in %2; host wall time per run (input upload to logits download), median of each "
                       "point's timed runs")
                       .arg(m_fresh.size())
                       .arg(m_fresh.empty() ? QStringLiteral("—") : precisionName(m_fresh.front().config.precision));
  if (!m_saved.empty())
    status += QStringLiteral("; %1 saved points from %2").arg(savedCount()).arg(sources.join(QStringLiteral(", ")));
  m_status->setText(status);
  m_export->setEnabled(!m_results.empty());
  m_table->setRowCount(static_cast<int>(m_results.size()));
  for (int row = 0; row < static_cast<int>(m_results.size()); ++row) {
    const mnv2::BenchResult& r = m_results[static_cast<size_t>(row)];
    const QString cells[] = {
        runLabel(shownText(r.config.backend), r.config.precision),
        QStringLiteral("%1×%2").arg(r.config.height).arg(r.config.width),
        QString::number(r.config.batch),
        QString::number(r.latency_ms.median, 'f', 3),
        QStringLiteral("%1 – %2").arg(r.latency_ms.p10, 0, 'f', 3).arg(r.latency_ms.p90, 0, 'f', 3),
        QString::number(r.images_per_s, 'f', 1),
        QString::number(r.latency_ms.n)};
    for (int c = 0; c < 7; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c >= 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_table->setItem(row, c, item);
    }
  }
  m_table->resizeColumnsToContents();
  rebuild();
}

QString SweepPage::toolTipAt(QCustomPlot* plot, const QPointF& pos) const {
  constexpr double kRadiusPx = 8;
  QString best;
  double bestDistance = kRadiusPx;
  for (int g = 0; g < plot->graphCount(); ++g) {
    if (g >= static_cast<int>(m_linePoints.size())) break;
    const auto& points = m_linePoints.at(static_cast<size_t>(g));
    const bool bySize = m_xAxis->currentIndex() == 1;
    for (const mnv2::BenchResult* point : points) {
      const double x = bySize ? double(point->config.height) * point->config.width : point->config.batch;
      const double y = plot == m_latency ? point->latency_ms.median : point->images_per_s;
      const QPointF px(plot->xAxis->coordToPixel(x), plot->yAxis->coordToPixel(y));
      const double d = std::hypot(px.x() - pos.x(), px.y() - pos.y());
      if (d > bestDistance) continue;
      bestDistance = d;
      const mnv2::BenchResult& r = *point;
      best = QStringLiteral("%1\ninput %2×%3, batch %4\nmedian %5 ms (p10 %6, p90 %7)\n%8 images/s")
                 .arg(runLabel(shownText(r.config.backend), r.config.precision))
                 .arg(r.config.height)
                 .arg(r.config.width)
                 .arg(r.config.batch)
                 .arg(r.latency_ms.median, 0, 'f', 3)
                 .arg(r.latency_ms.p10, 0, 'f', 3)
                 .arg(r.latency_ms.p90, 0, 'f', 3)
                 .arg(r.images_per_s, 0, 'f', 1);
    }
  }
  return best;
}

QString SweepPage::emptyText(QCustomPlot* plot) const {
  for (int i = 0; i < plot->itemCount(); ++i)
    if (auto* t = qobject_cast<QCPItemText*>(plot->item(i))) return t->text();
  return QString();
}

void SweepPage::rebuild() {
  const bool bySize = m_xAxis->currentIndex() == 1;
  m_linePoints.clear();
  // Ticks at the values swept, labelled as typed ("1 2 4", "224×224"): no repeated or fractional labels.
  std::map<double, QString> ticks;
  for (const auto& r : m_results)
    ticks[bySize ? double(r.config.height) * r.config.width : r.config.batch] =
        bySize ? QStringLiteral("%1×%2").arg(r.config.height).arg(r.config.width) : QString::number(r.config.batch);
  for (QCustomPlot* plot : {m_latency, m_throughput}) {
    plot->clearGraphs();
    plot->clearItems();
    plot->xAxis->setLabel(bySize ? QStringLiteral("input pixels (height x width)") : QStringLiteral("batch size"));
    applyLogScale(plot->xAxis, true);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (const auto& [x, label] : ticks) ticker->addTick(x, label);
    plot->xAxis->setTicker(ticker);
    plot->xAxis->setSubTicks(false);
    const bool empty = m_results.empty();
    plot->xAxis->setVisible(!empty);
    plot->yAxis->setVisible(!empty);
    plot->legend->setVisible(!empty);
    if (empty) {  // no axes 0.001–1 before a run: a sentence saying what to do
      auto* text = new QCPItemText(plot);
      text->position->setType(QCPItemPosition::ptAxisRectRatio);
      text->position->setCoords(0.5, 0.5);
      text->setText(kEmptyText);
      text->setColor(QColor(110, 110, 110));
    }
  }
  // One line per (backend, the other parameter), points ordered along x.
  std::map<std::pair<std::string, std::string>, std::vector<const mnv2::BenchResult*>> lines;
  for (const auto& r : m_results) {
    const std::string other = bySize ? "batch " + std::to_string(r.config.batch)
                                     : std::to_string(r.config.height) + "x" + std::to_string(r.config.width);
    lines[{runLabel(shownText(r.config.backend), r.config.precision).toStdString(), other}].push_back(&r);
  }
  int index = 0;
  for (const auto& [key, points] : lines) {
    const QColor color = lineColor(index++);
    const QString name = shownText(key.first + ", " + key.second);
    m_linePoints.push_back(points);
    for (QCustomPlot* plot : {m_latency, m_throughput}) {
      QCPGraph* g = plot->addGraph();
      g->setName(name);
      g->setPen(QPen(color, 2));
      g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
      for (const mnv2::BenchResult* r : points) {
        const double x = bySize ? double(r->config.height) * r->config.width : r->config.batch;
        g->addData(x, plot == m_latency ? r->latency_ms.median : r->images_per_s);
      }
    }
  }
  for (QCustomPlot* plot : {m_latency, m_throughput}) {
    if (m_results.empty()) {
      plot->replot();
      continue;
    }
    plot->rescaleAxes();
    const QCPRange x = plot->xAxis->range();
    plot->xAxis->setRange(x.lower / 1.5, x.upper * 1.5);
    const QCPRange y = plot->yAxis->range();
    plot->yAxis->setRange(0, y.upper * 1.1);
    plot->replot();
  }
}

}  // namespace mnv2::ui
