// The remote targets of the targets file (mnv2/remote.h; $XDG_CONFIG_HOME/mnv2-profiler/targets.json, shared with
// `mnv2 targets`) as a table: name, destination, Slurm launcher, setup lines. Re-read when the file or its folder
// changes (a QFileSystemWatcher) and when asked (the Run-on chooser asks as it opens); changed only through the
// engine's write_targets (mode 0600). No widgets here.
#pragma once

#include <QAbstractTableModel>
#include <QFileSystemWatcher>
#include <QString>
#include <vector>

#include "mnv2/remote.h"

namespace mnv2::ui {

class TargetsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Destination, Launcher, Setup, ColumnCount };

  // `path`: the targets file (frontend::remote_environment().targets_file in the app). Read at once.
  explicit TargetsModel(const QString& path, QObject* parent = nullptr);

  QString path() const { return m_path; }
  // Re-reads the file; targetsChanged() when what it holds changed (or its error did).
  void reload();
  // Why the file could not be read (the engine's words), "" when it was (a missing file is no targets).
  QString error() const { return m_error; }
  const std::vector<mnv2::remote::Target>& targets() const { return m_targets; }
  const mnv2::remote::Target* find(const QString& name) const;

  // Adds `target` (checked by the engine) or removes the one named, writing the file; "" or why not.
  QString add(const mnv2::remote::Target& target);
  QString remove(const QString& name);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 Q_SIGNALS:
  void targetsChanged();

 private:
  QString write(const std::vector<mnv2::remote::Target>& targets);
  void watch();

  QString m_path;
  QString m_error;
  std::vector<mnv2::remote::Target> m_targets;
  QFileSystemWatcher m_watcher;
};

}  // namespace mnv2::ui
