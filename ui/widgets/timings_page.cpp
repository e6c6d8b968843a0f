// The timings tab (see timings_page.h).
#include "widgets/timings_page.h"

#include "models/report_access.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>

#include "models/layer_selection.h"
#include "models/run_differences.h"
#include "models/totals_model.h"
#include "widgets/chart_style.h"

namespace mnv2::ui {

namespace {
constexpr int kTitleLines = 4;  // the lines of the title the page shows: a header and three runs
constexpr int kLegendRows = 3;  // the legend's most rows above the plot: more squeezed the bars to a strip
}  // namespace

TimingsPage::TimingsPage(LayerSelection* selection, QWidget* parent) : QWidget(parent), m_selection(selection) {
  m_title = new QLabel(QStringLiteral("No run yet: press Run, or open a report (File ▸ Open report)."), this);
  m_title->setObjectName(QStringLiteral("timingsTitle"));
  m_title->setWordWrap(true);
  m_log = new QCheckBox(QStringLiteral("Log scale"), this);
  m_log->setObjectName(QStringLiteral("logScale"));
  auto* reset = new QPushButton(QStringLiteral("Reset view"), this);
  auto* hint = new QLabel(
      QStringLiteral(
          "drag: pan · wheel: zoom layers · Ctrl+wheel: zoom time · hover: statistics · click: select layer"),
      this);
  hint->setStyleSheet(QStringLiteral("color: #777;"));
  hint->setWordWrap(true);  // wraps on a narrow window rather than widening it

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("timingsPlot"));
  m_plot->setMinimumHeight(150);  // with the totals below, the page fits a 700 px screen beside three rows of runs
  applyPlotStyle(m_plot);
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Wheel and drag move along the layers only, so the time axis keeps its floor and no bar vanishes; Ctrl+wheel
  // zooms the time axis.
  m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
  m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
  connect(m_plot, &QCustomPlot::mouseWheel, this, [this](QWheelEvent* event) {
    m_plot->axisRect()->setRangeZoom(event->modifiers() & Qt::ControlModifier ? Qt::Vertical : Qt::Horizontal);
  });
  m_plot->xAxis->setLabel(QStringLiteral("layer (grouped by block)"));
  m_plot->yAxis->setLabel(QStringLiteral("median time per layer (µs)"));
  m_plot->legend->setVisible(false);
  // The legend in a row of its own above the plot: inside the axis rect it covered bars with three runs.
  m_plot->plotLayout()->insertRow(0);
  m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
  m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
  m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  m_plot->installEventFilter(this);  // the legend's columns follow the plot's width

  m_grouping = new QComboBox(this);
  m_grouping->setObjectName(QStringLiteral("totalsGrouping"));
  m_grouping->addItem(QStringLiteral("per layer kind"));
  m_grouping->addItem(QStringLiteral("per block"));
  m_totalsPlot = new QCustomPlot(this);
  m_totalsPlot->setObjectName(QStringLiteral("totalsPlot"));
  m_totalsPlot->setMinimumHeight(90);
  applyPlotStyle(m_totalsPlot);
  m_totalsPlot->yAxis->setLabel(QStringLiteral("sum of medians (ms)"));
  m_totals = new TotalsModel(this);
  m_totalsView = new QTableView(this);
  m_totalsView->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  m_totalsView->setObjectName(QStringLiteral("totalsTable"));
  m_totalsView->setModel(m_totals);
  m_totalsView->verticalHeader()->hide();
  m_totalsView->verticalHeader()->setDefaultSectionSize(20);
  m_totalsView->horizontalHeader()->setStretchLastSection(true);

  auto* top = new QWidget(this);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  // The title on a row of its own (the page's whole width), at most kTitleLines lines: one line per run made the
  // window taller than a 720p screen with seven runs; the whole title is in its tool-tip.
  m_title->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  m_title->setMaximumHeight(m_title->fontMetrics().lineSpacing() * (kTitleLines + 1));
  topLayout->addWidget(m_title);
  auto* bar = new QHBoxLayout;
  bar->addWidget(hint, 1);
  bar->addWidget(m_log);
  bar->addWidget(reset);
  topLayout->addLayout(bar);
  topLayout->addWidget(m_plot, 1);

  auto* bottom = new QWidget(this);
  auto* bottomLayout = new QVBoxLayout(bottom);
  bottomLayout->setContentsMargins(0, 0, 0, 0);
  auto* totalsBar = new QHBoxLayout;
  totalsBar->addWidget(new QLabel(QStringLiteral("<b>Totals</b>"), this));
  totalsBar->addWidget(m_grouping);
  totalsBar->addStretch(1);
  bottomLayout->addLayout(totalsBar);
  auto* totalsSplit = new QSplitter(Qt::Horizontal, bottom);
  totalsSplit->addWidget(m_totalsPlot);
  totalsSplit->addWidget(m_totalsView);
  totalsSplit->setStretchFactor(0, 3);
  totalsSplit->setStretchFactor(1, 2);
  bottomLayout->addWidget(totalsSplit, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->setObjectName(QStringLiteral("timingsSplitter"));
  split->addWidget(top);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split);

  connect(m_log, &QCheckBox::toggled, this, [this](bool on) { setLogScale(on); });
  connect(reset, &QPushButton::clicked, this, [this] { resetView(); });
  connect(m_grouping, &QComboBox::currentIndexChanged, this, [this](int i) {
    m_totals->setGrouping(i == 0 ? TotalsModel::Grouping::Kind : TotalsModel::Grouping::Block);
    rebuildTotals();
  });
  connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { onMouseMove(e); });
  rebuildPlot();  // the empty state
  connect(m_plot, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* p, int dataIndex, QMouseEvent*) {
    auto* bars = qobject_cast<QCPBars*>(p);
    if (!bars || dataIndex < 0 || dataIndex >= bars->data()->size()) return;
    m_selection->setCurrentLayer(static_cast<int>(bars->data()->at(dataIndex)->key));
  });
  connect(m_selection, &LayerSelection::currentLayerChanged, this, [this](int layer) { highlight(layer); });
}

void TimingsPage::setReports(std::vector<ReportPtr> reports, const QString& title,
                             std::vector<RunIdentity> identities) {
  m_reports = std::move(reports);
  if (identities.size() != m_reports.size()) {
    // Runs outside the history: named apart by what differs, so that two cpu runs do not share one legend entry.
    identities.clear();
    const QStringList names = distinctRunNames(m_reports);
    for (size_t i = 0; i < m_reports.size(); ++i) {
      const mnv2::RunReport& r = *m_reports[i];
      identities.push_back(
          {names[static_cast<qsizetype>(i)], runColor(shownText(r.backend), r.config.precision, static_cast<int>(i))});
    }
  }
  m_identities = std::move(identities);
  setTitle(title);
  rebuildPlot();
  QStringList names;
  for (const RunIdentity& id : m_identities) names << id.name;
  m_totals->setReports(m_reports, names);
  rebuildTotals();
  m_totalsView->resizeColumnsToContents();
}

void TimingsPage::setTitle(const QString& title) {
  m_fullTitle = title;
  const QStringList lines = title.split(QStringLiteral("<br>"));
  QString shown = title;
  if (lines.size() > kTitleLines)
    shown = lines.mid(0, kTitleLines - 1).join(QStringLiteral("<br>")) +
            QStringLiteral("<br><i>… and %1 more lines: hover here for the whole title</i>")
                .arg(lines.size() - (kTitleLines - 1));
  m_title->setText(shown);
  // Even a title shown whole may be cut where its lines wrap on a narrow window.
  m_title->setToolTip(title);
}

bool TimingsPage::logScale() const { return m_log->isChecked(); }

void TimingsPage::setLogScale(bool log) {
  if (m_log->isChecked() != log) {
    m_log->setChecked(log);  // comes back here through toggled()
    return;
  }
  applyLogScale(m_plot->yAxis, log);
  resetView();
}

int TimingsPage::barCount() const {
  int n = 0;
  for (const QCPBars* b : m_bars) n += b->data()->size();
  return n;
}

void TimingsPage::resetView() {
  const int layers = m_reports.empty() ? 0 : static_cast<int>(m_reports.front()->layers.size());
  m_plot->xAxis->setRange(-1, std::max(layers, 1));
  double lo = 0, hi = 0;
  bool any = false;
  for (const QCPBars* b : m_bars) {
    for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it) {
      if (it->value <= 0) continue;
      lo = any ? std::min(lo, it->value) : it->value;
      hi = any ? std::max(hi, it->value) : it->value;
      any = true;
    }
  }
  if (!any) {
    lo = 0.1;
    hi = 1;
  }
  if (logScale())
    m_plot->yAxis->setRange(lo * 0.7, hi * 1.6);
  else
    m_plot->yAxis->setRange(0, hi * 1.08);
  m_plot->replot();
}

void TimingsPage::rebuildPlot() {
  m_plot->clearPlottables();
  m_plot->clearItems();
  m_bars.clear();
  delete m_group;
  m_group = nullptr;
  const int series = static_cast<int>(m_reports.size());
  if (series > 1) {
    m_group = new QCPBarsGroup(m_plot);
    m_group->setSpacingType(QCPBarsGroup::stAbsolute);
    m_group->setSpacing(0);
  }
  for (int i = 0; i < series; ++i) {
    const mnv2::RunReport& r = *m_reports[static_cast<size_t>(i)];
    auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    const RunIdentity& id = m_identities[static_cast<size_t>(i)];
    bars->setName(QStringLiteral("%1 (%2, %3)").arg(id.name, shownText(r.device), shownText(r.timer)));
    const QColor color = id.colour;
    bars->setPen(QPen(color.darker(130), 0.5));
    bars->setBrush(color);
    bars->setWidth(0.84 / series);
    bars->setSelectable(QCP::stSingleData);
    bars->selectionDecorator()->setBrush(QColor(230, 40, 40));
    bars->selectionDecorator()->setPen(QPen(QColor(150, 0, 0), 1.5));
    QVector<double> keys, values;
    for (int l = 0; l < static_cast<int>(r.layers.size()); ++l) {
      const LayerTiming t = layerTiming(r, l);
      if (!t.step || !t.first) continue;  // a fused step's time stands on its first layer
      keys << l;
      values << t.step->time_ns.median / 1000.0;
    }
    bars->setData(keys, values, true);
    if (m_group) bars->setBarsGroup(m_group);
    m_bars.push_back(bars);
  }
  if (!m_reports.empty()) {
    const auto& topology = m_reports.front()->topology;
    m_plot->xAxis->setTicker(blockTicker(topology));
    for (double x : blockBoundaries(topology)) {
      auto* line = new QCPItemStraightLine(m_plot);
      line->setLayer(QStringLiteral("grid"));
      line->setPen(QPen(QColor(200, 200, 200), 0, Qt::DashLine));
      line->point1->setCoords(x, 0);
      line->point2->setCoords(x, 1);
      line->setSelectable(false);
    }
  }
  m_plot->xAxis->grid()->setVisible(false);
  m_plot->legend->setVisible(series > 1);
  layoutLegend();
  // No run: no axis ticks to misread, a sentence instead.
  m_plot->xAxis->setTicks(series > 0);
  m_plot->yAxis->setTicks(series > 0);
  m_plot->xAxis->setTickLabels(series > 0);
  m_plot->yAxis->setTickLabels(series > 0);
  if (series == 0) {
    auto* text = new QCPItemText(m_plot);
    text->setObjectName(QStringLiteral("timingsEmpty"));
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(QStringLiteral("No timings yet: press Run, or open a report."));
    text->setColor(QColor(110, 110, 110));
  }
  resetView();
  highlight(m_selection->currentLayer());
}

bool TimingsPage::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::Resize) layoutLegend();
  return QWidget::eventFilter(watched, event);
}

void TimingsPage::layoutLegend() {
  QCPLegend* legend = m_plot->legend;
  // From scratch: every entry out (a run's, the "more" line), then the runs' back in, one row.
  for (int i = legend->elementCount() - 1; i >= 0; --i)
    if (legend->elementAt(i)) legend->removeAt(i);
  legend->simplify();
  legend->setWrap(0);
  for (QCPBars* bars : m_bars) bars->addToLegend(legend);
  if (m_bars.size() < 2) return;
  // Columns as wide as the widest entry, as many as the plot's width holds.
  int widest = 0;
  for (int i = 0; i < legend->elementCount(); ++i)
    if (QCPLayoutElement* e = legend->elementAt(i)) widest = std::max(widest, e->minimumOuterSizeHint().width());
  const QMargins outer = legend->margins();
  const int room = m_plot->width() - outer.left() - outer.right() - m_plot->plotLayout()->margins().left() -
                   m_plot->plotLayout()->margins().right();
  const int columns = std::max(1, (room + legend->columnSpacing()) / (widest + legend->columnSpacing()));
  // Rows: a sixth of the plot's height (one row on a 720p screen, where the plot keeps its bars), at most kLegendRows.
  int tallest = 1;
  for (int i = 0; i < legend->elementCount(); ++i)
    if (QCPLayoutElement* e = legend->elementAt(i)) tallest = std::max(tallest, e->minimumOuterSizeHint().height());
  const int rows = std::clamp(m_plot->height() / 6 / (tallest + legend->rowSpacing()), 1, kLegendRows);
  const int fits = columns * rows;
  if (static_cast<int>(m_bars.size()) > fits) {
    // The last place says how many runs the legend leaves out; their names and colours are in the title's tool-tip.
    const int named = fits - 1;
    for (int i = named; i < static_cast<int>(m_bars.size()); ++i)
      m_bars[static_cast<size_t>(i)]->removeFromLegend(legend);
    auto* more = new QCPTextElement(
        m_plot, QStringLiteral("… and %1 more runs (hover the title)").arg(static_cast<int>(m_bars.size()) - named),
        legend->font());
    more->setTextColor(QColor(90, 90, 90));
    more->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
    more->setMaximumSize(widest, QWIDGETSIZE_MAX);
    legend->addElement(more);
  }
  legend->setWrap(columns);
  legend->setFillOrder(QCPLegend::foColumnsFirst, true);
}

void TimingsPage::rebuildTotals() {
  m_totalsPlot->clearPlottables();
  const int series = static_cast<int>(m_reports.size());
  const QStringList& groups = m_totals->groups();
  QCPBarsGroup* group = nullptr;
  for (QCPBarsGroup* old : m_totalsPlot->findChildren<QCPBarsGroup*>()) delete old;
  if (series > 1) {
    group = new QCPBarsGroup(m_totalsPlot);
    group->setSpacingType(QCPBarsGroup::stAbsolute);
    group->setSpacing(0);
  }
  double hi = 0;
  for (int i = 0; i < series; ++i) {
    const mnv2::RunReport& r = *m_reports[static_cast<size_t>(i)];
    auto* bars = new QCPBars(m_totalsPlot->xAxis, m_totalsPlot->yAxis);
    const RunIdentity& id = m_identities[static_cast<size_t>(i)];
    const QColor color = id.colour;
    bars->setPen(QPen(color.darker(130), 0.5));
    bars->setBrush(color);
    bars->setWidth(0.8 / series);
    bars->setName(id.name);
    QVector<double> keys, values;
    for (int g = 0; g < groups.size(); ++g) {
      keys << g;
      values << m_totals->medianMs(i, g);
      hi = std::max(hi, values.back());
    }
    bars->setData(keys, values, true);
    if (group) bars->setBarsGroup(group);
  }
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int g = 0; g < groups.size(); ++g)
    ticker->addTick(
        g, m_totals->grouping() == TotalsModel::Grouping::Block ? blockShortName(groups[g]) : kindShortName(groups[g]));
  m_totalsPlot->xAxis->setTicker(ticker);
  // Twenty block names side by side ran into each other ("stemb1"): slanted, they each keep their room.
  m_totalsPlot->xAxis->setTickLabelRotation(m_totals->grouping() == TotalsModel::Grouping::Block ? -60 : 0);
  m_totalsPlot->xAxis->grid()->setVisible(false);
  m_totalsPlot->xAxis->setRange(-0.6, std::max<double>(groups.size(), 1) - 0.4);
  m_totalsPlot->yAxis->setRange(0, hi > 0 ? hi * 1.1 : 1);
  m_totalsPlot->replot();
}

void TimingsPage::highlight(int layer) {
  // A layer fused into a step is shown by the step's bar, which stands on the step's first layer.
  if (!m_reports.empty()) {
    const LayerTiming t = layerTiming(*m_reports.front(), layer);
    if (t.step && !t.first) layer = t.step->layers.front();
  }
  for (QCPBars* bars : m_bars) {
    QCPDataSelection selection;
    for (int i = 0; i < bars->data()->size(); ++i) {
      if (static_cast<int>(bars->data()->at(i)->key) == layer) {
        selection.addDataRange(QCPDataRange(i, i + 1));
        break;
      }
    }
    bars->setSelection(selection);
  }
  m_plot->replot();
}

int TimingsPage::layerAt(const QPoint& pos, int* series) const {
  for (size_t i = 0; i < m_bars.size(); ++i) {
    QVariant details;
    if (m_bars[i]->selectTest(pos, false, &details) < 0) continue;
    const QCPDataSelection hit = details.value<QCPDataSelection>();
    if (hit.isEmpty()) continue;
    const int index = hit.dataRange().begin();
    if (index < 0 || index >= m_bars[i]->data()->size()) continue;
    if (series) *series = static_cast<int>(i);
    return static_cast<int>(m_bars[i]->data()->at(index)->key);
  }
  return -1;
}

void TimingsPage::onMouseMove(QMouseEvent* event) {
  int series = -1;
  const int layer = layerAt(event->pos(), &series);
  if (layer < 0) {
    QToolTip::hideText();
    return;
  }
  // The hovered run first, then the others at the same layer for comparison.
  QString text = layerTimingToolTip(*m_reports[static_cast<size_t>(series)], layer);
  for (size_t r = 0; r < m_reports.size(); ++r)
    if (static_cast<int>(r) != series) text += QStringLiteral("<hr>") + layerTimingToolTip(*m_reports[r], layer);
  QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

}  // namespace mnv2::ui
