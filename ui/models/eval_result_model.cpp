// Accuracy evaluation tables and CSV (see eval_result_model.h).
#include "models/eval_result_model.h"

#include <QFileInfo>
#include <QStringList>

#include "mnv2/eval_report.h"
#include "models/report_access.h"

namespace mnv2::ui {

namespace {

QString top5Names(const std::vector<int>& top5, int numClasses, const QString& separator) {
  QStringList names;
  for (int i : top5) names << classText(i, numClasses);
  return names.join(separator);
}

}  // namespace

QString classText(int index, int numClasses) {
  return QStringLiteral("%1 %2").arg(index).arg(classLabel(index, numClasses).section(QLatin1Char(','), 0, 0));
}

EvalResultModel::EvalResultModel(Kind kind, QObject* parent) : QAbstractTableModel(parent), m_kind(kind) {}

void EvalResultModel::setRecord(EvalRecordPtr record) {
  beginResetModel();
  m_record = std::move(record);
  endResetModel();
}

int EvalResultModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_record) return 0;
  return static_cast<int>(m_kind == Kind::Misclassified ? m_record->result.misclassified.size()
                                                        : m_record->result.skipped.size());
}

int EvalResultModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : (m_kind == Kind::Misclassified ? 3 : 2);
}

QVariant EvalResultModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const auto row = static_cast<size_t>(index.row());
  if (m_kind == Kind::Misclassified) {
    const mnv2::EvalMiss& m = m_record->result.misclassified[row];
    const QString path = shownText(m.path);
    switch (role) {
      case PathRole:
        return QString::fromStdString(m.path);
      case Qt::DisplayRole:
        if (index.column() == File) return QFileInfo(path).fileName();
        if (index.column() == Second) return classText(m.label, m_record->numClasses);
        return top5Names(m.top5, m_record->numClasses, QStringLiteral(" · "));
      case Qt::ToolTipRole:
        if (index.column() == File) return path;
        if (index.column() == Third) return top5Names(m.top5, m_record->numClasses, QStringLiteral("\n"));
        return {};
      default:
        return {};
    }
  }
  const mnv2::EvalSkip& s = m_record->result.skipped[row];
  const QString path = shownText(s.path);
  // The decoder's message names the file first; the row shows the file already.
  QString reason = shownText(s.reason);
  if (role == Qt::DisplayRole && reason.startsWith(path + QStringLiteral(": "))) reason = reason.mid(path.size() + 2);
  if (role == Qt::DisplayRole) return index.column() == File ? QFileInfo(path).fileName() : reason;
  if (role == Qt::ToolTipRole) return index.column() == File ? path : shownText(s.reason);
  return {};
}

QVariant EvalResultModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= columnCount()) return {};
  if (section == File) return QStringLiteral("File");
  if (m_kind == Kind::Skipped) return QStringLiteral("Reason");
  return section == Second ? QStringLiteral("True label") : QStringLiteral("Predicted top-5 (most probable first)");
}

std::string evalCsv(const EvalRecord& record) {
  const int classes = record.numClasses;
  return mnv2::eval_csv(record.result,
                        mnv2::EvalCsvContext{record.set.toStdString(), record.decoder.toStdString(),
                                             [classes](int i) { return classLabel(i, classes).toStdString(); },
                                             [classes](int i) { return classText(i, classes).toStdString(); }});
}

}  // namespace mnv2::ui
