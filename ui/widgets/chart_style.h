// Colours and axis styling shared by the QCustomPlot charts.
#pragma once

#include <QColor>
#include <QSharedPointer>
#include <QString>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/model.h"

class QCustomPlot;
class QCPAxis;
class QCPAxisTickerText;

namespace mnv2::ui {

// A stable colour per backend (cpu blue, cudnn green, cuda orange); others by position.
QColor seriesColor(const QString& backend, int index);
// A run's colour: its backend's, darker for tf32 and lighter for fp16, so that one backend's runs in
// several modes stay apart in one chart.
QColor runColor(const QString& backend, mnv2::Precision precision, int index);
// Block tick labels ("stem", "b1".."b17", "head") centred under each block of a topology, and the
// x positions between blocks (for separator lines).
QSharedPointer<QCPAxisTickerText> blockTicker(const std::vector<mnv2::Layer>& layers);
std::vector<double> blockBoundaries(const std::vector<mnv2::Layer>& layers);
// One colour per layer kind (depthwise convolutions lighter than the others), shared by the graph and the
// roofline.
QColor layerKindColor(const mnv2::Layer& layer);
void applyLogScale(QCPAxis* axis, bool log);
void applyPlotStyle(QCustomPlot* plot);

}  // namespace mnv2::ui
