// The Kernel lab's result reader and item models (see lab_result_model.h).
#include "models/lab_result_model.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>

namespace mnv2::ui {

namespace {

constexpr int kLabVersion = 1;
const QString kLabFormat = QStringLiteral("mnv2.lab");

// A field that is not what the contract says: the message names it with its path ("layers[3].check.bound").
struct FieldError : std::runtime_error {
  explicit FieldError(const QString& what) : std::runtime_error(what.toStdString()) {}
};

QString typeName(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Null:
      return QStringLiteral("null");
    case QJsonValue::Bool:
      return QStringLiteral("a boolean");
    case QJsonValue::Double:
      return QStringLiteral("a number");
    case QJsonValue::String:
      return QStringLiteral("a string");
    case QJsonValue::Array:
      return QStringLiteral("an array");
    case QJsonValue::Object:
      return QStringLiteral("an object");
    case QJsonValue::Undefined:
      break;
  }
  return QStringLiteral("missing");
}

[[noreturn]] void wrongType(const QString& path, const QString& wanted, const QJsonValue& v) {
  throw FieldError(QStringLiteral("%1 should be %2, is %3").arg(path, wanted, typeName(v)));
}

QString requiredString(const QJsonObject& o, const QString& key, const QString& path) {
  const QJsonValue v = o.value(key);
  if (!v.isString()) wrongType(path + key, QStringLiteral("a string"), v);
  return v.toString();
}

// Optional fields may be absent or null; present, they must have their type.
QString optionalString(const QJsonObject& o, const QString& key, const QString& path) {
  const QJsonValue v = o.value(key);
  if (v.isUndefined() || v.isNull()) return {};
  if (!v.isString()) wrongType(path + key, QStringLiteral("a string"), v);
  return v.toString();
}

std::optional<double> optionalNumber(const QJsonObject& o, const QString& key, const QString& path) {
  const QJsonValue v = o.value(key);
  if (v.isUndefined() || v.isNull()) return std::nullopt;
  if (!v.isDouble()) wrongType(path + key, QStringLiteral("a number or null"), v);
  return v.toDouble();
}

bool requiredBool(const QJsonObject& o, const QString& key, const QString& path) {
  const QJsonValue v = o.value(key);
  if (!v.isBool()) wrongType(path + key, QStringLiteral("true or false"), v);
  return v.toBool();
}

qint64 wholeNumber(const QJsonValue& v, const QString& path) {
  if (!v.isDouble()) wrongType(path, QStringLiteral("a whole number"), v);
  const double d = v.toDouble();
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) wrongType(path, QStringLiteral("a whole number"), v);
  return static_cast<qint64>(d);
}

// An element value: JSON has no NaN or Inf, so a writer gives them as null or as the strings "nan", "inf",
// "-inf"; a bad output is exactly where they appear, so they are read, not refused.
double elementValue(const QJsonObject& o, const QString& key, const QString& path) {
  const QJsonValue v = o.value(key);
  if (v.isDouble()) return v.toDouble();
  if (v.isNull()) return std::numeric_limits<double>::quiet_NaN();
  if (v.isString()) {
    const QString s = v.toString().trimmed().toLower();
    if (s == QLatin1String("nan") || s == QLatin1String("-nan")) return std::numeric_limits<double>::quiet_NaN();
    if (s == QLatin1String("inf") || s == QLatin1String("+inf") || s == QLatin1String("infinity"))
      return std::numeric_limits<double>::infinity();
    if (s == QLatin1String("-inf") || s == QLatin1String("-infinity")) return -std::numeric_limits<double>::infinity();
  }
  wrongType(path + key, QStringLiteral("a number (or null / \"nan\" / \"inf\")"), v);
}

QJsonObject optionalObject(const QJsonObject& o, const QString& key, const QString& path, bool* present) {
  const QJsonValue v = o.value(key);
  *present = false;
  if (v.isUndefined() || v.isNull()) return {};
  if (!v.isObject()) wrongType(path + key, QStringLiteral("an object"), v);
  *present = true;
  return v.toObject();
}

const QStringList& statuses() {
  static const QStringList s = {QStringLiteral("passed"),        QStringLiteral("check_failed"),
                                QStringLiteral("compile_error"), QStringLiteral("crashed"),
                                QStringLiteral("timeout"),       QStringLiteral("error")};
  return s;
}

LabResult readResult(const QJsonObject& root) {
  LabResult r;
  r.status = requiredString(root, QStringLiteral("status"), {});
  if (!statuses().contains(r.status))
    throw FieldError(QStringLiteral("status '%1' is none of %2").arg(r.status, statuses().join(QStringLiteral(", "))));
  r.slot = requiredString(root, QStringLiteral("slot"), {});
  r.message = requiredString(root, QStringLiteral("message"), {});
  r.kernelFile = optionalString(root, QStringLiteral("kernel_file"), {});
  r.kernelName = optionalString(root, QStringLiteral("kernel_name"), {});
  r.sourceSha256 = optionalString(root, QStringLiteral("source_sha256"), {});
  r.precision = optionalString(root, QStringLiteral("precision"), {});
  r.device = optionalString(root, QStringLiteral("device"), {});
  if (root.contains(QStringLiteral("batch")) && !root.value(QStringLiteral("batch")).isNull())
    r.batch = static_cast<int>(wholeNumber(root.value(QStringLiteral("batch")), QStringLiteral("batch")));

  bool present = false;
  const QJsonObject compile = optionalObject(root, QStringLiteral("compile"), {}, &present);
  if (present) {
    const QString p = QStringLiteral("compile.");
    r.compile.present = true;
    r.compile.ok = requiredBool(compile, QStringLiteral("ok"), p);
    if (compile.contains(QStringLiteral("cached")))
      r.compile.cached = requiredBool(compile, QStringLiteral("cached"), p);
    r.compile.seconds = optionalNumber(compile, QStringLiteral("seconds"), p).value_or(0);
    r.compile.log = optionalString(compile, QStringLiteral("log"), p);
    const QJsonValue options = compile.value(QStringLiteral("options"));
    if (!options.isUndefined() && !options.isNull()) {
      if (!options.isArray()) wrongType(p + QStringLiteral("options"), QStringLiteral("an array"), options);
      for (const QJsonValue& o : options.toArray()) {
        if (!o.isString()) wrongType(p + QStringLiteral("options[]"), QStringLiteral("a string"), o);
        r.compile.options << o.toString();
      }
    }
    const QJsonValue diags = compile.value(QStringLiteral("diagnostics"));
    if (!diags.isUndefined() && !diags.isNull()) {
      if (!diags.isArray()) wrongType(p + QStringLiteral("diagnostics"), QStringLiteral("an array"), diags);
      int i = 0;
      for (const QJsonValue& dv : diags.toArray()) {
        const QString dp = QStringLiteral("compile.diagnostics[%1].").arg(i++);
        if (!dv.isObject()) wrongType(dp.chopped(1), QStringLiteral("an object"), dv);
        const QJsonObject d = dv.toObject();
        LabDiagnostic diag;
        diag.file = optionalString(d, QStringLiteral("file"), dp);
        const QJsonValue line = d.value(QStringLiteral("line"));
        diag.line = line.isNull() || line.isUndefined() ? 0 : static_cast<int>(wholeNumber(line, dp + "line"));
        const QJsonValue column = d.value(QStringLiteral("column"));
        diag.column =
            column.isNull() || column.isUndefined() ? 0 : static_cast<int>(wholeNumber(column, dp + "column"));
        diag.severity = requiredString(d, QStringLiteral("severity"), dp);
        diag.message = requiredString(d, QStringLiteral("message"), dp);
        r.compile.diagnostics.push_back(diag);
      }
    }
  }

  const QJsonObject launch = optionalObject(root, QStringLiteral("launch"), {}, &present);
  if (present) {
    r.launch.present = true;
    const QJsonValue block = launch.value(QStringLiteral("block"));
    if (!block.isUndefined() && !block.isNull()) {
      if (!block.isArray() || block.toArray().size() != 3)
        wrongType(QStringLiteral("launch.block"), QStringLiteral("an array of three numbers"), block);
      for (int i = 0; i < 3; ++i)
        r.launch.block[i] = static_cast<int>(wholeNumber(block.toArray().at(i), QStringLiteral("launch.block[]")));
    }
    r.launch.gridRule = optionalString(launch, QStringLiteral("grid_rule"), QStringLiteral("launch."));
    r.launch.sharedBytes = static_cast<qint64>(
        optionalNumber(launch, QStringLiteral("shared_bytes"), QStringLiteral("launch.")).value_or(0));
  }

  const QJsonValue layers = root.value(QStringLiteral("layers"));
  if (!layers.isArray()) wrongType(QStringLiteral("layers"), QStringLiteral("an array"), layers);
  int i = 0;
  for (const QJsonValue& lv : layers.toArray()) {
    const QString lp = QStringLiteral("layers[%1].").arg(i++);
    if (!lv.isObject()) wrongType(lp.chopped(1), QStringLiteral("an object"), lv);
    const QJsonObject l = lv.toObject();
    LabLayer layer;
    layer.index = static_cast<int>(wholeNumber(l.value(QStringLiteral("index")), lp + "index"));
    layer.name = optionalString(l, QStringLiteral("name"), lp);
    layer.op = optionalString(l, QStringLiteral("op"), lp);
    layer.shape = optionalString(l, QStringLiteral("shape"), lp);
    const QJsonObject check = optionalObject(l, QStringLiteral("check"), lp, &present);
    if (present) {
      const QString cp = lp + QStringLiteral("check.");
      layer.checked = true;
      layer.passed = requiredBool(check, QStringLiteral("passed"), cp);
      layer.maxAbsVsReference = optionalNumber(check, QStringLiteral("max_abs_vs_reference"), cp);
      layer.relL2VsReference = optionalNumber(check, QStringLiteral("rel_l2_vs_reference"), cp);
      layer.maxAbsVsOurs = optionalNumber(check, QStringLiteral("max_abs_vs_ours"), cp);
      layer.bound = optionalNumber(check, QStringLiteral("bound"), cp);
      const QJsonObject f = optionalObject(check, QStringLiteral("first_failure"), cp, &present);
      if (present) {
        const QString fp = cp + QStringLiteral("first_failure.");
        LabFailure failure;
        failure.flatIndex = wholeNumber(f.value(QStringLiteral("flat_index")), fp + "flat_index");
        const QJsonValue coords = f.value(QStringLiteral("coords"));
        if (!coords.isArray()) wrongType(fp + "coords", QStringLiteral("an array"), coords);
        for (const QJsonValue& c : coords.toArray()) failure.coords.push_back(wholeNumber(c, fp + "coords[]"));
        failure.expected = elementValue(f, QStringLiteral("expected"), fp);
        failure.got = elementValue(f, QStringLiteral("got"), fp);
        layer.firstFailure = failure;
      }
    }
    layer.userUs = optionalNumber(l, QStringLiteral("user_us"), lp);
    layer.oursUs = optionalNumber(l, QStringLiteral("ours_us"), lp);
    layer.cudnnUs = optionalNumber(l, QStringLiteral("cudnn_us"), lp);
    layer.flops = optionalNumber(l, QStringLiteral("flops"), lp);
    layer.bytes = optionalNumber(l, QStringLiteral("bytes"), lp);
    r.layers.push_back(layer);
  }

  const QJsonObject e2e = optionalObject(root, QStringLiteral("end_to_end"), {}, &present);
  if (present) {
    const QString p = QStringLiteral("end_to_end.");
    LabEndToEnd e;
    e.userMs = optionalNumber(e2e, QStringLiteral("user_ms"), p);
    e.oursUnfusedMs = optionalNumber(e2e, QStringLiteral("ours_unfused_ms"), p);
    e.oursDefaultMs = optionalNumber(e2e, QStringLiteral("ours_default_ms"), p);
    e.cudnnMs = optionalNumber(e2e, QStringLiteral("cudnn_ms"), p);
    r.endToEnd = e;
  }
  const QJsonObject commands = optionalObject(root, QStringLiteral("commands"), {}, &present);
  if (present) {
    r.computeSanitizerCommand =
        optionalString(commands, QStringLiteral("compute_sanitizer"), QStringLiteral("commands."));
    r.ncuCommand = optionalString(commands, QStringLiteral("ncu"), QStringLiteral("commands."));
  }
  const QJsonObject reports = optionalObject(root, QStringLiteral("reports"), {}, &present);
  if (present) {
    r.reportJson = optionalString(reports, QStringLiteral("json"), QStringLiteral("reports."));
    r.reportCsv = optionalString(reports, QStringLiteral("csv"), QStringLiteral("reports."));
  }
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
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return std::nullopt;
  };
  QJsonParseError parseError;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
  if (parseError.error != QJsonParseError::NoError)
    return fail(
        QStringLiteral("the result is not JSON (%1 at byte %2)").arg(parseError.errorString()).arg(parseError.offset));
  if (!doc.isObject()) return fail(QStringLiteral("the result is not a JSON object"));
  const QJsonObject root = doc.object();
  const QJsonValue format = root.value(QStringLiteral("format"));
  const QJsonValue version = root.value(QStringLiteral("version"));
  if (!format.isString() || format.toString() != kLabFormat)
    return fail(
        QStringLiteral("the result's format is %1, not \"%2\": this app reads %2 version %3")
            .arg(format.isString() ? QStringLiteral("\"%1\"").arg(format.toString()) : typeName(format), kLabFormat)
            .arg(kLabVersion));
  if (!version.isDouble() || version.toDouble() != kLabVersion)
    return fail(QStringLiteral("the result is %1 version %2; this app reads version %3 (update the app or mnv2)")
                    .arg(kLabFormat, version.isDouble() ? QString::number(version.toDouble()) : typeName(version))
                    .arg(kLabVersion));
  try {
    return readResult(root);
  } catch (const FieldError& e) {
    return fail(QStringLiteral("the result (%1 version %2) is malformed: %3")
                    .arg(kLabFormat)
                    .arg(kLabVersion)
                    .arg(QString::fromStdString(e.what())));
  }
}

QStringList labSlots() {
  return {QStringLiteral("depthwise"), QStringLiteral("pointwise"),  QStringLiteral("stem"),
          QStringLiteral("pool"),      QStringLiteral("classifier"), QStringLiteral("block")};
}

QString labSlotRefusal(const QString& slot) {
  if (slot == QLatin1String("block"))
    return QStringLiteral(
        "Whole inverted-residual blocks: not yet — the lab offers a block slot once the planner makes whole-block "
        "steps; until then `mnv2 lab --slot block` is refused.");
  return {};
}

std::vector<int> labSlotLayers(const QString& slot, const std::vector<mnv2::Layer>& topology) {
  std::vector<int> out;
  bool stemSeen = false;
  for (const mnv2::Layer& l : topology) {
    bool take = false;
    if (l.kind == mnv2::LayerKind::Conv2d) {
      const bool dw = l.conv.depthwise();
      const bool pw = l.conv.pointwise();
      if (slot == QLatin1String("depthwise"))
        take = dw;
      else if (slot == QLatin1String("pointwise"))
        take = pw;
      else if (slot == QLatin1String("stem"))
        take = !dw && !pw && !stemSeen;  // the first full convolution
      if (!dw && !pw) stemSeen = true;
    } else if (l.kind == mnv2::LayerKind::GlobalAveragePool) {
      take = slot == QLatin1String("pool");
    } else if (l.kind == mnv2::LayerKind::Linear) {
      take = slot == QLatin1String("classifier");
    }
    if (take) out.push_back(l.index);
  }
  return out;
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
