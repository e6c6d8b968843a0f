// The Kernel lab's data: the result `mnv2 lab --json FILE` writes (format "mnv2.lab", version 1; the contract is
// in docs and /work/lab-protocol.md), read by the engine's reader (mnv2::read_lab_result, the CLI's too) and held in
// the page's types, and the item models the Kernel lab page shows over it (the per-layer check table, the history of
// kernel versions). No widgets here.
#pragma once

#include <QAbstractListModel>
#include <QAbstractTableModel>
#include <QByteArray>
#include <QColor>
#include <QDateTime>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

#include "mnv2/model.h"

namespace mnv2::ui {

// One compiler message (NVRTC's log, parsed by the engine): `line`/`column` are 1-based, 0 when unknown.
struct LabDiagnostic {
  QString file;
  int line = 0;
  int column = 0;
  QString severity;  // "error" or "warning"
  QString message;
};

// The first element of a layer's output that failed the check.
struct LabFailure {
  qint64 flatIndex = 0;
  std::vector<qint64> coords;  // N, C, H, W of the output (the engine's order)
  double expected = 0;
  double got = 0;  // may be NaN or Inf (they fail the check)
};

struct LabLayer {
  int index = 0;
  QString name;
  QString op;            // "depthwise 3x3 s1"
  QString shape;         // "N,C,H,W" of the output
  bool checked = false;  // the layer has a check object (false when the run stopped before it)
  bool passed = false;
  std::optional<double> maxAbsVsReference, relL2VsReference, maxAbsVsOurs, bound;
  std::optional<LabFailure> firstFailure;
  std::optional<double> userUs, oursUs, cudnnUs;  // CUPTI kernel medians, microseconds; empty when not timed
  std::optional<double> flops, bytes;
};

struct LabEndToEnd {
  std::optional<double> userMs, oursUnfusedMs, oursDefaultMs, cudnnMs;
};

// A whole `mnv2 lab` result. Status values: "passed", "check_failed", "compile_error", "crashed", "timeout",
// "error" (anything else that stopped the run: a module with two __global__ functions, a bad input file).
struct LabResult {
  QString slot, kernelFile, kernelName, sourceSha256, precision, device;
  int batch = 1;
  QString status;
  QString message;
  struct Compile {
    bool present = false;
    bool ok = false;
    bool cached = false;
    double seconds = 0;
    QStringList options;
    QString log;
    std::vector<LabDiagnostic> diagnostics;
  } compile;
  struct Launch {
    bool present = false;
    int block[3] = {0, 0, 0};
    QString gridRule;
    qint64 sharedBytes = 0;
  } launch;
  std::vector<LabLayer> layers;
  std::optional<LabEndToEnd> endToEnd;
  QString computeSanitizerCommand, ncuCommand;
  QString reportJson, reportCsv;

  bool timed() const;  // some layer carries the user's time
  // Sums over the layers that carry them (microseconds); empty when no layer does.
  std::optional<double> totalUserUs() const;
  std::optional<double> totalOursUs() const;
  std::optional<double> totalCudnnUs() const;
  const LabLayer* firstFailingLayer() const;
};

// Reads a result file's bytes through the engine (mnv2::read_lab_result): the format and version first (another is
// refused by name), then every field with its type. Empty, with `error` set (one line, naming the field by its path),
// when the bytes are not such a result.
std::optional<LabResult> parseLabResult(const QByteArray& json, QString* error);

// The slots `mnv2 lab --slot` takes, in the order the page offers them, and "block", which the lab lists but
// refuses: the lab runs the unfused plan, and no slot takes a whole-block step (labSlotRefusal says why).
QStringList labSlots();
QString labSlotRefusal(const QString& slot);  // empty when the slot can be run
// The layers of `topology` a slot replaces (for the layer chooser; the engine decides what runs and refuses
// layers outside the slot with its own message).
std::vector<int> labSlotLayers(const QString& slot, const std::vector<mnv2::Layer>& topology);
// "2,7,10" for the CLI's --layers; a list the user typed is checked with parseLabLayers (empty list: all).
QString formatLabLayers(const std::vector<int>& layers);
std::optional<std::vector<int>> parseLabLayers(const QString& text, QString* error);

// The check table: one row per layer of the result.
class LabLayerTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // What a failure needs first (which layer, which element, expected and got), then the errors, the times, the
  // name: the table is narrow beside the editor.
  enum Column {
    Layer,
    Check,
    Op,
    FirstFailure,
    Expected,
    Got,
    MaxAbs,
    RelL2,
    VsOurs,
    UserUs,
    OursUs,
    CudnnUs,
    Name,
    ColumnCount
  };
  enum Role { PassedRole = Qt::UserRole, LayerIndexRole };

  explicit LabLayerTableModel(QObject* parent = nullptr);
  void setResult(const std::optional<LabResult>& result);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  int rowOfLayer(int layerIndex) const;  // -1 when absent

 private:
  std::vector<LabLayer> m_layers;
};

// One version of the kernel: each Compile, Check or Run of a source the history does not end with adds one;
// the same source again updates the newest version (its status, and its times when the run was timed).
struct LabVersion {
  int number = 0;  // 1-based, in the order made
  QString source;
  QDateTime time;
  QString action;  // "compile", "check", "run"
  QString status;  // the result's status, or "error" when no result came
  QString message;
  std::optional<double> totalUserUs, totalOursUs, totalCudnnUs;  // from the newest timed run of this source
  std::optional<LabResult> result;                               // the newest result of this source
};

class LabHistoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Version, Time, Action, Status, TotalUs, ColumnCount };
  explicit LabHistoryModel(QObject* parent = nullptr);

  // Records one action's outcome on `source`; returns the row of the version it went to.
  int record(const QString& source, const QString& action, const QString& status, const QString& message,
             const std::optional<LabResult>& result, const QDateTime& time = QDateTime::currentDateTime());
  const std::vector<LabVersion>& versions() const { return m_versions; }
  const LabVersion* version(int row) const;
  void clear();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<LabVersion> m_versions;
};

// Colours of the lab's statuses (passed green, failures red, crashes dark red), shared by the table and the page.
QColor labStatusColor(const QString& status);
// "passed", "check failed", "compile error", ...: the status as a person reads it.
QString labStatusText(const QString& status);

}  // namespace mnv2::ui
