// The Kernel lab's result reader and item models (see lab_result_model.h).
#include "models/lab_result_model.h"

#include <QRegularExpression>
#include <algorithm>
#include <cmath>
#include <exception>

#include "mnv2/lab.h"  // the reader

namespace mnv2::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The engine's result (mnv2::read_lab_result, the one reader of the document) as the page's types.
LabResult fromEngine(const mnv2::LabResult& e) {
  LabResult r;
  r.slot = qs(e.slot);
  r.kernelFile = qs(e.kernel_file);
  r.kernelName = qs(e.kernel_name);
  r.sourceSha256 = qs(e.source_sha256);
  r.precision = qs(e.precision);
  r.device = qs(e.device);
  r.batch = e.batch;
  r.status = qs(e.status);
  r.message = qs(e.message);
  if (e.compile) {
    r.compile.present = true;
    r.compile.ok = e.compile->ok;
    r.compile.cached = e.compile->cached;
    r.compile.seconds = e.compile->seconds;
    for (const std::string& o : e.compile->options) r.compile.options << qs(o);
    r.compile.log = qs(e.compile->log);
    for (const mnv2::LabDiagnostic& d : e.compile->diagnostics)
      r.compile.diagnostics.push_back(LabDiagnostic{qs(d.file), d.line, d.column, qs(d.severity), qs(d.message)});
  }
  if (e.has_launch) {
    r.launch.present = true;
    for (int i = 0; i < 3; ++i) r.launch.block[i] = e.block[i];
    r.launch.gridRule = qs(e.grid_rule);
    r.launch.sharedBytes = e.shared_bytes;
  }
  for (const mnv2::LabLayer& l : e.layers) {
    LabLayer layer;
    layer.index = l.index;
    layer.name = qs(l.name);
    layer.op = qs(l.op);
    layer.shape = qs(l.shape);
    if (l.check) {
      layer.checked = true;
      layer.passed = l.check->passed;
      layer.maxAbsVsReference = l.check->max_abs_vs_reference;
      layer.relL2VsReference = l.check->rel_l2_vs_reference;
      layer.maxAbsVsOurs = l.check->max_abs_vs_ours;
      layer.bound = l.check->bound;
      if (const auto& f = l.check->first_failure)
        layer.firstFailure =
            LabFailure{f->flat_index, std::vector<qint64>(f->coords.begin(), f->coords.end()), f->expected, f->got};
    }
    layer.userUs = l.user_us;
    layer.oursUs = l.ours_us;
    layer.cudnnUs = l.cudnn_us;
    layer.flops = l.flops;
    layer.bytes = l.bytes;
    r.layers.push_back(layer);
  }
  if (e.end_to_end)
    r.endToEnd = LabEndToEnd{e.end_to_end->user_ms, e.end_to_end->ours_unfused_ms, e.end_to_end->ours_default_ms,
                             e.end_to_end->cudnn_ms};
  r.computeSanitizerCommand = qs(e.compute_sanitizer_command);
  r.ncuCommand = qs(e.ncu_command);
  r.reportJson = qs(e.report_json);
  r.reportCsv = qs(e.report_csv);
  return r;
}

std::optional<double> sumOf(const std::vector<LabLayer>& layers, std::optional<double> LabLayer::*field) {
  std::optional<double> sum;
  for (const LabLayer& l : layers)
    if (l.*field) sum = sum.value_or(0) + *(l.*field);
  return sum;
}

QString number(double v, int precision = 3) {
  if (std::isnan(v)) return QStringLiteral("NaN");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("+Inf") : QStringLiteral("−Inf");
  return QString::number(v, 'g', precision);
}

QString optionalText(const std::optional<double>& v, int precision = 3) {
  return v ? number(*v, precision) : QStringLiteral("—");
}

}  // namespace

bool LabResult::timed() const {
  return std::any_of(layers.begin(), layers.end(), [](const LabLayer& l) { return l.userUs.has_value(); });
}
std::optional<double> LabResult::totalUserUs() const { return sumOf(layers, &LabLayer::userUs); }
std::optional<double> LabResult::totalOursUs() const { return sumOf(layers, &LabLayer::oursUs); }
std::optional<double> LabResult::totalCudnnUs() const { return sumOf(layers, &LabLayer::cudnnUs); }
const LabLayer* LabResult::firstFailingLayer() const {
  for (const LabLayer& l : layers)
    if (l.checked && !l.passed) return &l;
  return nullptr;
}

std::optional<LabResult> parseLabResult(const QByteArray& json, QString* error) {
  try {
    return fromEngine(mnv2::read_lab_result(json.toStdString()));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return std::nullopt;
  }
}

// The slots, their refusals and their layers as the engine's lab defines them (mnv2/lab.h): asked, not restated.
QStringList labSlots() {
  QStringList out;
  for (const mnv2::LabSlot& s : mnv2::lab_slots()) out << QString::fromStdString(s.name);
  return out;
}

QString labSlotRefusal(const QString& slot) {
  for (const mnv2::LabSlot& s : mnv2::lab_slots())
    if (s.name == slot.toStdString())
      return s.why_not.empty() ? QString()
                               : QStringLiteral("%1 (%2): not yet — %3")
                                     .arg(slot, QString::fromStdString(s.op), QString::fromStdString(s.why_not));
  return QStringLiteral("unknown slot '%1'").arg(slot);
}

std::vector<int> labSlotLayers(const QString& slot, const std::vector<mnv2::Layer>& topology) {
  return mnv2::lab_slot_layers(topology, slot.toStdString());
}

QString formatLabLayers(const std::vector<int>& layers) {
  QStringList parts;
  for (int l : layers) parts << QString::number(l);
  return parts.join(QLatin1Char(','));
}

std::optional<std::vector<int>> parseLabLayers(const QString& text, QString* error) {
  std::vector<int> out;
  for (const QString& part : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
    bool ok = false;
    const int v = part.toInt(&ok);
    if (!ok || v < 0) {
      if (error)
        *error = QStringLiteral("layers must be layer numbers separated by commas (e.g. 2,7), not '%1'").arg(part);
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

QColor labStatusColor(const QString& status) {
  if (status == QLatin1String("passed")) return QColor(40, 140, 60);
  if (status == QLatin1String("compiled")) return QColor(60, 110, 170);
  if (status == QLatin1String("check_failed") || status == QLatin1String("compile_error") ||
      status == QLatin1String("error"))
    return QColor(200, 40, 40);
  if (status == QLatin1String("crashed") || status == QLatin1String("timeout")) return QColor(130, 0, 0);
  return QColor(110, 110, 110);
}

QString labStatusText(const QString& status) {
  if (status == QLatin1String("check_failed")) return QStringLiteral("check failed");
  if (status == QLatin1String("compile_error")) return QStringLiteral("compile error");
  if (status == QLatin1String("timeout")) return QStringLiteral("timed out");
  return status;
}

// ---- the check table ----------------------------------------------------------------------------------

LabLayerTableModel::LabLayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LabLayerTableModel::setResult(const std::optional<LabResult>& result) {
  beginResetModel();
  m_layers = result ? result->layers : std::vector<LabLayer>{};
  endResetModel();
}

int LabLayerTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_layers.size());
}
int LabLayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

int LabLayerTableModel::rowOfLayer(int layerIndex) const {
  for (size_t i = 0; i < m_layers.size(); ++i)
    if (m_layers[i].index == layerIndex) return static_cast<int>(i);
  return -1;
}

QVariant LabLayerTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const LabLayer& l = m_layers[static_cast<size_t>(index.row())];
  const std::optional<LabFailure>& f = l.firstFailure;
  if (role == PassedRole) return l.checked ? QVariant(l.passed) : QVariant();
  if (role == LayerIndexRole) return l.index;
  if (role == Qt::ForegroundRole && index.column() == Check && l.checked)
    return labStatusColor(l.passed ? "passed" : "check_failed");
  if (role == Qt::BackgroundRole && l.checked && !l.passed) return QColor(253, 226, 226);
  if (role == Qt::TextAlignmentRole && index.column() != Name && index.column() != Op && index.column() != FirstFailure)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    QString tip = QStringLiteral("layer %1 %2 (%3), output %4").arg(l.index).arg(l.name, l.op, l.shape);
    if (l.bound) tip += QStringLiteral("\nbound: max abs ≤ %1").arg(number(*l.bound));
    if (f)
      tip += QStringLiteral("\nfirst failing element: flat index %1, coordinates (N,C,H,W) %2: expected %3, got %4")
                 .arg(f->flatIndex)
                 .arg(data(index.siblingAtColumn(FirstFailure), Qt::DisplayRole).toString(), number(f->expected, 8),
                      number(f->got, 8));
    return tip;
  }
  if (role != Qt::DisplayRole) return {};
  switch (static_cast<Column>(index.column())) {
    case Layer:
      return l.index;
    case Name:
      return l.name;
    case Op:
      return l.op;
    case Check:
      return !l.checked ? QStringLiteral("not checked") : l.passed ? QStringLiteral("pass") : QStringLiteral("FAIL");
    case MaxAbs:
      return optionalText(l.maxAbsVsReference);
    case RelL2:
      return optionalText(l.relL2VsReference);
    case VsOurs:
      return optionalText(l.maxAbsVsOurs);
    case FirstFailure: {
      if (!f) return QString();
      QStringList c;
      for (qint64 x : f->coords) c << QString::number(x);
      return QStringLiteral("[%1]").arg(c.join(QLatin1Char(',')));
    }
    case Expected:
      return f ? number(f->expected, 6) : QString();
    case Got:
      return f ? number(f->got, 6) : QString();
    case UserUs:
      return optionalText(l.userUs, 4);
    case OursUs:
      return optionalText(l.oursUs, 4);
    case CudnnUs:
      return optionalText(l.cudnnUs, 4);
    case ColumnCount:
      break;
  }
  return {};
}

QVariant LabLayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  // In the order of Column.
  static const char* names[] = {
      "layer",         "check",           "op",       "failing element", "expected", "got", "max abs vs ref",
      "rel L2 vs ref", "max abs vs ours", "yours µs", "ours µs",         "cuDNN µs", "name"};
  static const char* tips[] = {"Topology layer index",
                               "Pass: every element within the bound of the CPU reference; NaN/Inf and unwritten "
                               "(poisoned) elements fail",
                               "The operation the slot runs for this layer",
                               "The first element over the bound: its coordinates (N,C,H,W) in the output",
                               "The reference's value there",
                               "Your kernel's value there",
                               "Largest absolute difference from the CPU reference (float32)",
                               "Relative L2 error against the CPU reference",
                               "Largest absolute difference from our own kernel's output",
                               "Your kernel's median time (CUPTI), microseconds",
                               "Our kernel's median time for this layer (unfused plan), microseconds",
                               "The fused cuDNN baseline's median time for this layer, microseconds",
                               "Layer name"};
  static_assert(std::size(names) == ColumnCount && std::size(tips) == ColumnCount);
  if (section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) return QString::fromUtf8(names[section]);
  if (role == Qt::ToolTipRole) return QString::fromUtf8(tips[section]);
  return {};
}

// ---- the history --------------------------------------------------------------------------------------

LabHistoryModel::LabHistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

int LabHistoryModel::record(const QString& source, const QString& action, const QString& status, const QString& message,
                            const std::optional<LabResult>& result, const QDateTime& time) {
  const bool same = !m_versions.empty() && m_versions.back().source == source;
  if (!same) {
    const int row = static_cast<int>(m_versions.size());
    beginInsertRows({}, row, row);
    LabVersion v;
    v.number = row + 1;
    v.source = source;
    m_versions.push_back(std::move(v));
    endInsertRows();
  }
  LabVersion& v = m_versions.back();
  v.time = time;
  v.action = action;
  v.status = status;
  v.message = message;
  if (result) {
    v.result = result;
    if (result->timed()) {
      v.totalUserUs = result->totalUserUs();
      v.totalOursUs = result->totalOursUs();
      v.totalCudnnUs = result->totalCudnnUs();
    } else if (result->status != QLatin1String("passed")) {
      v.totalUserUs.reset();  // the source failed now: a time from before would not be its own
    }
  }
  const int row = static_cast<int>(m_versions.size()) - 1;
  if (same) Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
  return row;
}

const LabVersion* LabHistoryModel::version(int row) const {
  return row >= 0 && row < static_cast<int>(m_versions.size()) ? &m_versions[static_cast<size_t>(row)] : nullptr;
}

void LabHistoryModel::clear() {
  beginResetModel();
  m_versions.clear();
  endResetModel();
}

int LabHistoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_versions.size());
}
int LabHistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LabHistoryModel::data(const QModelIndex& index, int role) const {
  const LabVersion* v = version(index.row());
  if (!index.isValid() || !v || index.column() >= ColumnCount) return {};
  if (role == Qt::ForegroundRole && index.column() == Status) return labStatusColor(v->status);
  if (role == Qt::ToolTipRole) return v->message;
  if (role == Qt::TextAlignmentRole && (index.column() == Version || index.column() == TotalUs))
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (static_cast<Column>(index.column())) {
    case Version:
      return v->number;
    case Time:
      return v->time.toString(QStringLiteral("HH:mm:ss"));
    case Action:
      return v->action;
    case Status:
      return labStatusText(v->status);
    case TotalUs:
      return v->totalUserUs ? QString::number(*v->totalUserUs, 'f', 1) : QStringLiteral("—");
    case ColumnCount:
      break;
  }
  return {};
}

QVariant LabHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Version:
      return QStringLiteral("version");
    case Time:
      return QStringLiteral("time");
    case Action:
      return QStringLiteral("action");
    case Status:
      return QStringLiteral("status");
    case TotalUs:
      return QStringLiteral("yours, sum of layers µs");
    default:
      break;
  }
  return {};
}

}  // namespace mnv2::ui
