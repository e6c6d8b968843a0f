// The run history (see report_catalog.h).
#include "models/report_catalog.h"

#include <QColor>
#include <QFileInfo>
#include <algorithm>
#include <iterator>

#include "models/report_access.h"
#include "models/run_differences.h"

namespace mnv2::ui {

namespace {

QString sizeText(const mnv2::RunReport& r) { return QStringLiteral("%1×%2").arg(r.config.height).arg(r.config.width); }

}  // namespace

ReportCatalog::ReportCatalog(QObject* parent) : QAbstractTableModel(parent) {}

void ReportCatalog::relabel(Entry& e) const {
  const QString where = e.origin.isEmpty() ? QStringLiteral("this session") : QFileInfo(e.origin).fileName();
  e.label = QStringLiteral("%1: %2 (%3) — %4 — b%5, %6 — %7")
                .arg(e.name, runLabel(*e.report), shownText(e.report->device), shownText(e.report->timer))
                .arg(e.report->config.batch)
                .arg(sizeText(*e.report), where);
}

int ReportCatalog::insert(std::vector<Entry> entries) {
  const int first = count();
  if (entries.empty()) return first;
  beginInsertRows({}, first, first + static_cast<int>(entries.size()) - 1);
  for (Entry& e : entries) {
    relabel(e);
    m_entries.push_back(std::move(e));
  }
  endInsertRows();
  updateDifferences();
  return first;
}

void ReportCatalog::updateDifferences() {
  std::vector<ReportPtr> reports;
  for (const Entry& e : m_entries) reports.push_back(e.report);
  const RunsDifferences differ = differencesAmong(reports);
  for (size_t i = 0; i < m_entries.size(); ++i) m_entries[i].differs = settingsOf(differ, i);
  if (count() > 0) Q_EMIT dataChanged(index(0, Differs), index(count() - 1, Differs));
}

int ReportCatalog::addRun(const std::vector<ReportPtr>& reports) {
  if (reports.empty()) return -1;
  ++m_runs;
  m_modified = true;
  const int group = m_nextGroup++;
  std::vector<Entry> entries;
  for (size_t i = 0; i < reports.size(); ++i) {
    Entry e;
    e.report = reports[i];
    e.name =
        reports.size() == 1 ? QStringLiteral("run %1").arg(m_runs) : QStringLiteral("run %1.%2").arg(m_runs).arg(i + 1);
    e.id = m_nextId++;
    e.group = group;
    e.added = QDateTime::currentDateTime();
    entries.push_back(std::move(e));
  }
  const int previous = firstCurrentRow();
  m_currentGroup = group;
  if (previous >= 0) Q_EMIT dataChanged(index(previous, 0), index(count() - 1, ColumnCount - 1));
  const int first = insert(std::move(entries));
  // The new run is shown; beside the pinned baseline, when there is one, so "before" and "after" sit together.
  std::vector<int> shown;
  const int baseline = baselineRow();
  if (baseline >= 0) shown.push_back(baseline);
  for (int r = first; r < count(); ++r) shown.push_back(r);
  setShown(shown);
  return first;
}

int ReportCatalog::addFile(const QString& path, const std::vector<ReportPtr>& reports) {
  std::vector<Entry> entries;
  // Reopening the same file replaces its runs.
  std::vector<int> old;
  for (int r = 0; r < count(); ++r)
    if (m_entries[static_cast<size_t>(r)].origin == path) old.push_back(r);
  remove(old);
  const int group = m_nextGroup++;
  for (size_t i = 0; i < reports.size(); ++i) {
    Entry e;
    e.report = reports[i];
    e.origin = path;
    e.name = reports.size() == 1 ? QFileInfo(path).fileName()
                                 : QStringLiteral("%1 #%2").arg(QFileInfo(path).fileName()).arg(i + 1);
    e.id = m_nextId++;
    e.group = group;
    e.added = QDateTime::currentDateTime();
    entries.push_back(std::move(e));
  }
  return insert(std::move(entries));
}

int ReportCatalog::addSession(const QString& path, const mnv2::Session& session) {
  std::vector<ReportPtr> reports;
  for (const mnv2::SessionRun& r : session.runs) reports.push_back(std::make_shared<const mnv2::RunReport>(r.report));
  const int first = addFile(path, reports);
  for (size_t i = 0; i < session.runs.size(); ++i) {
    Entry& e = m_entries[static_cast<size_t>(first) + i];
    if (!session.runs[i].name.empty()) e.name = shownText(session.runs[i].name);
    e.note = QString::fromStdString(session.runs[i].note);
    relabel(e);
  }
  if (!session.runs.empty()) Q_EMIT dataChanged(index(first, 0), index(count() - 1, ColumnCount - 1));
  // A baseline the user pinned stays; the session's is pinned only where none is.
  if (session.baseline >= 0 && baselineRow() < 0) setBaseline(first + session.baseline);
  return first;
}

RunIdentity ReportCatalog::identity(int row) const {
  const Entry& e = entry(row);
  // Tableau 10: ten colours apart from each other (and from the red of a selected bar, 230,40,40, enough).
  static const QColor palette[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
                                   QColor(0xb0, 0x7a, 0xa1), QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48),
                                   QColor(0x9c, 0x75, 0x5f), QColor(0xff, 0x9d, 0xa7), QColor(0xe1, 0x57, 0x59),
                                   QColor(0xba, 0xb0, 0xac)};
  return {QStringLiteral("%1 · %2 · b%3 · %4")
              .arg(e.name, runLabel(*e.report))
              .arg(e.report->config.batch)
              .arg(sizeText(*e.report)),
          palette[static_cast<size_t>(e.id - 1) % std::size(palette)]};
}

std::optional<RunIdentity> ReportCatalog::identityOf(const ReportPtr& report) const {
  for (int i = 0; i < count(); ++i)
    if (m_entries[static_cast<size_t>(i)].report == report) return identity(i);
  return std::nullopt;
}

ReportPtr ReportCatalog::report(int row) const {
  return row >= 0 && row < count() ? m_entries[static_cast<size_t>(row)].report : nullptr;
}

int ReportCatalog::rowOfId(int id) const {
  for (int i = 0; i < count(); ++i)
    if (m_entries[static_cast<size_t>(i)].id == id) return i;
  return -1;
}

int ReportCatalog::firstCurrentRow() const {
  if (m_currentGroup == 0) return -1;
  for (int i = 0; i < count(); ++i)
    if (m_entries[static_cast<size_t>(i)].group == m_currentGroup) return i;
  return -1;
}

std::vector<int> ReportCatalog::currentRows() const {
  std::vector<int> rows;
  for (int i = 0; i < count(); ++i)
    if (m_currentGroup != 0 && m_entries[static_cast<size_t>(i)].group == m_currentGroup) rows.push_back(i);
  return rows;
}

void ReportCatalog::remove(const std::vector<int>& rows) {
  std::vector<int> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  bool shownLost = false;
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {
    const int r = *it;
    if (r < 0 || r >= count()) continue;
    const Entry& e = m_entries[static_cast<size_t>(r)];
    shownLost = shownLost || e.shown;
    if (e.id == m_baselineId) {
      m_baselineId = 0;
      Q_EMIT baselineChanged(-1);
    }
    beginRemoveRows({}, r, r);
    m_entries.erase(m_entries.begin() + r);
    endRemoveRows();
  }
  if (firstCurrentRow() < 0) m_currentGroup = 0;
  if (!sorted.empty()) updateDifferences();
  if (shownLost) Q_EMIT shownChanged();
}

void ReportCatalog::setNote(int row, const QString& note) { setData(index(row, Note), note); }
void ReportCatalog::setName(int row, const QString& name) { setData(index(row, Name), name); }

void ReportCatalog::setBaseline(int row) {
  const int id = row >= 0 && row < count() ? m_entries[static_cast<size_t>(row)].id : 0;
  if (id == m_baselineId) return;
  const int old = baselineRow();
  m_baselineId = id;
  if (old >= 0) Q_EMIT dataChanged(index(old, 0), index(old, ColumnCount - 1));
  if (row >= 0 && id) Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
  Q_EMIT baselineChanged(baselineRow());
}

int ReportCatalog::baselineRow() const { return m_baselineId ? rowOfId(m_baselineId) : -1; }

std::vector<int> ReportCatalog::shownRows() const {
  std::vector<int> rows;
  for (int i = 0; i < count(); ++i)
    if (m_entries[static_cast<size_t>(i)].shown) rows.push_back(i);
  return rows;
}

std::vector<ReportPtr> ReportCatalog::shownReports() const {
  std::vector<ReportPtr> out;
  for (int r : shownRows()) out.push_back(report(r));
  return out;
}

void ReportCatalog::setShown(const std::vector<int>& rows) {
  bool changed = false;
  for (int i = 0; i < count(); ++i) {
    const bool want = std::find(rows.begin(), rows.end(), i) != rows.end();
    Entry& e = m_entries[static_cast<size_t>(i)];
    if (e.shown == want) continue;
    e.shown = want;
    changed = true;
    Q_EMIT dataChanged(index(i, Name), index(i, Name), {Qt::CheckStateRole});
  }
  if (changed) Q_EMIT shownChanged();
}

mnv2::Session ReportCatalog::session() const {
  mnv2::Session s;
  for (int i = 0; i < count(); ++i) {
    const Entry& e = m_entries[static_cast<size_t>(i)];
    s.runs.push_back({*e.report, e.name.toStdString(), e.note.toStdString()});
  }
  s.baseline = baselineRow();
  return s;
}

int ReportCatalog::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : count(); }
int ReportCatalog::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ReportCatalog::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  static const char* const names[] = {"Run",     "Backend",         "Precision",   "Ran on", "Batch", "Size",
                                      "Differs", "End to end (ms)", "Reliability", "Taken",  "Note",  "Source",
                                      "Label"};
  static_assert(std::size(names) == ColumnCount, "one header name per column");
  if (role == Qt::DisplayRole) return QString::fromLatin1(names[section]);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Name:
        return QStringLiteral("Checked runs are shown on the pages; ★ marks the pinned baseline, ● the newest run");
      case Differs:
        return QStringLiteral(
            "This run's value in every setting in which the runs of the history differ (input, batch, backend, "
            "precision, options, …), by the engine's comparability rule, as Run comparison lists them");
      case EndToEnd:
        return QStringLiteral("Median of the un-instrumented end-to-end runs (host clock)");
      case RanOn:
        return QStringLiteral(
            "Where the run ran: local (the machine that ran the study), or a remote target with the "
            "host and the Slurm job");
      case Reliability:
        return QStringLiteral(
            "Whether noise or contention (CV, tail, SM clock, other GPU processes, host load) "
            "makes the run's figures unreliable; the reasons as tool-tip");
      case Note:
        return QStringLiteral("Your note (double-click to edit); saved with the session");
      default:
        return {};
    }
  }
  return {};
}

Qt::ItemFlags ReportCatalog::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == Name) f |= Qt::ItemIsUserCheckable | Qt::ItemIsEditable;
  if (index.column() == Note) f |= Qt::ItemIsEditable;
  return f;
}

bool ReportCatalog::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.row() >= count()) return false;
  Entry& e = m_entries[static_cast<size_t>(index.row())];
  if (index.column() == Name && role == Qt::CheckStateRole) {
    const bool want = value.toInt() == Qt::Checked;
    if (e.shown == want) return true;
    e.shown = want;
    Q_EMIT dataChanged(index, index, {Qt::CheckStateRole});
    Q_EMIT shownChanged();
    return true;
  }
  if (role != Qt::EditRole) return false;
  // Names and notes are saved in the session file, which bounds them.
  const QString text = value.toString().left(static_cast<qsizetype>(mnv2::kMaxSessionText) / 4);
  if (index.column() == Name) {
    if (text.trimmed().isEmpty()) return false;
    e.name = text.trimmed();
    m_modified = true;
    relabel(e);
    Q_EMIT dataChanged(this->index(index.row(), 0), this->index(index.row(), ColumnCount - 1));
    return true;
  }
  if (index.column() == Note) {
    e.note = text;
    m_modified = true;
    Q_EMIT dataChanged(index, index);
    return true;
  }
  return false;
}

QVariant ReportCatalog::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= count() || index.column() >= ColumnCount) return {};
  const Entry& e = m_entries[static_cast<size_t>(index.row())];
  const mnv2::RunReport& r = *e.report;
  const bool isBaseline = e.id == m_baselineId;
  const bool isCurrent = m_currentGroup != 0 && e.group == m_currentGroup;
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
      switch (index.column()) {
        case Name:
          if (role == Qt::EditRole) return e.name;
          return (isBaseline ? QStringLiteral("★ ") : QString()) + e.name +
                 (isCurrent ? QStringLiteral(" ●") : QString());
        case Backend:
          return shownText(r.backend);
        case Precision:
          return precisionName(r.config.precision);
        case RanOn: {
          const QString where = targetText(r.origin);
          return where.isEmpty() ? QStringLiteral("local") : where;
        }
        case Batch:
          return r.config.batch;
        case Size:
          return sizeText(r);
        case Differs:
          return e.differs.isEmpty() ? QStringLiteral("—") : e.differs;
        case EndToEnd:
          return r.end_to_end.host_ms.n > 0 ? QString::number(r.end_to_end.host_ms.median, 'f', 3)
                                            : QStringLiteral("—");
        case Reliability:
          return reliabilityMarker(r);
        case Taken: {
          const QDateTime when = QDateTime::fromString(QString::fromStdString(r.date), Qt::ISODate);
          return when.isValid() ? when.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"))
                                : shownText(r.date);
        }
        case Note:
          return e.note;
        case Source:
          return e.origin.isEmpty() ? QStringLiteral("this session") : QFileInfo(e.origin).fileName();
        case Label:
          return e.label;
        default:
          return {};
      }
    case Qt::CheckStateRole:
      return index.column() == Name ? QVariant(e.shown ? Qt::Checked : Qt::Unchecked) : QVariant();
    case Qt::ToolTipRole:
      if (index.column() == Note && !e.note.isEmpty()) return e.note;
      if (index.column() == Reliability) return reliabilityText(r);
      if (index.column() == Differs)
        return e.differs.isEmpty() ? QStringLiteral("Every run of the history has the same settings") : e.differs;
      return QStringLiteral("%1\nmodel %2\ninput %3\n%4 (commit %5)%6")
          .arg(reportSummary(r), shownText(r.model_source), shownText(r.config.input_name), shownText(r.date),
               shownText(r.commit), e.origin.isEmpty() ? QString() : QStringLiteral("\nfrom ") + e.origin);
    case Qt::ForegroundRole:
      if (index.column() == Reliability && r.reliability.verdict() == mnv2::Verdict::unreliable)
        return QColor(0xb0, 0x2a, 0x37);
      return {};
    case Qt::TextAlignmentRole:
      return index.column() == Batch || index.column() == EndToEnd ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                                                   : QVariant();
    case SortRole:
      switch (index.column()) {
        case Batch:
          return r.config.batch;
        case EndToEnd:
          return r.end_to_end.host_ms.median;
        case Size:
          return r.config.height * r.config.width;
        default:
          return data(index, Qt::DisplayRole);
      }
    case OriginRole:
      return e.origin;
    case IsCurrentRole:
      return isCurrent;
    case HasDiffRole:
      return r.diff.has_value();
    case IdRole:
      return e.id;
    case BaselineRole:
      return isBaseline;
    default:
      return {};
  }
}

}  // namespace mnv2::ui
