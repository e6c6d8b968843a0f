// Tools > Targets: the remote targets of the targets file (shared with `mnv2 targets`). Lists them; adds one from a
// form whose every field is checked by the engine (check_target, target_from_destination), the message beside the
// field; removes; probes one off the GUI thread (the run controller) and shows what it has, or the engine's error;
// and opens its master connection interactively (Connect…: passphrases and one-time codes go to OpenSSH's askpass
// prompt; runs themselves never prompt).
#pragma once

#include <QDialog>
#include <QMap>
#include <QPointer>
#include <optional>

#include "mnv2/remote.h"
#include "run_types.h"

class QCheckBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProcess;
class QPushButton;
class QSpinBox;
class QTableView;
class QTextBrowser;

namespace mnv2::ui {

class RunController;
class TargetsModel;

class TargetsDialog : public QDialog {
  Q_OBJECT
 public:
  // The form's fields, each with its message label (named "<field>Message").
  enum class Field { Name, Destination, SshConfig, Slurm, Setup };

  TargetsDialog(TargetsModel* targets, RunController* controller, QWidget* parent = nullptr);
  ~TargetsDialog() override;

  QTableView* table() const { return m_table; }
  QLineEdit* nameEdit() const { return m_name; }
  QLineEdit* destinationEdit() const { return m_destination; }
  QLineEdit* sshConfigEdit() const { return m_sshConfig; }
  QGroupBox* slurmBox() const { return m_slurm; }
  QString message(Field field) const;  // the message beside a field ("" when it is fine)
  QString probeText() const;           // what the probe area shows (plain text)
  QString connectText() const;         // what the last Connect said

  // The form as a target, every field checked by the engine; nullopt with the messages beside the fields.
  std::optional<mnv2::remote::Target> formTarget();
  bool addFromForm();  // formTarget, then written to the file; false with the reason beside a field
  void selectTarget(const QString& name);
  QString selectedTarget() const;
  bool removeSelected();
  bool probeSelected();    // false when none is selected or a probe of this dialog is in flight
  bool connectSelected();  // false when none is selected or ssh cannot start

 Q_SIGNALS:
  void probeFinished(const mnv2::ui::TargetProbe& probe);
  void connected(const mnv2::remote::Target& target);  // its master connection is open
  void connectFinished(bool ok);

 private:
  void showProbe(const TargetProbe& probe);
  void updateButtons();
  QLabel* messageLabel(Field field) const;
  void setMessage(Field field, const QString& text);

  TargetsModel* m_targets;
  RunController* m_controller;
  QTableView* m_table = nullptr;
  QPushButton* m_remove = nullptr;
  QPushButton* m_probe = nullptr;
  QPushButton* m_cancelProbe = nullptr;
  QPushButton* m_connect = nullptr;
  QLabel* m_fileLabel = nullptr;
  QLineEdit* m_name = nullptr;
  QLineEdit* m_destination = nullptr;
  QLineEdit* m_sshConfig = nullptr;
  QGroupBox* m_slurm = nullptr;
  QLineEdit* m_partition = nullptr;
  QLineEdit* m_gres = nullptr;
  QLineEdit* m_time = nullptr;
  QLineEdit* m_account = nullptr;
  QPlainTextEdit* m_extra = nullptr;
  QSpinBox* m_pending = nullptr;
  QPlainTextEdit* m_setup = nullptr;
  QPushButton* m_add = nullptr;
  QMap<Field, QLabel*> m_messages;
  QTextBrowser* m_probeView = nullptr;
  QLabel* m_connectStatus = nullptr;
  JobId m_probeJob = 0;  // this dialog's probe in flight (0: none)
  QString m_probeTarget;
  QPointer<QProcess> m_ssh;  // Connect's ssh, while it runs
};

}  // namespace mnv2::ui
