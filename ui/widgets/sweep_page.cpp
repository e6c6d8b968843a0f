// The Sweep page (see sweep_page.h). The engine parses sizes and runs the sweep; this page lays out
// the fields and draws the results.
#include "widgets/sweep_page.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <map>

#include "mnv2/error.h"
#include "models/report_access.h"
#include "widgets/backend_picker.h"
#include "widgets/chart_style.h"

namespace mnv2::ui {

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
  m_status = new QLabel(this);
  m_status->setWordWrap(true);
  auto* counts = new QHBoxLayout;
  counts->addWidget(new QLabel(QStringLiteral("precision"), this));
  counts->addWidget(m_precision);
  counts->addWidget(new QLabel(QStringLiteral("warm-up"), this));
  counts->addWidget(m_warmup);
  counts->addWidget(new QLabel(QStringLiteral("iterations"), this));
  counts->addWidget(m_iters);
  counts->addWidget(new QLabel(QStringLiteral("x axis"), this));
  counts->addWidget(m_xAxis);
  counts->addStretch(1);
  counts->addWidget(m_run);
  form->addRow(QStringLiteral("Backends"), m_backends);
  form->addRow(QStringLiteral("Input sizes"), m_sizes);
  form->addRow(QStringLiteral("Batch sizes"), m_batches);
  form->addRow(counts);
  layout->addLayout(form);
  layout->addWidget(m_status);
  auto* charts = new QHBoxLayout;
  for (QCustomPlot** plot : {&m_latency, &m_throughput}) {
    *plot = new QCustomPlot(this);
    applyPlotStyle(*plot);
    (*plot)->legend->setVisible(true);
    (*plot)->setMinimumSize(320, 260);
    (*plot)->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    charts->addWidget(*plot, 1);
  }
  m_latency->yAxis->setLabel(QStringLiteral("median latency per batch (ms, host)"));
  m_throughput->yAxis->setLabel(QStringLiteral("images/s (host median)"));
  m_throughput->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  m_latency->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  layout->addLayout(charts, 1);

  connect(m_run, &QPushButton::clicked, this, [this] {
    QString error;
    if (auto c = config(&error))
      Q_EMIT sweepRequested(*c);
    else
      m_status->setText(error);
  });
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

void SweepPage::setRunning(bool running) { m_run->setEnabled(!running); }

void SweepPage::setXAxis(bool inputSize) { m_xAxis->setCurrentIndex(inputSize ? 1 : 0); }

int SweepPage::lineCount() const { return m_latency->graphCount(); }

void SweepPage::setResults(std::vector<mnv2::BenchResult> results) {
  m_results = std::move(results);
  m_status->setText(
      QStringLiteral("%1 points in %2; host wall time per run (input upload to logits download), median of each "
                     "point's timed runs")
          .arg(m_results.size())
          .arg(m_results.empty() ? QStringLiteral("—") : precisionName(m_results.front().config.precision)));
  rebuild();
}

void SweepPage::rebuild() {
  const bool bySize = m_xAxis->currentIndex() == 1;
  for (QCustomPlot* plot : {m_latency, m_throughput}) {
    plot->clearGraphs();
    plot->xAxis->setLabel(bySize ? QStringLiteral("input pixels (height x width)") : QStringLiteral("batch size"));
    applyLogScale(plot->xAxis, true);
  }
  // One line per (backend, the other parameter), points ordered along x.
  std::map<std::pair<std::string, std::string>, std::vector<const mnv2::BenchResult*>> lines;
  for (const auto& r : m_results) {
    const std::string other = bySize ? "batch " + std::to_string(r.config.batch)
                                     : std::to_string(r.config.height) + "x" + std::to_string(r.config.width);
    lines[{runLabel(shownText(r.config.backend), r.config.precision).toStdString(), other}].push_back(&r);
  }
  int index = 0;
  std::map<std::string, int> perBackend;
  for (const auto& [key, points] : lines) {
    const mnv2::BenchConfig& first = points.front()->config;
    const QColor base = runColor(shownText(first.backend), first.precision, index++);
    const int shade = perBackend[first.backend]++;
    const QColor color = base.darker(100 + 35 * shade);
    const QString name = shownText(key.first + ", " + key.second);
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
    plot->rescaleAxes();
    const QCPRange x = plot->xAxis->range();
    plot->xAxis->setRange(x.lower / 1.5, x.upper * 1.5);
    // Head-room above the highest point for the legend (top left), a row per line: it must not hide data.
    const QCPRange y = plot->yAxis->range();
    plot->yAxis->setRange(0, y.upper * (1.15 + 0.07 * plot->legend->itemCount()));
    plot->replot();
  }
}

}  // namespace mnv2::ui
