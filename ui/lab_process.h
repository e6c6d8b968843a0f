// Runs `mnv2 lab` for the Kernel lab page as a separate process (QProcess): the app never loads user code.
// One job at a time: its stdout comes line by line, and when the process ends the result file it wrote
// (--json) is read (LabResult); a missing program, a process that dies, a result of another format all
// become a message, never a crash. Cancel terminates the process (it ends its own worker), then kills it.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <memory>
#include <optional>

#include "models/lab_result_model.h"

namespace mnv2::ui {

// Where the CLI is: $MNV2_CLI, else `mnv2` beside the app's executable, else `mnv2` on the PATH. Empty, with
// `why` saying what was looked at, when none is found (or MNV2_CLI names something that is not a program).
QString findLabCli(QString* why = nullptr);

class LabProcess : public QObject {
  Q_OBJECT
 public:
  enum class Action { Compile, Check, Run, Template };
  struct Request {
    Action action = Action::Run;
    QString slot;
    QString kernelFile;  // the source to compile (not for Template)
    QString layers;      // "2,7"; empty: every layer of the slot
    QString precision = QStringLiteral("fp32");
    int batch = 1;
    QString arch;    // "sm_90": compile for this architecture (a machine without a GPU); empty: the GPU's
    int device = 0;  // the GPU the check and the timings run on (the run settings' device)
    QString model;   // the app's model file, so that the lab runs the network the app shows; empty: mnv2's lookup
  };
  // How a job ended. `result` is there when the process wrote a readable result; `error` says why not (or
  // what else went wrong); `output` is the template's source for Template.
  struct Outcome {
    Action action = Action::Run;
    int exitCode = -1;
    bool crashed = false;    // the mnv2 process itself died on a signal
    bool cancelled = false;  // Cancel ended it
    std::optional<LabResult> result;
    QString error;
    QString output;   // Template: stdout (the source)
    QString program;  // the mnv2 that ran
  };

  explicit LabProcess(QObject* parent = nullptr);
  ~LabProcess() override;

  // Starts a job; false (and finished() is not emitted) when one is running. A missing CLI is reported
  // through finished() with its message, so that callers have one path for every failure.
  bool start(const Request& request);
  void cancel();
  bool isRunning() const;
  static QString actionName(Action action);  // "compile", "check", "run", "template"
  // The arguments `mnv2` gets for `request` (after "lab"), with `jsonPath` as the result file.
  static QStringList arguments(const Request& request, const QString& jsonPath);
  QString commandLine() const { return m_commandLine; }  // the running (or last) job's, shell-quoted

 Q_SIGNALS:
  void started(const QString& commandLine);
  void outputLine(const QString& line);  // stdout and stderr, merged, one line at a time (not for Template)
  void finished(const mnv2::ui::LabProcess::Outcome& outcome);

 private:
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);
  void flushLines(bool all);
  void finish(Outcome outcome);

  QProcess* m_process = nullptr;
  std::unique_ptr<QTemporaryDir> m_dir;
  QString m_jsonPath;
  Request m_request;
  QString m_program;
  QString m_commandLine;
  QByteArray m_pending;   // a partial line of output
  QByteArray m_captured;  // Template: stdout
  QString m_tail;         // the last lines of output (the message when no result came)
  bool m_cancelled = false;
  bool m_done = true;
};

}  // namespace mnv2::ui

Q_DECLARE_METATYPE(mnv2::ui::LabProcess::Outcome)
