// The opened image, the network's input crop and the top-5 classes as a bar chart.
#pragma once

#include <QImage>
#include <QWidget>
#include <vector>

#include "run_types.h"

class QLabel;
class QCustomPlot;
class QCPBars;

namespace mnv2::ui {

class InputPanel : public QWidget {
  Q_OBJECT
 public:
  explicit InputPanel(QWidget* parent = nullptr);

  void setResult(const ClassifyResult& result);
  void setMessage(const QString& message);  // shown under the pictures (e.g. while classifying)
  void clear(const QString& message);

  const std::vector<mnv2::Prediction>& predictions() const { return m_predictions; }
  QCustomPlot* predictionsPlot() const { return m_plot; }
  // The top-5 chart's tool-tip at `pos` (plot pixels): the whole class name of the row there, which the axis may
  // show elided, and its probability; empty away from every row.
  QString toolTipAt(const QPoint& pos) const;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void updatePixmaps();
  void updateChart();

  QLabel* m_picture = nullptr;
  QLabel* m_crop = nullptr;
  QLabel* m_caption = nullptr;
  QCustomPlot* m_plot = nullptr;
  QCPBars* m_bars = nullptr;
  QImage m_image;
  QImage m_cropImage;
  std::vector<mnv2::Prediction> m_predictions;
};

}  // namespace mnv2::ui
