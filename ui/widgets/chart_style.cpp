// Chart styling (see chart_style.h).
#include "widgets/chart_style.h"

#include <qcustomplot.h>

#include "models/report_access.h"

namespace mnv2::ui {

QColor layerKindColor(const mnv2::Layer& l) {
  switch (l.kind) {
    case mnv2::LayerKind::Conv2d:
      return l.conv.depthwise() ? QColor(158, 202, 233) : QColor(76, 120, 168);
    case mnv2::LayerKind::ReLU6:
    case mnv2::LayerKind::ReLU:
      return QColor(181, 217, 156);
    case mnv2::LayerKind::ResidualAdd:
      return QColor(245, 133, 24);
    case mnv2::LayerKind::GlobalAveragePool:
      return QColor(157, 117, 93);
    case mnv2::LayerKind::Linear:
      return QColor(178, 121, 162);
  }
  return Qt::gray;
}

QColor seriesColor(const QString& backend, int index) {
  if (backend == QLatin1String("cpu")) return QColor(60, 120, 200);
  if (backend == QLatin1String("cpu-ref")) return QColor(110, 110, 170);
  if (backend == QLatin1String("cudnn")) return QColor(90, 160, 50);
  if (backend == QLatin1String("cuda")) return QColor(230, 140, 30);
  static const QColor others[] = {QColor(150, 90, 180), QColor(200, 70, 90), QColor(60, 170, 170),
                                  QColor(120, 120, 120)};
  return others[index % 4];
}

QColor runColor(const QString& backend, mnv2::Precision precision, int index) {
  const QColor base = seriesColor(backend, index);
  switch (precision) {
    case mnv2::Precision::fp32:
      return base;
    case mnv2::Precision::tf32:
      return base.darker(145);
    case mnv2::Precision::fp16:
      return base.lighter(140);
  }
  return base;
}

QSharedPointer<QCPAxisTickerText> blockTicker(const std::vector<mnv2::Layer>& layers) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t i = 0; i < layers.size();) {
    size_t end = i;
    while (end + 1 < layers.size() && layers[end + 1].block == layers[i].block) ++end;
    ticker->addTick((layers[i].index + layers[end].index) / 2.0, blockShortName(shownText(layers[i].block_name)));
    i = end + 1;
  }
  return ticker;
}

std::vector<double> blockBoundaries(const std::vector<mnv2::Layer>& layers) {
  std::vector<double> out;
  for (size_t i = 1; i < layers.size(); ++i)
    if (layers[i].block != layers[i - 1].block) out.push_back(layers[i].index - 0.5);
  return out;
}

void applyLogScale(QCPAxis* axis, bool log) {
  axis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (log) {
    auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
    ticker->setLogBase(10);
    ticker->setSubTickCount(8);
    axis->setTicker(ticker);
    axis->setNumberFormat(QStringLiteral("gb"));
    axis->setNumberPrecision(0);
  } else {
    axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    axis->setNumberFormat(QStringLiteral("g"));
    axis->setNumberPrecision(6);
  }
}

void applyPlotStyle(QCustomPlot* plot) {
  plot->setNoAntialiasingOnDrag(true);
  plot->setBackground(Qt::white);
  for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
    axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::SolidLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
    axis->setBasePen(QPen(QColor(120, 120, 120)));
    axis->setTickPen(QPen(QColor(120, 120, 120)));
    axis->setSubTickPen(QPen(QColor(160, 160, 160)));
  }
  plot->legend->setBrush(QColor(255, 255, 255, 220));
  plot->legend->setBorderPen(QPen(QColor(200, 200, 200)));
}

}  // namespace mnv2::ui
