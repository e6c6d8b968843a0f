// An accuracy evaluation's result (engine EvalResult) for the Accuracy page: the misclassified files or
// the skipped ones as a table, and the whole result as CSV. No widgets here.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <memory>
#include <string>

#include "mnv2/eval.h"

namespace mnv2::ui {

// What an evaluation ran on, beside the engine's result: the set, the decoder, the model's class count
// (the label names come from the built-in lists of that many classes).
struct EvalRecord {
  QString set;
  QString decoder;
  int numClasses = 0;
  mnv2::EvalResult result;
};
using EvalRecordPtr = std::shared_ptr<const EvalRecord>;

class EvalResultModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum class Kind { Misclassified, Skipped };
  // Misclassified: file, true label, predicted top-5. Skipped: file, reason.
  enum Column { File, Second, Third, ColumnCountMax };
  enum Role { PathRole = Qt::UserRole + 1 };  // QString: the row's image file, as the set listed it

  explicit EvalResultModel(Kind kind, QObject* parent = nullptr);

  void setRecord(EvalRecordPtr record);  // null clears

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  Kind m_kind;
  EvalRecordPtr m_record;
};

// "286 Egyptian cat" (the first comma-separated name of the label).
QString classText(int index, int numClasses);

// One flat, self-describing row per record: "summary" (the figures), then one per misclassified and per
// skipped file; every row carries the set, backend, precision, batch, decoder and the summary figures.
std::string evalCsv(const EvalRecord& record);

}  // namespace mnv2::ui
