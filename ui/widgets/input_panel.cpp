// The image / crop / top-5 panel (see input_panel.h).
#include "widgets/input_panel.h"

#include "models/report_access.h"

#include <qcustomplot.h>
#include <QFileInfo>
#include <QGridLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>

namespace mnv2::ui {

namespace {
constexpr int kPictureSide = 150;  // pixels of the panel's two thumbnails
}

InputPanel::InputPanel(QWidget* parent) : QWidget(parent) {
  m_picture = new QLabel(this);
  m_picture->setObjectName(QStringLiteral("picture"));
  m_crop = new QLabel(this);
  m_crop->setObjectName(QStringLiteral("crop"));
  for (QLabel* l : {m_picture, m_crop}) {
    l->setFixedSize(kPictureSide, kPictureSide);
    l->setAlignment(Qt::AlignCenter);
    l->setFrameShape(QFrame::StyledPanel);
    l->setStyleSheet(QStringLiteral("background: #f4f4f4;"));
  }
  m_picture->setText(QStringLiteral("Open an image\n(File ▸ Open, or drop it here)"));
  m_picture->setWordWrap(true);
  m_crop->setToolTip(QStringLiteral("What the network sees: the centre crop after resizing, before normalisation"));
  auto* imageCaption = new QLabel(QStringLiteral("image"), this);
  auto* cropCaption = new QLabel(QStringLiteral("network input crop"), this);
  for (QLabel* l : {imageCaption, cropCaption}) {
    l->setAlignment(Qt::AlignCenter);
    l->setStyleSheet(QStringLiteral("color: #555;"));
  }
  m_caption = new QLabel(this);
  m_caption->setObjectName(QStringLiteral("imageCaption"));
  m_caption->setWordWrap(true);
  m_caption->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("predictionsPlot"));
  m_plot->setMinimumHeight(160);
  m_plot->setMaximumHeight(190);
  m_plot->plotLayout()->insertRow(0);
  m_plot->plotLayout()->addElement(0, 0,
                                   new QCPTextElement(m_plot, QStringLiteral("Top-5 classes"),
                                                      QFont(font().family(), font().pointSize(), QFont::Bold)));
  m_bars = new QCPBars(m_plot->yAxis, m_plot->xAxis);  // horizontal bars: keys on the left axis
  m_bars->setWidth(0.65);
  m_bars->setPen(Qt::NoPen);
  m_bars->setBrush(QColor(70, 130, 200));
  m_plot->xAxis->setRange(0, 100);
  m_plot->xAxis->setLabel(QStringLiteral("probability %"));
  m_plot->yAxis->setRange(0.4, 5.6);
  m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  m_plot->yAxis->grid()->setVisible(false);
  m_plot->yAxis->setTickLength(0, 0);
  m_plot->yAxis->setSubTickLength(0, 0);
  m_plot->axisRect()->setAutoMargins(QCP::msLeft | QCP::msBottom | QCP::msTop);
  m_plot->axisRect()->setMargins(QMargins(0, 0, 12, 0));
  m_plot->installEventFilter(this);  // the tool-tip names an elided class whole

  auto* grid = new QGridLayout;
  grid->addWidget(m_picture, 0, 0);
  grid->addWidget(m_crop, 0, 1);
  grid->addWidget(imageCaption, 1, 0);
  grid->addWidget(cropCaption, 1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(grid);
  layout->addWidget(m_caption);
  layout->addWidget(m_plot);
  updateChart();
}

void InputPanel::setResult(const ClassifyResult& r) {
  m_image = r.picture;
  m_cropImage = r.crop;
  m_predictions = r.top5;
  m_caption->setText(QStringLiteral("<b>%1</b><br>%2×%3 px, decoded with %4; crop %5×%6; %7 backend, %8 ms")
                         .arg(QFileInfo(r.imagePath).fileName().toHtmlEscaped())
                         .arg(r.originalSize.width())
                         .arg(r.originalSize.height())
                         .arg(r.decoder)
                         .arg(r.crop.width())
                         .arg(r.crop.height())
                         .arg(r.backend)
                         .arg(r.runMs, 0, 'f', 1) +
                     (r.warnings.isEmpty() ? QString()
                                           : QStringLiteral("<br><span style='color:#b00020'>⚠ %1</span>")
                                                 .arg(r.warnings.join(QStringLiteral("; ")).toHtmlEscaped())));
  m_caption->setToolTip(r.imagePath);
  updatePixmaps();
  updateChart();
}

void InputPanel::setMessage(const QString& message) { m_caption->setText(message.toHtmlEscaped()); }

void InputPanel::clear(const QString& message) {
  m_image = QImage();
  m_cropImage = QImage();
  m_predictions.clear();
  m_picture->setPixmap(QPixmap());
  m_crop->setPixmap(QPixmap());
  setMessage(message);
  updateChart();
}

void InputPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  updatePixmaps();
}

QString InputPanel::toolTipAt(const QPoint& pos) const {
  const double key = std::round(m_plot->yAxis->pixelToCoord(pos.y()));
  const int k = 5 - static_cast<int>(key);  // updateChart's keys: the most probable class at 5
  if (k < 0 || k >= static_cast<int>(std::min<size_t>(m_predictions.size(), 5))) return {};
  const mnv2::Prediction& p = m_predictions[static_cast<size_t>(k)];
  return QStringLiteral("%1 (class %2): %3%")
      .arg(shownText(p.label))
      .arg(p.index)
      .arg(p.prob * 100.0, 0, 'f', p.prob < 0.001 ? 3 : 1);
}

bool InputPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString tip = toolTipAt(help->pos());
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), tip, m_plot);
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

void InputPanel::updatePixmaps() {
  const QSize box(kPictureSide - 4, kPictureSide - 4);
  if (!m_image.isNull())
    m_picture->setPixmap(QPixmap::fromImage(m_image.scaled(box, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
  if (!m_cropImage.isNull())
    m_crop->setPixmap(QPixmap::fromImage(m_cropImage.scaled(box, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
}

void InputPanel::updateChart() {
  QVector<double> keys, values;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  m_plot->clearItems();
  const QFontMetrics fm(m_plot->yAxis->tickLabelFont());
  for (size_t k = 0; k < m_predictions.size() && k < 5; ++k) {
    const mnv2::Prediction& p = m_predictions[k];
    const double key = 5.0 - static_cast<double>(k);  // the most probable class on top
    keys << key;
    values << p.prob * 100.0;
    // Labels like "tabby, tabby cat": the first synonym, elided to the panel's width (whole in the tool-tip).
    QString label = shownText(p.label).section(QLatin1Char(','), 0, 0);
    ticker->addTick(key, fm.elidedText(label, Qt::ElideRight, 130));
    auto* text = new QCPItemText(m_plot);
    text->position->setCoords(p.prob * 100.0, key);
    const bool inside = p.prob > 0.55;
    text->setPositionAlignment(Qt::AlignVCenter | (inside ? Qt::AlignRight : Qt::AlignLeft));
    text->setPadding(QMargins(4, 0, 4, 0));
    text->setColor(inside ? Qt::white : Qt::black);
    text->setText(QStringLiteral("%1%").arg(p.prob * 100.0, 0, 'f', p.prob < 0.001 ? 3 : 1));
  }
  m_bars->setData(keys, values);
  m_plot->yAxis->setTicker(ticker);
  m_plot->replot();
}

}  // namespace mnv2::ui
