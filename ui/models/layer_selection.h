// The layer the user is looking at, shared by the table, the charts and the graph: selecting a row
// highlights its bar and node, clicking a bar or node selects the row.
#pragma once

#include <QObject>

namespace mnv2::ui {

class LayerSelection : public QObject {
  Q_OBJECT
 public:
  explicit LayerSelection(QObject* parent = nullptr) : QObject(parent) {}
  int currentLayer() const { return m_layer; }

 public Q_SLOTS:
  void setCurrentLayer(int layer) {
    if (layer == m_layer) return;
    m_layer = layer;
    Q_EMIT currentLayerChanged(layer);
  }

 Q_SIGNALS:
  void currentLayerChanged(int layer);  // -1: none

 private:
  int m_layer = -1;
};

}  // namespace mnv2::ui
