// The targets file as a table (see targets_model.h).
#include "models/targets_model.h"

#include <QFileInfo>
#include <iterator>

#include "common/remote_targets.h"
#include "mnv2/printable.h"

namespace mnv2::ui {

namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

// What a change is judged by: every field the table or a run uses.
bool same(const std::vector<mnv2::remote::Target>& a, const std::vector<mnv2::remote::Target>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || frontend::describe_target(a[i]) != frontend::describe_target(b[i])) return false;
  return true;
}

}  // namespace

TargetsModel::TargetsModel(const QString& path, QObject* parent) : QAbstractTableModel(parent), m_path(path) {
  // An editor replaces the file (a new inode) and `mnv2 targets add` may create the folder: both the file and its
  // folder are watched, and watched again after every change.
  connect(&m_watcher, &QFileSystemWatcher::fileChanged, this, [this] { reload(); });
  connect(&m_watcher, &QFileSystemWatcher::directoryChanged, this, [this] { reload(); });
  reload();
}

void TargetsModel::watch() {
  const QFileInfo file(m_path);
  if (!m_watcher.files().contains(m_path) && file.exists()) m_watcher.addPath(m_path);
  const QString folder = file.absolutePath();
  if (!m_watcher.directories().contains(folder) && QFileInfo(folder).isDir()) m_watcher.addPath(folder);
}

void TargetsModel::reload() {
  std::vector<mnv2::remote::Target> targets;
  QString error;
  try {
    targets = mnv2::remote::read_targets(m_path.toStdString());
  } catch (const std::exception& e) {
    error = QString::fromStdString(mnv2::printable(e.what()));
  }
  watch();
  if (same(targets, m_targets) && error == m_error) return;
  beginResetModel();
  m_targets = std::move(targets);
  m_error = error;
  endResetModel();
  Q_EMIT targetsChanged();
}

const mnv2::remote::Target* TargetsModel::find(const QString& name) const {
  return mnv2::remote::find_target(m_targets, name.toStdString());
}

QString TargetsModel::write(const std::vector<mnv2::remote::Target>& targets) {
  try {
    mnv2::remote::write_targets(m_path.toStdString(), targets);
  } catch (const std::exception& e) {
    return QString::fromStdString(mnv2::printable(e.what()));
  }
  reload();
  return {};
}

QString TargetsModel::add(const mnv2::remote::Target& target) {
  try {
    mnv2::remote::check_target(target);
  } catch (const std::exception& e) {
    return QString::fromStdString(mnv2::printable(e.what()));
  }
  reload();  // what the file holds now, not what it held when the table was last read
  if (!m_error.isEmpty()) return m_error;
  if (find(text(target.name)) != nullptr)
    return QStringLiteral("a target '%1' exists: remove it first").arg(text(mnv2::printable(target.name)));
  std::vector<mnv2::remote::Target> targets = m_targets;
  targets.push_back(target);
  return write(targets);
}

QString TargetsModel::remove(const QString& name) {
  reload();
  if (!m_error.isEmpty()) return m_error;
  if (find(name) == nullptr) return QStringLiteral("no target '%1' in %2").arg(name, m_path);
  std::vector<mnv2::remote::Target> targets = m_targets;
  std::erase_if(targets, [&](const mnv2::remote::Target& t) { return text(t.name) == name; });
  return write(targets);
}

int TargetsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_targets.size());
}
int TargetsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TargetsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const mnv2::remote::Target& t = m_targets[static_cast<size_t>(index.row())];
  if (role == Qt::ToolTipRole) return text(frontend::describe_target(t));
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Name:
      return text(mnv2::printable(t.name));
    case Destination:
      return text(frontend::describe_destination(t));
    case Launcher:
      return t.slurm ? text(frontend::describe_launcher(t)) : QStringLiteral("ssh");
    case Setup:
      return text(frontend::describe_setup(t));
    default:
      return {};
  }
}

QVariant TargetsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  static const char* const names[] = {"Name", "Destination", "Launcher", "Setup"};
  static_assert(std::size(names) == ColumnCount, "one header name per column");
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount || role != Qt::DisplayRole) return {};
  return QString::fromLatin1(names[section]);
}

}  // namespace mnv2::ui
