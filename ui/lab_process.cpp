// The `mnv2 lab` runner (see lab_process.h).
#include "lab_process.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>

#include "mnv2/exit_codes.h"

namespace mnv2::ui {

namespace {

constexpr int kKillAfterMs = 3000;  // Cancel: time for `mnv2 lab` to end its worker before it is killed
constexpr int kTailLines = 6;

bool isProgram(const QString& path) {
  const QFileInfo f(path);
  return f.isFile() && f.isExecutable();
}

QString quoted(const QString& arg) {
  if (!arg.isEmpty() && !arg.contains(QRegularExpression(QStringLiteral("[^A-Za-z0-9_./,:=+-]")))) return arg;
  QString a = arg;
  a.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
  return QLatin1Char('\'') + a + QLatin1Char('\'');
}

}  // namespace

QString findLabCli(QString* why) {
  const QString env = qEnvironmentVariable("MNV2_CLI");
  if (!env.isEmpty()) {
    if (isProgram(env)) return QFileInfo(env).absoluteFilePath();
    if (why)
      *why = QStringLiteral(
                 "MNV2_CLI is set to %1, which is not an executable file. Point it at the mnv2 "
                 "command-line program, or unset it to use the mnv2 beside the app or on the PATH.")
                 .arg(env);
    return {};
  }
  const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("mnv2"));
  if (isProgram(beside)) return beside;
  const QString onPath = QStandardPaths::findExecutable(QStringLiteral("mnv2"));
  if (!onPath.isEmpty()) return onPath;
  if (why)
    *why = QStringLiteral(
               "The mnv2 command-line program was not found (not in MNV2_CLI, not beside the app at %1, "
               "not on the PATH). The Kernel lab runs `mnv2 lab`: install mnv2 with the app, or set "
               "MNV2_CLI to its path.")
               .arg(QDir::toNativeSeparators(beside));
  return {};
}

LabProcess::LabProcess(QObject* parent) : QObject(parent) { qRegisterMetaType<mnv2::ui::LabProcess::Outcome>(); }

LabProcess::~LabProcess() {
  if (m_process && m_process->state() != QProcess::NotRunning) {
    m_process->disconnect(this);
    m_process->terminate();
    if (!m_process->waitForFinished(kKillAfterMs)) {
      m_process->kill();
      m_process->waitForFinished(kKillAfterMs);
    }
  }
}

QString LabProcess::actionName(Action action) {
  switch (action) {
    case Action::Compile:
      return QStringLiteral("compile");
    case Action::Check:
      return QStringLiteral("check");
    case Action::Run:
      return QStringLiteral("run");
    case Action::Template:
      return QStringLiteral("template");
  }
  return {};
}

QStringList LabProcess::arguments(const Request& r, const QString& jsonPath) {
  QStringList a{QStringLiteral("lab")};
  if (r.action == Action::Template) {
    a << QStringLiteral("--template") << r.slot << QStringLiteral("--precision") << r.precision;
    return a;
  }
  a << QStringLiteral("--slot") << r.slot << QStringLiteral("--kernel") << r.kernelFile << QStringLiteral("--precision")
    << r.precision << QStringLiteral("--batch") << QString::number(r.batch);
  if (!r.layers.isEmpty()) a << QStringLiteral("--layers") << r.layers;
  if (!r.model.isEmpty()) a << QStringLiteral("--model") << r.model;
  if (!r.arch.isEmpty()) a << QStringLiteral("--arch") << r.arch;
  a << QStringLiteral("--device") << QString::number(r.device);
  a << QStringLiteral("--json") << jsonPath;
  if (r.action == Action::Compile) a << QStringLiteral("--compile-only");
  if (r.action == Action::Check) a << QStringLiteral("--no-time");
  return a;
}

bool LabProcess::isRunning() const { return !m_done; }

bool LabProcess::start(const Request& request) {
  if (!m_done) return false;
  m_done = false;
  m_request = request;
  m_cancelled = false;
  m_pending.clear();
  m_captured.clear();
  m_tail.clear();
  QString why;
  m_program = findLabCli(&why);
  if (m_program.isEmpty()) {
    Outcome o;
    o.action = request.action;
    o.error = why;
    // Reported from the event loop, as a process's end would be: the caller's state is set by then.
    QTimer::singleShot(0, this, [this, o] { finish(o); });
    return true;
  }
  m_dir = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("mnv2-lab-XXXXXX")));
  m_jsonPath = m_dir->isValid() ? m_dir->filePath(QStringLiteral("result.json")) : QString();
  const QStringList args = arguments(request, m_jsonPath);
  QStringList shown{quoted(m_program)};
  for (const QString& a : args) shown << quoted(a);
  m_commandLine = shown.join(QLatin1Char(' '));

  delete m_process;
  m_process = new QProcess(this);
  m_process->setProcessChannelMode(request.action == Action::Template ? QProcess::SeparateChannels
                                                                      : QProcess::MergedChannels);
  connect(m_process, &QProcess::readyReadStandardOutput, this, [this] {
    const QByteArray bytes = m_process->readAllStandardOutput();
    if (m_request.action == Action::Template) {
      m_captured += bytes;
      return;
    }
    m_pending += bytes;
    flushLines(false);
  });
  connect(m_process, &QProcess::readyReadStandardError, this, [this] {
    // Template only (the others merge the channels): its messages are the error when it fails.
    m_pending += m_process->readAllStandardError();
    flushLines(false);
  });
  connect(m_process, &QProcess::finished, this, &LabProcess::onFinished);
  connect(m_process, &QProcess::errorOccurred, this, &LabProcess::onError);
  Q_EMIT started(m_commandLine);
  m_process->start(m_program, args);
  return true;
}

void LabProcess::flushLines(bool all) {
  qsizetype nl;
  while ((nl = m_pending.indexOf('\n')) >= 0) {
    QString line = QString::fromUtf8(m_pending.left(nl));
    if (line.endsWith(QLatin1Char('\r'))) line.chop(1);
    m_pending.remove(0, nl + 1);
    QStringList tail = m_tail.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    if (!line.trimmed().isEmpty()) tail << line;
    while (tail.size() > kTailLines) tail.removeFirst();
    m_tail = tail.join(QLatin1Char('\n'));
    if (m_request.action != Action::Template) Q_EMIT outputLine(line);
  }
  if (all && !m_pending.isEmpty()) {
    m_pending += '\n';
    flushLines(false);
  }
}

void LabProcess::cancel() {
  if (m_done || !m_process || m_process->state() == QProcess::NotRunning) return;
  m_cancelled = true;
  m_process->terminate();
  QProcess* p = m_process;
  QTimer::singleShot(kKillAfterMs, p, [p] {
    if (p->state() != QProcess::NotRunning) p->kill();
  });
}

void LabProcess::onError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart || m_done) return;  // the rest end in finished()
  Outcome o;
  o.action = m_request.action;
  o.program = m_program;
  o.error = QStringLiteral("could not start %1: %2").arg(m_program, m_process->errorString());
  finish(o);
}

void LabProcess::onFinished(int exitCode, QProcess::ExitStatus status) {
  if (m_done) return;
  if (m_request.action == Action::Template)
    m_captured += m_process->readAllStandardOutput();
  else
    m_pending += m_process->readAllStandardOutput();
  if (m_request.action == Action::Template) m_pending += m_process->readAllStandardError();
  flushLines(true);
  Outcome o;
  o.action = m_request.action;
  o.program = m_program;
  o.exitCode = exitCode;
  o.crashed = status == QProcess::CrashExit;
  o.cancelled = m_cancelled;
  // Why it failed, in the CLI's words: its "error: ..." line (mnv2 follows a usage error with a line pointing at
  // --help), else the last line it printed.
  QString reason;
  for (const QString& line : m_tail.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
    if (line.startsWith(QLatin1String("error: "))) reason = line.mid(7);
  if (reason.isEmpty() && !m_tail.isEmpty()) reason = m_tail.split(QLatin1Char('\n')).last();
  const QString tail = reason.isEmpty() ? QString() : QStringLiteral(": ") + reason;
  if (o.cancelled) {
    o.error = QStringLiteral("cancelled");
  } else if (m_request.action == Action::Template) {
    if (o.crashed || exitCode != 0)
      o.error = QStringLiteral("mnv2 lab --template %1 failed (exit %2)%3").arg(m_request.slot).arg(exitCode).arg(tail);
    else if (m_captured.trimmed().isEmpty())
      o.error = QStringLiteral("mnv2 lab --template %1 printed no source").arg(m_request.slot);
    else
      o.output = QString::fromUtf8(m_captured);
  } else {
    QFile file(m_jsonPath);
    if (!m_jsonPath.isEmpty() && file.exists()) {
      if (file.open(QIODevice::ReadOnly)) {
        QString error;
        o.result = parseLabResult(file.readAll(), &error);
        if (!o.result) o.error = error;
      } else {
        o.error = QStringLiteral("could not read the result %1: %2").arg(m_jsonPath, file.errorString());
      }
    } else if (o.crashed) {
      o.error =
          QStringLiteral("mnv2 lab itself crashed (%1) and wrote no result%2").arg(m_process->errorString(), tail);
    } else if (exitCode == mnv2::kExitUsage) {
      o.error = QStringLiteral("mnv2 lab refused the request%1").arg(tail);
    } else if (exitCode == mnv2::kExitLabCrashed) {
      o.error =
          QStringLiteral("crashed: the kernel crashed the worker or timed out, and no result was written%1").arg(tail);
    } else {
      o.error = QStringLiteral("mnv2 lab ended with exit code %1 and wrote no result%2").arg(exitCode).arg(tail);
    }
  }
  finish(o);
}

void LabProcess::finish(Outcome outcome) {
  m_done = true;
  m_dir.reset();  // the result file was read
  Q_EMIT finished(outcome);
}

}  // namespace mnv2::ui
