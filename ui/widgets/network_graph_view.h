// The network as a graph: the layers as nodes in one column per block (stem, the 17 bottlenecks, head),
// edges from Layer::inputs, residual skip connections drawn as arcs under the columns, every node coloured
// by its time, share, output error or kind, with a legend. Clicking a node selects the layer.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "models/report_access.h"

class QComboBox;
class QLabel;

namespace mnv2::ui {

class LayerSelection;

class NetworkGraphView : public QWidget {
  Q_OBJECT
 public:
  enum class ColorBy { Time, Share, Error, Kind };

  explicit NetworkGraphView(LayerSelection* selection, QWidget* parent = nullptr);

  void setTopology(std::vector<mnv2::Layer> layers, std::vector<mnv2::LayerStats> stats);
  void setReport(ReportPtr report);  // its topology replaces the one above; null: no timings
  void setDiff(DiffPtr diff);        // errors for ColorBy::Error; null: none
  void setColorBy(ColorBy colorBy);
  ColorBy colorBy() const { return m_colorBy; }

  int nodeCount() const { return static_cast<int>(m_nodes.size()); }
  int edgeCount() const { return static_cast<int>(m_edges.size()); }
  int residualEdgeCount() const;
  QRectF nodeRect(int layer) const;  // widget coordinates at the current size
  int layerAt(const QPointF& pos) const;
  QString legendText() const;             // what the colours mean, with the range
  QString layerDetails(int layer) const;  // rich text: description, shape, timing, error

  QSize sizeHint() const override { return {1200, 520}; }
  // Fits beside the dock at 1024 px, and under the tabs at 700 px with the Runs panel three rows tall.
  QSize minimumSizeHint() const override { return {480, 200}; }

 Q_SIGNALS:
  void contentChanged();  // a new topology, report, diff or colouring: what a layer's details say may differ

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Node {
    int layer = 0;
    int column = 0;
    int row = 0;
  };
  struct Edge {
    int from = 0;
    int to = 0;
    bool residual = false;
  };

  void rebuild();
  void layoutNodes();
  std::optional<double> value(int layer) const;  // the metric shown, in its display unit
  QColor colorOf(int layer) const;
  void paintLegend(QPainter& p, const QRectF& area) const;

  LayerSelection* m_selection;
  std::vector<mnv2::Layer> m_layers;
  std::vector<mnv2::LayerStats> m_stats;
  ReportPtr m_report;
  DiffPtr m_diff;
  ColorBy m_colorBy = ColorBy::Time;

  std::vector<Node> m_nodes;
  std::vector<Edge> m_edges;
  std::vector<QString> m_columnTitles, m_columnDetails;
  int m_columns = 0;
  int m_rows = 0;
  std::vector<QRectF> m_rects;  // per node, for the current size
  double m_nodeAreaBottom = 0;
  double m_min = 0, m_max = 0;  // range of the metric
  bool m_logScale = false;
};

// The graph tab: the view and a "colour by" choice.
class GraphPage : public QWidget {
  Q_OBJECT
 public:
  explicit GraphPage(LayerSelection* selection, QWidget* parent = nullptr);
  NetworkGraphView* view() const { return m_view; }
  QComboBox* colorCombo() const { return m_color; }
  void setColorBy(NetworkGraphView::ColorBy colorBy);
  QLabel* details() const { return m_details; }

 private:
  void showDetails();  // the selected layer's figures from the shown run, or the hint

  LayerSelection* m_selection;
  NetworkGraphView* m_view;
  QComboBox* m_color;
  QLabel* m_info;
  QLabel* m_details;
};

}  // namespace mnv2::ui
