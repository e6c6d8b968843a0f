// The network graph view (see network_graph_view.h).
#include "widgets/network_graph_view.h"

#include "models/report_access.h"

#include "widgets/chart_style.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "models/layer_selection.h"

namespace mnv2::ui {

namespace {

// Light yellow (fast, small) to dark red (slow, large): hot spots read as hot.
QColor heat(double t) {
  static const QColor stops[] = {QColor(255, 255, 204), QColor(254, 217, 118), QColor(253, 141, 60),
                                 QColor(227, 26, 28), QColor(128, 0, 38)};
  t = std::clamp(t, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(static_cast<float>(a.redF() + f * (b.redF() - a.redF())),
                          static_cast<float>(a.greenF() + f * (b.greenF() - a.greenF())),
                          static_cast<float>(a.blueF() + f * (b.blueF() - a.blueF())));
}

// A shorter label for narrow nodes: "exp", "dw", "proj", "conv".
QString compactLabel(const mnv2::Layer& l) {
  const QString full = layerShortLabel(l);
  if (full == QLatin1String("expand")) return QStringLiteral("exp");
  if (full == QLatin1String("project")) return QStringLiteral("proj");
  if (full.startsWith(QLatin1String("dw"))) return QStringLiteral("dw");
  if (full.startsWith(QLatin1String("conv"))) return QStringLiteral("conv");
  return full;
}

const QColor kNoData(228, 228, 228);
const QColor kResidual(230, 120, 20);
constexpr double kErrorFloor = 1e-12;  // rel L2 of 0 has no place on a log scale

bool darkColor(const QColor& c) { return 0.299 * c.red() + 0.587 * c.green() + 0.114 * c.blue() < 140; }

void drawArrowHead(QPainter& p, const QPointF& from, const QPointF& tip, const QColor& color, double size) {
  const QPointF d = tip - from;
  const double len = std::hypot(d.x(), d.y());
  if (len < 1e-6) return;
  const QPointF u = d / len;
  const QPointF n(-u.y(), u.x());
  QPolygonF head;
  head << tip << tip - u * size + n * size * 0.5 << tip - u * size - n * size * 0.5;
  p.save();
  p.setPen(Qt::NoPen);
  p.setBrush(color);
  p.drawPolygon(head);
  p.restore();
}

// Layout constants, pixels.
constexpr double kMarginX = 12;
constexpr double kHeaderHeight = 42;
constexpr double kArcSpace = 36;
constexpr double kLegendHeight = 46;

}  // namespace

NetworkGraphView::NetworkGraphView(LayerSelection* selection, QWidget* parent)
    : QWidget(parent), m_selection(selection) {
  setObjectName(QStringLiteral("networkGraph"));
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  connect(m_selection, &LayerSelection::currentLayerChanged, this, [this] { update(); });
}

void NetworkGraphView::setTopology(std::vector<mnv2::Layer> layers, std::vector<mnv2::LayerStats> stats) {
  m_layers = std::move(layers);
  m_stats = std::move(stats);
  m_report.reset();
  rebuild();
}

void NetworkGraphView::setReport(ReportPtr report) {
  m_report = std::move(report);
  if (m_report) {
    m_layers = m_report->topology;
    m_stats = m_report->layer_stats;
  }
  rebuild();
}

void NetworkGraphView::setDiff(DiffPtr diff) {
  m_diff = std::move(diff);
  rebuild();
}

void NetworkGraphView::setColorBy(ColorBy colorBy) {
  m_colorBy = colorBy;
  rebuild();
}

int NetworkGraphView::residualEdgeCount() const {
  return static_cast<int>(std::count_if(m_edges.begin(), m_edges.end(), [](const Edge& e) { return e.residual; }));
}

void NetworkGraphView::rebuild() {
  m_nodes.clear();
  m_edges.clear();
  m_columnTitles.clear();
  m_columnDetails.clear();
  m_columns = m_rows = 0;
  std::map<int, int> columnOfBlock;
  std::vector<int> rowsInColumn;
  for (const mnv2::Layer& l : m_layers) {
    auto it = columnOfBlock.find(l.block);
    if (it == columnOfBlock.end()) {
      it = columnOfBlock.emplace(l.block, m_columns++).first;
      rowsInColumn.push_back(0);
      m_columnTitles.push_back(blockShortName(shownText(l.block_name)));
      m_columnDetails.emplace_back();
    }
    const int column = it->second;
    m_nodes.push_back(Node{l.index, column, rowsInColumn[static_cast<size_t>(column)]++});
    m_rows = std::max(m_rows, rowsInColumn[static_cast<size_t>(column)]);
    // A column's caption: the output of its last layer, channels and spatial size.
    if (static_cast<size_t>(l.index) < m_stats.size()) {
      const mnv2::Shape& s = m_stats[static_cast<size_t>(l.index)].output;
      m_columnDetails[static_cast<size_t>(column)] =
          s.h > 1 ? QStringLiteral("%1·%2").arg(s.c).arg(s.h) + QChar(0x00B2) : QString::number(s.c);
    }
    for (int input : l.inputs) {
      if (input < 0 || input >= static_cast<int>(m_layers.size())) continue;
      // The add's input that is not the layer right before it is the skip connection.
      const bool residual = l.kind == mnv2::LayerKind::ResidualAdd && input != l.index - 1;
      m_edges.push_back(Edge{input, l.index, residual});
    }
  }

  // The range of the metric, for the colour scale.
  m_logScale = m_colorBy == ColorBy::Time || m_colorBy == ColorBy::Error;
  bool any = false;
  for (const mnv2::Layer& l : m_layers) {
    const std::optional<double> v = value(l.index);
    if (!v || (m_logScale && *v <= 0)) continue;
    m_min = any ? std::min(m_min, *v) : *v;
    m_max = any ? std::max(m_max, *v) : *v;
    any = true;
  }
  if (!any) m_min = m_max = 0;
  if (m_colorBy == ColorBy::Share) m_min = 0;
  layoutNodes();
  update();
  Q_EMIT contentChanged();
}

void NetworkGraphView::layoutNodes() {
  m_rects.assign(m_nodes.size(), QRectF());
  if (m_nodes.empty()) return;
  const double colWidth = (width() - 2 * kMarginX) / m_columns;
  const double available = height() - kHeaderHeight - kArcSpace - kLegendHeight;
  const double rowHeight = std::clamp(available / m_rows, 16.0, 84.0);
  const double nodeWidth = colWidth * 0.84;
  const double nodeHeight = rowHeight * 0.64;
  for (size_t i = 0; i < m_nodes.size(); ++i) {
    const QPointF centre(kMarginX + colWidth * (m_nodes[i].column + 0.5),
                         kHeaderHeight + rowHeight * (m_nodes[i].row + 0.5));
    m_rects[i] = QRectF(centre.x() - nodeWidth / 2, centre.y() - nodeHeight / 2, nodeWidth, nodeHeight);
  }
  m_nodeAreaBottom = kHeaderHeight + rowHeight * m_rows;
}

void NetworkGraphView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  layoutNodes();
}

QRectF NetworkGraphView::nodeRect(int layer) const {
  return layer >= 0 && layer < static_cast<int>(m_rects.size()) ? m_rects[static_cast<size_t>(layer)] : QRectF();
}

int NetworkGraphView::layerAt(const QPointF& pos) const {
  for (size_t i = 0; i < m_rects.size(); ++i)
    if (m_rects[i].adjusted(-2, -2, 2, 2).contains(pos)) return m_nodes[i].layer;
  return -1;
}

std::optional<double> NetworkGraphView::value(int layer) const {
  switch (m_colorBy) {
    case ColorBy::Time:
    case ColorBy::Share: {
      if (!m_report) return std::nullopt;
      const LayerTiming t = layerTiming(*m_report, layer);
      if (!t.step) return std::nullopt;
      // A fused step's layers all take the step's colour.
      return m_colorBy == ColorBy::Time ? t.step->time_ns.median / 1000.0 : t.step->share * 100.0;
    }
    case ColorBy::Error: {
      if (!m_diff || layer < 0 || layer >= static_cast<int>(m_diff->layers.size())) return std::nullopt;
      const mnv2::LayerDiff& d = m_diff->layers[static_cast<size_t>(layer)];
      if (!d.compared) return std::nullopt;
      return std::isfinite(d.error.rel_l2) ? std::max(d.error.rel_l2, kErrorFloor) : 1.0;
    }
    case ColorBy::Kind:
      return std::nullopt;
  }
  return std::nullopt;
}

QColor NetworkGraphView::colorOf(int layer) const {
  if (m_colorBy == ColorBy::Kind) return layerKindColor(m_layers[static_cast<size_t>(layer)]);
  const std::optional<double> v = value(layer);
  if (!v) return kNoData;
  double t = 0.5;
  if (m_max > m_min) {
    t = m_logScale ? (std::log10(*v) - std::log10(m_min)) / (std::log10(m_max) - std::log10(m_min))
                   : (*v - m_min) / (m_max - m_min);
  }
  return heat(t);
}

QString NetworkGraphView::legendText() const {
  switch (m_colorBy) {
    case ColorBy::Kind:
      return QStringLiteral("colour: layer kind");
    case ColorBy::Time:
      if (!m_report) return QStringLiteral("colour: median time per layer — no run yet (grey)");
      return QStringLiteral("colour: median time per layer, µs, log scale: %1 – %2")
          .arg(m_min, 0, 'f', 1)
          .arg(m_max, 0, 'f', 1);
    case ColorBy::Share:
      if (!m_report) return QStringLiteral("colour: share of the sum of layer medians — no run yet (grey)");
      return QStringLiteral("colour: share of the sum of layer medians, %: 0 – %1").arg(m_max, 0, 'f', 2);
    case ColorBy::Error:
      if (!m_diff) return QStringLiteral("colour: output error — no diff yet (grey)");
      return QStringLiteral("colour: rel L2 error of %1 vs %2, log scale: %3 – %4; grey: not compared")
          .arg(shownText(m_diff->backend), shownText(m_diff->reference))
          .arg(m_min, 0, 'e', 1)
          .arg(m_max, 0, 'e', 1);
  }
  return {};
}

void NetworkGraphView::paintLegend(QPainter& p, const QRectF& area) const {
  p.save();
  p.setBrush(Qt::NoBrush);
  QFont f = font();
  f.setPixelSize(12);
  p.setFont(f);
  p.setPen(QColor(60, 60, 60));
  double x = area.left();
  const double y = area.top() + 8;
  if (m_colorBy == ColorBy::Kind) {
    struct Swatch {
      QString name;
      QColor color;
    };
    mnv2::Layer dw, pw;
    dw.conv.groups = dw.conv.in_channels = dw.conv.out_channels = 2;
    const Swatch swatches[] = {{QStringLiteral("Conv2d"), layerKindColor(pw)},
                               {QStringLiteral("Conv2d depthwise"), layerKindColor(dw)},
                               {QStringLiteral("ReLU6"), QColor(181, 217, 156)},
                               {QStringLiteral("ResidualAdd"), QColor(245, 133, 24)},
                               {QStringLiteral("GlobalAveragePool"), QColor(157, 117, 93)},
                               {QStringLiteral("Linear"), QColor(178, 121, 162)}};
    for (const Swatch& s : swatches) {
      p.fillRect(QRectF(x, y, 14, 14), s.color);
      p.drawText(QPointF(x + 18, y + 12), s.name);
      x += 26 + p.fontMetrics().horizontalAdvance(s.name);
    }
  } else {
    const QString text = legendText();
    p.drawText(QPointF(x, y + 12), text);
    x += p.fontMetrics().horizontalAdvance(text) + 14;
    const QRectF bar(x, y, 220, 14);
    for (int i = 0; i < static_cast<int>(bar.width()); ++i)
      p.fillRect(QRectF(bar.left() + i, bar.top(), 1.5, bar.height()), heat(i / bar.width()));
    p.setPen(QColor(150, 150, 150));
    p.drawRect(bar);
    p.setPen(QColor(60, 60, 60));
    const QString lo = m_colorBy == ColorBy::Error ? QStringLiteral("small") : QStringLiteral("fast");
    const QString hi = m_colorBy == ColorBy::Error ? QStringLiteral("large") : QStringLiteral("slow");
    p.drawText(QPointF(bar.left(), bar.bottom() + 14), lo);
    p.drawText(QPointF(bar.right() - p.fontMetrics().horizontalAdvance(hi), bar.bottom() + 14), hi);
    x = bar.right() + 16;
    p.fillRect(QRectF(x, y, 14, 14), kNoData);
    p.drawText(QPointF(x + 18, y + 12), QStringLiteral("no data"));
    x += 26 + p.fontMetrics().horizontalAdvance(QStringLiteral("no data"));
  }
  x += 10;
  p.setPen(QPen(kResidual, 2));
  p.drawLine(QPointF(x, y + 7), QPointF(x + 24, y + 7));
  p.setPen(QColor(60, 60, 60));
  p.drawText(QPointF(x + 30, y + 12), QStringLiteral("residual connection"));
  p.restore();
}

void NetworkGraphView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  if (m_nodes.empty()) {
    p.setPen(QColor(120, 120, 120));
    p.drawText(rect(), Qt::AlignCenter, QStringLiteral("No model loaded"));
    return;
  }
  if (m_rects.size() != m_nodes.size()) layoutNodes();

  // Column captions: block name, then the block's output (channels · spatial size²).
  const double colWidth = (width() - 2 * kMarginX) / m_columns;
  QFont title = font();
  title.setPixelSize(12);
  title.setBold(true);
  QFont small = font();
  small.setPixelSize(10);
  for (int c = 0; c < m_columns; ++c) {
    const QRectF cell(kMarginX + colWidth * c, 4, colWidth, 16);
    p.setFont(title);
    p.setPen(QColor(40, 40, 40));
    p.drawText(cell, Qt::AlignCenter, m_columnTitles[static_cast<size_t>(c)]);
    p.setFont(small);
    p.setPen(QColor(110, 110, 110));
    p.drawText(cell.translated(0, 16), Qt::AlignCenter, m_columnDetails[static_cast<size_t>(c)]);
    if (c % 2)
      p.fillRect(QRectF(cell.left(), kHeaderHeight - 4, cell.width(), m_nodeAreaBottom - kHeaderHeight + 4),
                 QColor(246, 248, 252));
  }

  // Edges under the nodes.
  const double arrow = std::clamp(m_rects.front().height() * 0.28, 4.0, 8.0);
  for (const Edge& e : m_edges) {
    const QRectF& a = m_rects[static_cast<size_t>(e.from)];
    const QRectF& b = m_rects[static_cast<size_t>(e.to)];
    QPainterPath path;
    QPointF beforeTip, tip;
    if (e.residual) {
      // Skip connection: an arc under the columns, from the block's input to its add.
      const QPointF start(a.center().x(), a.bottom());
      tip = QPointF(b.center().x(), b.bottom());
      const double depth = m_nodeAreaBottom + kArcSpace * 0.75;
      path.moveTo(start);
      path.cubicTo(QPointF(start.x(), depth), QPointF(tip.x(), depth), tip);
      beforeTip = QPointF(tip.x(), tip.y() + 10);
      p.setPen(QPen(kResidual, 2));
    } else if (m_nodes[static_cast<size_t>(e.from)].column == m_nodes[static_cast<size_t>(e.to)].column) {
      const QPointF start(a.center().x(), a.bottom());
      tip = QPointF(b.center().x(), b.top());
      path.moveTo(start);
      path.lineTo(tip);
      beforeTip = start;
      p.setPen(QPen(QColor(130, 130, 130), 1.2));
    } else {
      // From the bottom of one block to the top of the next.
      const QPointF start(a.right(), a.center().y());
      tip = QPointF(b.left(), b.center().y());
      const double dx = (tip.x() - start.x()) * 0.6;
      path.moveTo(start);
      path.cubicTo(QPointF(start.x() + dx, start.y()), QPointF(tip.x() - dx, tip.y()), tip);
      beforeTip = QPointF(tip.x() - dx, tip.y());
      p.setPen(QPen(QColor(170, 170, 170), 1.0));
    }
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    drawArrowHead(p, beforeTip, tip, p.pen().color(), arrow);
  }

  // Nodes.
  const int selected = m_selection->currentLayer();
  const int firstDivergent = m_diff && m_colorBy == ColorBy::Error ? m_diff->first_divergent_layer : -1;
  QFont label = font();
  label.setPixelSize(static_cast<int>(std::clamp(m_rects.front().height() * 0.45, 8.0, 12.0)));
  p.setFont(label);
  for (size_t i = 0; i < m_nodes.size(); ++i) {
    const int layer = m_nodes[i].layer;
    const QRectF& r = m_rects[i];
    const QColor fill = colorOf(layer);
    QPen border(QColor(90, 90, 90), 1);
    if (m_colorBy == ColorBy::Error && !value(layer)) border.setStyle(Qt::DashLine);
    if (layer == firstDivergent) border = QPen(QColor(200, 0, 0), 2.5);
    if (layer == selected) border = QPen(QColor(20, 20, 20), 3);
    p.setPen(border);
    p.setBrush(fill);
    p.drawRoundedRect(r, 4, 4);
    p.setPen(darkColor(fill) ? Qt::white : QColor(20, 20, 20));
    const mnv2::Layer& l = m_layers[static_cast<size_t>(layer)];
    QString text = layerShortLabel(l);
    if (p.fontMetrics().horizontalAdvance(text) > r.width() - 4) text = compactLabel(l);
    text = p.fontMetrics().elidedText(text, Qt::ElideRight, static_cast<int>(r.width() - 4));
    p.drawText(r, Qt::AlignCenter, text);
  }

  paintLegend(p, QRectF(kMarginX, m_nodeAreaBottom + kArcSpace + 8, width() - 2 * kMarginX, kLegendHeight - 6));
}

QString NetworkGraphView::layerDetails(int layer) const {
  if (layer < 0 || layer >= static_cast<int>(m_layers.size())) return {};
  const mnv2::Layer& l = m_layers[static_cast<size_t>(layer)];
  QString text = QStringLiteral("<b>#%1 %2</b> — %3")
                     .arg(layer)
                     .arg(shownText(l.name).toHtmlEscaped(), shownText(mnv2::describe(l)).toHtmlEscaped());
  if (static_cast<size_t>(layer) < m_stats.size()) {
    const mnv2::LayerStats& s = m_stats[static_cast<size_t>(layer)];
    text += QStringLiteral("<br>output %1 · %2 params · %3 MACs")
                .arg(shapeText(s.output), groupedNumber(s.params), groupedNumber(s.macs));
  }
  if (m_report) text += QStringLiteral("<br>") + layerTimingToolTip(*m_report, layer);
  if (m_diff && layer < static_cast<int>(m_diff->layers.size())) {
    const mnv2::LayerDiff& d = m_diff->layers[static_cast<size_t>(layer)];
    text += d.compared ? QStringLiteral("<br>%1 vs %2: rel L2 %3, max abs %4, cosine %5")
                             .arg(shownText(m_diff->backend), shownText(m_diff->reference))
                             .arg(d.error.rel_l2, 0, 'e', 2)
                             .arg(d.error.max_abs, 0, 'e', 2)
                             .arg(cosineText(d.error.cosine))
                       : QStringLiteral("<br>output not compared (fused away)");
  }
  return text;
}

void NetworkGraphView::mousePressEvent(QMouseEvent* event) {
  const int layer = layerAt(event->position());
  if (layer >= 0) m_selection->setCurrentLayer(layer);
  QWidget::mousePressEvent(event);
}

bool NetworkGraphView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int layer = layerAt(help->pos());
    if (layer >= 0)
      QToolTip::showText(help->globalPos(), layerDetails(layer), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(event);
}

// ---- GraphPage ---------------------------------------------------------------------------------------

GraphPage::GraphPage(LayerSelection* selection, QWidget* parent) : QWidget(parent), m_selection(selection) {
  m_view = new NetworkGraphView(selection, this);
  m_color = new QComboBox(this);
  m_color->setObjectName(QStringLiteral("graphColor"));
  m_color->addItem(QStringLiteral("time"), static_cast<int>(NetworkGraphView::ColorBy::Time));
  m_color->addItem(QStringLiteral("share"), static_cast<int>(NetworkGraphView::ColorBy::Share));
  m_color->addItem(QStringLiteral("error"), static_cast<int>(NetworkGraphView::ColorBy::Error));
  m_color->addItem(QStringLiteral("kind"), static_cast<int>(NetworkGraphView::ColorBy::Kind));
  m_info = new QLabel(QStringLiteral("One column per block (stem, bottlenecks b1–b17, head; caption: output channels · "
                                     "size²), layers top to bottom; orange arcs are the residual connections. Hover a "
                                     "node for its figures, click it to select the layer."),
                      this);
  m_info->setWordWrap(true);
  m_info->setStyleSheet(QStringLiteral("color: #555;"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(QStringLiteral("Colour by"), this));
  bar->addWidget(m_color);
  bar->addWidget(m_info, 1);
  m_details = new QLabel(QStringLiteral("Click a node (or a row, or a bar) to see the layer's figures here."), this);
  m_details->setObjectName(QStringLiteral("graphDetails"));
  m_details->setWordWrap(true);
  m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_details->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  m_details->setFrameShape(QFrame::StyledPanel);
  m_details->setMinimumHeight(90);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(m_view, 1);
  layout->addWidget(m_details);
  connect(selection, &LayerSelection::currentLayerChanged, this, [this] { showDetails(); });
  // A new run (or report, diff, colouring) changes the figures: the panel follows at once, not at the next click.
  connect(m_view, &NetworkGraphView::contentChanged, this, [this] { showDetails(); });
  connect(m_color, &QComboBox::currentIndexChanged, this,
          [this] { m_view->setColorBy(static_cast<NetworkGraphView::ColorBy>(m_color->currentData().toInt())); });
}

void GraphPage::showDetails() {
  const QString text = m_view->layerDetails(m_selection->currentLayer());
  m_details->setText(
      text.isEmpty() ? QStringLiteral("Click a node (or a row, or a bar) to see the layer's figures here.") : text);
}

void GraphPage::setColorBy(NetworkGraphView::ColorBy colorBy) {
  m_color->setCurrentIndex(std::max(0, m_color->findData(static_cast<int>(colorBy))));
}

}  // namespace mnv2::ui
