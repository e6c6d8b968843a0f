// The run history: every run of the session (each Run or Compare adds its runs; nothing is replaced) and the
// runs of opened report and session files, with a name and a note the user can edit, which runs are shown
// (checked) and the pinned baseline. The Runs panel is a table over it; combo boxes pick runs from its Label
// column. A session is saved as one report file (mnv2::Session) and reopened with its names, notes and baseline.
#pragma once

#include <QAbstractTableModel>
#include <QDateTime>
#include <optional>
#include <vector>

#include "mnv2/report.h"
#include "models/report_access.h"
#include "models/run_identity.h"

namespace mnv2::ui {

class ReportCatalog : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Name,
    Backend,
    Precision,
    RanOn,  // "this machine", or a remote run's target, host and Slurm job (RunReport::origin)
    Batch,
    Size,
    Differs,  // this run's values in the settings in which the history's runs differ (the engine's rule)
    EndToEnd,
    Reliability,
    Taken,
    Note,
    Source,
    Label,
    ColumnCount
  };
  enum Role { OriginRole = Qt::UserRole, IsCurrentRole, HasDiffRole, IdRole, BaselineRole, SortRole };

  struct Entry {
    ReportPtr report;
    QString origin;  // empty: a run of this session; else the report or session file's path
    QString label;   // the long form for combo boxes: name, backend and precision, device, timer, batch, source
    QString name;    // "run 3", "run 3.2" (a compare's second backend), "report.json #1", or the user's
    QString note;
    QString differs;  // the Differs column: "input owl.jpg, batch 2"; empty when every run has the same settings
    int id = 0;       // unique for the catalog's lifetime: rows move when runs are removed, ids do not
    int group = 0;    // the Run or Compare (or file) that produced it
    bool shown = false;
    QDateTime added;
  };

  explicit ReportCatalog(QObject* parent = nullptr);

  // A Run or Compare finished: its runs are added as the new current run (shown alone, plus the baseline when
  // one is pinned); returns the row of its first run.
  int addRun(const std::vector<ReportPtr>& reports);
  // Adds (or replaces) the runs of a report file; returns the row of its first run. With a session (names,
  // notes, baseline), those are restored; the file's baseline becomes the catalog's only when none is pinned
  // (a baseline the user pinned is kept).
  int addFile(const QString& path, const std::vector<ReportPtr>& reports);
  int addSession(const QString& path, const mnv2::Session& session);

  const Entry& entry(int row) const { return m_entries.at(static_cast<size_t>(row)); }
  ReportPtr report(int row) const;
  int rowOfId(int id) const;    // -1 when gone
  int firstCurrentRow() const;  // the newest Run's first row; -1 when this session has run nothing (left)
  std::vector<int> currentRows() const;
  int count() const { return static_cast<int>(m_entries.size()); }
  // The run's name and colour on every page: "run 3 · cpu fp32 · b2 · 160×160", a colour of its own (by its id,
  // so it stays while other runs come and go; ten colours, then they repeat).
  RunIdentity identity(int row) const;
  std::optional<RunIdentity> identityOf(const ReportPtr& report) const;  // none: not in the history

  void remove(const std::vector<int>& rows);
  void setNote(int row, const QString& note);
  void setName(int row, const QString& name);
  void setBaseline(int row);  // -1: none
  int baselineRow() const;

  // The checked runs, in catalog order; setShown checks exactly these rows.
  std::vector<int> shownRows() const;
  std::vector<ReportPtr> shownReports() const;
  void setShown(const std::vector<int>& rows);

  // Every run with its name and note, and the baseline: what File > Save session writes.
  mnv2::Session session() const;
  // Whether closing now would lose something: a run of this session, a name or a note not saved since
  // setSaved() (the session was written).
  bool isModified() const { return m_modified && count() > 0; }
  void setSaved() { m_modified = false; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 Q_SIGNALS:
  // The checked set changed (by the user or setShown): the pages show shownReports().
  void shownChanged();
  void baselineChanged(int row);

 private:
  void relabel(Entry& e) const;
  void updateDifferences();  // every row's Differs, after runs come or go
  int insert(std::vector<Entry> entries);
  std::vector<Entry> m_entries;
  int m_nextId = 1;
  int m_nextGroup = 1;
  int m_runs = 0;          // Runs and Compares of this session, for "run N"
  int m_currentGroup = 0;  // 0: none
  int m_baselineId = 0;    // 0: none
  bool m_modified = false;
};

}  // namespace mnv2::ui
