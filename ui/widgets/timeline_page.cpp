// The timeline tab (see timeline_page.h).
#include "widgets/timeline_page.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "widgets/chart_style.h"

namespace mnv2::ui {

namespace {

// Lane i is drawn around y = -i (top to bottom); a layer span fills most of its lane, a record nested in it
// the lower part, so both stay visible.
constexpr double kLayerHalf = 0.38;
constexpr double kNestedTop = 0.05;

QColor barColor(const mnv2::TimelineBar& bar) {
  if (bar.category == "layer") return QColor(70, 130, 180);
  if (bar.category == "thread") return QColor(100, 160, 200);
  if (bar.category == "kernel") return QColor(230, 140, 40);
  if (bar.category == "memcpy" || bar.category == "memset") return QColor(150, 90, 170);
  return QColor(150, 150, 150);  // summary
}

QString dims(const std::array<int, 3>& d) { return QStringLiteral("%1×%2×%3").arg(d[0]).arg(d[1]).arg(d[2]); }

QString microseconds(int64_t ns) { return QString::number(static_cast<double>(ns) / 1000.0, 'f', 3) + " µs"; }

}  // namespace

TimelinePage::TimelinePage(QWidget* parent) : QWidget(parent) {
  m_run = new QComboBox(this);
  m_run->setObjectName(QStringLiteral("timelineRun"));
  // As wide as its longest item (the list is of the shown runs: a few short labels).
  m_run->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_message = new QLabel(QStringLiteral("No run yet: press Run, or open a report (File ▸ Open report)."), this);
  m_message->setObjectName(QStringLiteral("timelineMessage"));
  m_message->setWordWrap(true);
  auto* reset = new QPushButton(QStringLiteral("Reset view"), this);
  auto* hint = new QLabel(QStringLiteral("drag: pan · wheel: zoom time · hover: details"), this);
  hint->setStyleSheet(QStringLiteral("color: #777;"));
  hint->setWordWrap(true);  // wraps on a narrow window rather than widening it

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("timelinePlot"));
  m_plot->setMinimumHeight(200);
  applyPlotStyle(m_plot);
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Time only: the lanes stay where they are whatever the wheel or a drag does.
  m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
  m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
  m_plot->xAxis->setLabel(QStringLiteral("time from the iteration's start (µs)"));
  m_plot->yAxis->grid()->setVisible(false);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(QStringLiteral("Run:"), this));
  bar->addWidget(m_run);
  bar->addWidget(m_message, 1);
  bar->addWidget(hint);
  bar->addWidget(reset);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(m_plot, 1);

  connect(m_run, &QComboBox::currentIndexChanged, this, [this](int i) { showRun(i); });
  connect(reset, &QPushButton::clicked, this, [this] { resetView(); });
  connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { onMouseMove(e); });
  connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] { updateLabels(); });
}

void TimelinePage::setReports(std::vector<ReportPtr> reports, const std::vector<RunIdentity>& identities) {
  m_reports = std::move(reports);
  m_index = -1;
  {
    const QSignalBlocker block(m_run);
    m_run->clear();
    for (size_t i = 0; i < m_reports.size(); ++i) {
      if (identities.size() == m_reports.size()) {  // the run's name and colour on every page
        m_run->addItem(identities[i].name);
        m_run->setItemData(m_run->count() - 1, identities[i].colour, Qt::DecorationRole);
        continue;
      }
      m_run->addItem(QStringLiteral("%1: %2 · b%3 · %4×%5")
                         .arg(i + 1)
                         .arg(runLabel(*m_reports[i]))
                         .arg(m_reports[i]->config.batch)
                         .arg(m_reports[i]->config.height)
                         .arg(m_reports[i]->config.width));
    }
  }
  showRun(m_reports.empty() ? -1 : 0);
}

void TimelinePage::showRun(int index) {
  m_index = index >= 0 && index < static_cast<int>(m_reports.size()) ? index : -1;
  if (m_index >= 0 && m_run->currentIndex() != m_index) {
    const QSignalBlocker block(m_run);
    m_run->setCurrentIndex(m_index);
  }
  m_layout = m_index >= 0 ? mnv2::timeline_layout(*m_reports[static_cast<size_t>(m_index)]) : mnv2::TimelineLayout{};
  m_message->setText(message());
  rebuild();
}

QString TimelinePage::message() const {
  if (m_index < 0) return QStringLiteral("No run yet: press Run, or open a report (File ▸ Open report).");
  if (!m_layout.has_timeline)
    return QStringLiteral(
        "This report has no timeline (written before timelines were recorded): only the median summary, step "
        "medians laid end to end, is shown. Profile again for a real timeline.");
  QString text = QStringLiteral("Timeline of %1.").arg(shownText(m_layout.description));
  if (m_layout.clamped > 0)
    text += QStringLiteral(" %1 records lay partly outside their layer span and were clamped into it.")
                .arg(m_layout.clamped);
  return text;
}

void TimelinePage::rebuild() {
  m_plot->clearItems();
  m_bars.clear();
  m_labels.clear();
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  int64_t last = 0;
  for (const mnv2::TimelineTrack& track : m_layout.tracks)
    for (const mnv2::TimelineBar& b : track.bars) last = std::max(last, b.end_ns);
  // Milliseconds on the axis for an iteration longer than 10 ms (a cpu run), else microseconds.
  m_unitNs = last > 10'000'000 ? 1e6 : 1e3;
  m_plot->xAxis->setLabel(m_unitNs == 1e6 ? QStringLiteral("time from the iteration's start (ms)")
                                          : QStringLiteral("time from the iteration's start (µs)"));
  for (size_t lane = 0; lane < m_layout.tracks.size(); ++lane) {
    const mnv2::TimelineTrack& track = m_layout.tracks[lane];
    ticker->addTick(-static_cast<double>(lane), shownText(track.name));
    for (const mnv2::TimelineBar& b : track.bars) {
      const double y = -static_cast<double>(lane);
      const double top = b.depth == 0 ? y + kLayerHalf : y + kNestedTop;
      const double bottom = y - kLayerHalf;
      auto* rect = new QCPItemRect(m_plot);
      rect->topLeft->setCoords(static_cast<double>(b.start_ns) / m_unitNs, top);
      rect->bottomRight->setCoords(static_cast<double>(b.end_ns) / m_unitNs, bottom);
      const QColor c = barColor(b);
      rect->setBrush(c);
      rect->setPen(QPen(c.darker(140), 0));
      rect->setSelectable(false);
      m_bars.push_back(ShownBar{static_cast<int>(lane), &b});
      last = std::max(last, b.end_ns);
      if (b.depth == 0) {
        // The layer's name on its bar, shown where the bar is wide enough (updateLabels).
        auto* label = new QCPItemText(m_plot);
        label->position->setCoords(static_cast<double>(b.start_ns + b.end_ns) / (2 * m_unitNs), y + kLayerHalf / 2);
        label->setText(shownText(b.name));
        label->setColor(Qt::white);
        label->setClipToAxisRect(true);
        label->setSelectable(false);
        m_labels.push_back(Label{label, &b});
      }
    }
  }
  m_plot->yAxis->setTicker(ticker);
  m_plot->yAxis->setRange(-static_cast<double>(std::max<size_t>(m_layout.tracks.size(), 1)) + 0.5, 0.5);
  m_plot->xAxis->setRange(0, std::max(1.0, static_cast<double>(last) / m_unitNs * 1.02));
  updateLabels();
  m_plot->replot();
}

void TimelinePage::updateLabels() {
  for (const Label& l : m_labels) {
    const double width = m_plot->xAxis->coordToPixel(static_cast<double>(l.bar->end_ns) / m_unitNs) -
                         m_plot->xAxis->coordToPixel(static_cast<double>(l.bar->start_ns) / m_unitNs);
    const int needed = QFontMetrics(l.text->font()).horizontalAdvance(l.text->text()) + 6;
    l.text->setVisible(width >= needed);
  }
}

QStringList TimelinePage::visibleLabels() const {
  QStringList out;
  for (const Label& l : m_labels)
    if (l.text->visible()) out << l.text->text();
  return out;
}

void TimelinePage::resetView() { rebuild(); }

QString TimelinePage::toolTipAt(const QPoint& pos) const {
  const double t = m_plot->xAxis->pixelToCoord(pos.x());  // in the axis unit
  const double y = m_plot->yAxis->pixelToCoord(pos.y());
  const int lane = static_cast<int>(std::lround(-y));
  const double within = y + lane;  // -0.5 .. 0.5 around the lane's centre
  const mnv2::TimelineBar* hit = nullptr;
  for (const ShownBar& s : m_bars) {
    if (s.lane != lane) continue;
    const mnv2::TimelineBar& b = *s.bar;
    const double top = b.depth == 0 ? kLayerHalf : kNestedTop;
    if (within > top || within < -kLayerHalf) continue;
    if (t < static_cast<double>(b.start_ns) / m_unitNs || t > static_cast<double>(b.end_ns) / m_unitNs) continue;
    if (!hit || b.depth > hit->depth) hit = &b;  // the innermost bar under the pointer
  }
  if (!hit) return {};
  QString text = QStringLiteral("<b>%1</b> (%2)<br>start %3, duration %4")
                     .arg(shownText(hit->name).toHtmlEscaped(), QString::fromStdString(hit->category),
                          microseconds(hit->start_ns), microseconds(hit->duration_ns()));
  if (hit->category == "summary") text += QStringLiteral("<br>median duration, laid end to end (not a timestamp)");
  if (hit->category == "kernel") text += QStringLiteral("<br>grid %1, block %2").arg(dims(hit->grid), dims(hit->block));
  if (hit->bytes > 0) text += QStringLiteral("<br>%1 bytes").arg(hit->bytes);
  const ReportPtr& r = m_reports[static_cast<size_t>(m_index)];
  if (hit->step >= 0 && hit->step < static_cast<int>(r->steps.size()))
    text += QStringLiteral("<br>step %1: %2")
                .arg(hit->step)
                .arg(shownText(r->steps[static_cast<size_t>(hit->step)].name).toHtmlEscaped());
  return text;
}

void TimelinePage::onMouseMove(QMouseEvent* event) {
  const QString text = m_index >= 0 ? toolTipAt(event->pos()) : QString();
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

}  // namespace mnv2::ui
