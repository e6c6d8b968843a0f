// The Targets dialog (see targets_dialog.h).
#include "widgets/targets_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <functional>

#include "common/environment.h"
#include "common/remote_session.h"
#include "mnv2/printable.h"
#include "models/targets_model.h"
#include "run_controller.h"

namespace mnv2::ui {

namespace {

// Engine text (a target's answers, ssh's words) for rich text: control characters escaped, then HTML.
QString html(const std::string& text) { return QString::fromStdString(mnv2::printable(text)).toHtmlEscaped(); }

QString fieldName(TargetsDialog::Field f) {
  switch (f) {
    case TargetsDialog::Field::Name:
      return QStringLiteral("targetName");
    case TargetsDialog::Field::Destination:
      return QStringLiteral("targetDestination");
    case TargetsDialog::Field::SshConfig:
      return QStringLiteral("targetSshConfig");
    case TargetsDialog::Field::Slurm:
      return QStringLiteral("targetSlurm");
    case TargetsDialog::Field::Setup:
      return QStringLiteral("targetSetup");
  }
  return {};
}

std::vector<std::string> lines(const QPlainTextEdit* edit) {
  std::vector<std::string> out;
  for (const QString& line : edit->toPlainText().split(QLatin1Char('\n'), Qt::SkipEmptyParts))
    if (!line.trimmed().isEmpty()) out.push_back(line.trimmed().toStdString());
  return out;
}

// A field checked alone: on a target named `name` (the form's, or a placeholder while that is wrong) whose other
// fields are valid placeholders, so that the engine's message is about this field and goes beside it.
QString check(const std::string& name, const std::function<void(mnv2::remote::Target&)>& set) {
  mnv2::remote::Target t;
  t.name = name;
  t.host = "localhost";
  try {
    set(t);
    mnv2::remote::check_target(t);
  } catch (const std::exception& e) {
    return QString::fromStdString(mnv2::printable(e.what()));
  }
  return {};
}

QString probeHtml(const mnv2::remote::ProbeResult& p) {
  QString s = QStringLiteral("<b>%1</b>: host <b>%2</b>%3, answered in %4 s<br>")
                  .arg(html(p.target), html(p.host),
                       p.slurm_job.empty() ? QString() : QStringLiteral(", Slurm job %1").arg(html(p.slurm_job)))
                  .arg(p.seconds, 0, 'f', 1);
  s += QStringLiteral("mnv2 %1 (commit %2, protocol %3) at %4<br>glibc %5<br>")
           .arg(html(p.mnv2_version), html(p.mnv2_commit))
           .arg(p.protocol)
           .arg(html(p.mnv2_path), html(p.glibc));
  s += QStringLiteral("driver %1, CUDA runtime %2, cuDNN %3<br>GPU code: %4<br>")
           .arg(p.driver.empty() ? QStringLiteral("none") : html(p.driver),
                p.cuda_runtime.empty() ? QStringLiteral("none") : html(p.cuda_runtime),
                p.cudnn.empty() ? QStringLiteral("none") : html(p.cudnn),
                p.architectures.empty() ? QStringLiteral("none") : html(p.architectures));
  if (p.gpus.empty()) s += QStringLiteral("GPUs: none<br>");
  for (const mnv2::remote::ProbeGpu& g : p.gpus)
    s += QStringLiteral("GPU %1: %2 (sm %3, %4 GiB) %5<br>")
             .arg(g.index)
             .arg(html(g.name), html(g.compute_capability))
             .arg(double(g.memory_bytes) / double(int64_t{1} << 30), 0, 'f', 0)
             .arg(html(g.uuid));
  s += QStringLiteral("<br><b>Backends</b><ul>");
  for (const mnv2::remote::ProbeBackend& b : p.backends)
    s += b.available ? QStringLiteral("<li>%1: available</li>").arg(html(b.name))
                     : QStringLiteral("<li>%1: <i>not available</i>: %2</li>").arg(html(b.name), html(b.reason));
  s += QStringLiteral("</ul>");
  if (!p.problems.empty()) {
    s += QStringLiteral("<b style='color:#b02a37'>Problems</b><ul>");
    for (const std::string& problem : p.problems) s += QStringLiteral("<li>%1</li>").arg(html(problem));
    s += QStringLiteral("</ul>");
  }
  return s;
}

}  // namespace

TargetsDialog::TargetsDialog(TargetsModel* targets, RunController* controller, QWidget* parent)
    : QDialog(parent), m_targets(targets), m_controller(controller) {
  setObjectName(QStringLiteral("targetsDialog"));
  setWindowTitle(QStringLiteral("Remote targets"));

  // The list and what can be done with the one selected.
  m_fileLabel = new QLabel(this);
  m_fileLabel->setObjectName(QStringLiteral("targetsFile"));
  m_fileLabel->setWordWrap(true);
  m_fileLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("targetsTable"));
  m_table->setModel(m_targets);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->verticalHeader()->hide();
  m_remove = new QPushButton(QStringLiteral("Remove"), this);
  m_remove->setObjectName(QStringLiteral("targetRemove"));
  m_probe = new QPushButton(QStringLiteral("Probe"), this);
  m_probe->setObjectName(QStringLiteral("targetProbe"));
  m_probe->setToolTip(QStringLiteral(
      "Ask the target what it has (GPUs, driver, CUDA, mnv2, backends), the way a run reaches it: ssh, and srun for a "
      "Slurm target (a probe then waits for an allocation like a run)"));
  m_cancelProbe = new QPushButton(QStringLiteral("Cancel probe"), this);
  m_cancelProbe->setObjectName(QStringLiteral("targetCancelProbe"));
  m_connect = new QPushButton(QStringLiteral("Connect…"), this);
  m_connect->setObjectName(QStringLiteral("targetConnect"));
  m_connect->setToolTip(QStringLiteral(
      "Log in once, interactively: a passphrase, a one-time code or a new host key goes to OpenSSH's own askpass "
      "prompt ($SSH_ASKPASS). The connection is kept for an hour and runs reuse it; runs themselves never prompt."));
  auto* listButtons = new QHBoxLayout;
  for (QPushButton* b : {m_remove, m_probe, m_cancelProbe, m_connect}) listButtons->addWidget(b);
  listButtons->addStretch(1);
  m_connectStatus = new QLabel(this);
  m_connectStatus->setObjectName(QStringLiteral("targetConnectStatus"));
  m_connectStatus->setWordWrap(true);
  m_connectStatus->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_probeView = new QTextBrowser(this);
  m_probeView->setObjectName(QStringLiteral("targetProbeView"));
  m_probeView->setPlaceholderText(QStringLiteral("Select a target and press Probe to see what it has."));

  auto* listBox = new QGroupBox(QStringLiteral("Targets"), this);
  auto* listLayout = new QVBoxLayout(listBox);
  listLayout->addWidget(m_fileLabel);
  listLayout->addWidget(m_table, 1);
  listLayout->addLayout(listButtons);
  listLayout->addWidget(m_connectStatus);
  listLayout->addWidget(m_probeView, 1);

  // The form: each field with its message beneath it.
  auto messageFor = [this](Field f) {
    auto* l = new QLabel(this);
    l->setObjectName(fieldName(f) + QStringLiteral("Message"));
    l->setWordWrap(true);
    l->setStyleSheet(QStringLiteral("color: #b02a37;"));
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->hide();
    m_messages.insert(f, l);
    return l;
  };
  auto withMessage = [&](QWidget* field, Field f) {
    auto* box = new QWidget(this);
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    v->addWidget(field);
    v->addWidget(messageFor(f));
    return box;
  };
  m_name = new QLineEdit(this);
  m_name->setObjectName(QStringLiteral("targetName"));
  m_name->setPlaceholderText(QStringLiteral("h200"));
  m_name->setToolTip(QStringLiteral("Letters, digits, '.', '_' and '-' (at most 64): how runs and reports name it"));
  m_destination = new QLineEdit(this);
  m_destination->setObjectName(QStringLiteral("targetDestination"));
  m_destination->setPlaceholderText(QStringLiteral("user@host[:port], or a Host of your ssh configuration"));
  m_sshConfig = new QLineEdit(this);
  m_sshConfig->setObjectName(QStringLiteral("targetSshConfig"));
  m_sshConfig->setPlaceholderText(QStringLiteral("default: your ~/.ssh/config"));
  auto* browse = new QPushButton(QStringLiteral("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("ssh configuration file"));
    if (!path.isEmpty()) m_sshConfig->setText(path);
  });
  auto* sshRow = new QWidget(this);
  auto* sshLayout = new QHBoxLayout(sshRow);
  sshLayout->setContentsMargins(0, 0, 0, 0);
  sshLayout->addWidget(m_sshConfig, 1);
  sshLayout->addWidget(browse);

  m_slurm = new QGroupBox(QStringLiteral("Run through Slurm (srun on the login node)"), this);
  m_slurm->setObjectName(QStringLiteral("targetSlurm"));
  m_slurm->setCheckable(true);
  m_slurm->setChecked(false);
  m_partition = new QLineEdit(m_slurm);
  m_partition->setObjectName(QStringLiteral("slurmPartition"));
  m_partition->setPlaceholderText(QStringLiteral("the cluster's default"));
  m_gres = new QLineEdit(m_slurm);
  m_gres->setObjectName(QStringLiteral("slurmGres"));
  m_gres->setPlaceholderText(QStringLiteral("e.g. gpu:1 or gpu:h100:1"));
  m_time = new QLineEdit(m_slurm);
  m_time->setObjectName(QStringLiteral("slurmTime"));
  m_time->setPlaceholderText(QStringLiteral("e.g. 10:00 (default: the partition's)"));
  m_account = new QLineEdit(m_slurm);
  m_account->setObjectName(QStringLiteral("slurmAccount"));
  m_account->setPlaceholderText(QStringLiteral("your default"));
  m_extra = new QPlainTextEdit(m_slurm);
  m_extra->setObjectName(QStringLiteral("slurmExtra"));
  m_extra->setPlaceholderText(QStringLiteral("more srun arguments, one per line (never split by a shell)"));
  m_extra->setMaximumHeight(60);
  m_pending = new QSpinBox(m_slurm);
  m_pending->setObjectName(QStringLiteral("slurmPending"));
  m_pending->setRange(1, 604800);
  m_pending->setValue(mnv2::remote::SlurmLauncher{}.pending_timeout_s);
  m_pending->setSuffix(QStringLiteral(" s"));
  m_pending->setToolTip(QStringLiteral("A job pending longer is cancelled, with Slurm's reason"));
  auto* slurmForm = new QFormLayout(m_slurm);
  slurmForm->addRow(QStringLiteral("Partition"), m_partition);
  slurmForm->addRow(QStringLiteral("GRES"), m_gres);
  slurmForm->addRow(QStringLiteral("Time limit"), m_time);
  slurmForm->addRow(QStringLiteral("Account"), m_account);
  slurmForm->addRow(QStringLiteral("Extra arguments"), m_extra);
  slurmForm->addRow(QStringLiteral("Pending at most"), m_pending);
  slurmForm->addRow(messageFor(Field::Slurm));

  m_setup = new QPlainTextEdit(this);
  m_setup->setObjectName(QStringLiteral("targetSetup"));
  m_setup->setPlaceholderText(
      QStringLiteral("shell lines run on the target before mnv2, one per line, e.g. "
                     "module load cuda"));
  m_setup->setMaximumHeight(70);
  m_add = new QPushButton(QStringLiteral("Add"), this);
  m_add->setObjectName(QStringLiteral("targetAdd"));

  auto* formBox = new QGroupBox(QStringLiteral("Add a target"), this);
  auto* form = new QFormLayout(formBox);
  form->addRow(QStringLiteral("Name"), withMessage(m_name, Field::Name));
  form->addRow(QStringLiteral("Destination"), withMessage(m_destination, Field::Destination));
  form->addRow(QStringLiteral("ssh config file"), withMessage(sshRow, Field::SshConfig));
  form->addRow(m_slurm);
  form->addRow(QStringLiteral("Setup lines"), withMessage(m_setup, Field::Setup));
  form->addRow(m_add);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(listBox);
  split->addWidget(formBox);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split, 1);
  layout->addWidget(close);

  connect(m_add, &QPushButton::clicked, this, [this] { addFromForm(); });
  connect(m_remove, &QPushButton::clicked, this, [this] { removeSelected(); });
  connect(m_probe, &QPushButton::clicked, this, [this] { probeSelected(); });
  connect(m_cancelProbe, &QPushButton::clicked, this, [this] { m_controller->cancelProbes(); });
  connect(m_connect, &QPushButton::clicked, this, [this] { connectSelected(); });
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] { updateButtons(); });
  connect(m_targets, &QAbstractItemModel::modelReset, this, [this] { updateButtons(); });
  connect(m_controller, &RunController::targetProbed, this, [this](const TargetProbe& p) {
    if (p.id != m_probeJob) return;
    m_probeJob = 0;
    showProbe(p);
    updateButtons();
    Q_EMIT probeFinished(p);
  });
  connect(m_controller, &RunController::targetProbeProgress, this, [this](const TargetProbe& p) {
    if (p.id == m_probeJob)
      m_probeView->setHtml(
          QStringLiteral("Probing <b>%1</b>: %2…").arg(p.target.toHtmlEscaped(), p.progress.toHtmlEscaped()));
  });
  // A field's message goes as soon as the field changes: it spoke of what was there.
  connect(m_name, &QLineEdit::textChanged, this, [this] { setMessage(Field::Name, {}); });
  connect(m_destination, &QLineEdit::textChanged, this, [this] { setMessage(Field::Destination, {}); });
  connect(m_sshConfig, &QLineEdit::textChanged, this, [this] { setMessage(Field::SshConfig, {}); });
  connect(m_setup, &QPlainTextEdit::textChanged, this, [this] { setMessage(Field::Setup, {}); });
  updateButtons();
  resize(1100, 640);
}

TargetsDialog::~TargetsDialog() {
  if (m_ssh) m_ssh->kill();  // an interactive login left waiting at its prompt
}

QLabel* TargetsDialog::messageLabel(Field field) const { return m_messages.value(field); }

void TargetsDialog::setMessage(Field field, const QString& text) {
  QLabel* l = messageLabel(field);
  l->setText(text);
  l->setVisible(!text.isEmpty());
}

QString TargetsDialog::message(Field field) const { return messageLabel(field)->text(); }

QString TargetsDialog::probeText() const { return m_probeView->toPlainText(); }

QString TargetsDialog::connectText() const { return m_connectStatus->text(); }

std::optional<mnv2::remote::Target> TargetsDialog::formTarget() {
  for (Field f : m_messages.keys()) setMessage(f, {});
  const std::string name = m_name->text().trimmed().toStdString();
  const std::string destination = m_destination->text().trimmed().toStdString();
  bool ok = true;
  auto note = [&](Field f, const QString& message) {
    if (message.isEmpty()) return;
    setMessage(f, message);
    ok = false;
  };
  const QString nameMessage = check(name, [](mnv2::remote::Target&) {});
  note(Field::Name, nameMessage);
  const std::string checked = nameMessage.isEmpty() ? name : std::string("new-target");
  mnv2::remote::Target target;
  try {
    target = mnv2::remote::target_from_destination(checked, destination);
  } catch (const std::exception& e) {
    note(Field::Destination, QString::fromStdString(mnv2::printable(e.what())));
  }
  target.name = name;
  target.ssh_config = m_sshConfig->text().trimmed().toStdString();
  note(Field::SshConfig, check(checked, [&](mnv2::remote::Target& t) { t.ssh_config = target.ssh_config; }));
  if (m_slurm->isChecked()) {
    mnv2::remote::SlurmLauncher l;
    l.partition = m_partition->text().trimmed().toStdString();
    l.gres = m_gres->text().trimmed().toStdString();
    l.time_limit = m_time->text().trimmed().toStdString();
    l.account = m_account->text().trimmed().toStdString();
    l.extra = lines(m_extra);
    l.pending_timeout_s = m_pending->value();
    target.slurm = l;
    note(Field::Slurm, check(checked, [&](mnv2::remote::Target& t) { t.slurm = l; }));
  }
  target.setup = lines(m_setup);
  note(Field::Setup, check(checked, [&](mnv2::remote::Target& t) { t.setup = target.setup; }));
  if (!ok) return std::nullopt;
  // The whole target, as the file will hold it (what no single field shows).
  try {
    mnv2::remote::check_target(target);
  } catch (const std::exception& e) {
    setMessage(Field::Name, QString::fromStdString(mnv2::printable(e.what())));
    return std::nullopt;
  }
  return target;
}

bool TargetsDialog::addFromForm() {
  const std::optional<mnv2::remote::Target> target = formTarget();
  if (!target) return false;
  if (const QString error = m_targets->add(*target); !error.isEmpty()) {
    setMessage(Field::Name, error);
    return false;
  }
  selectTarget(QString::fromStdString(target->name));
  m_name->clear();
  m_destination->clear();
  return true;
}

void TargetsDialog::selectTarget(const QString& name) {
  for (int row = 0; row < m_targets->rowCount(); ++row) {
    if (QString::fromStdString(m_targets->targets()[static_cast<size_t>(row)].name) == name) {
      m_table->selectRow(row);
      return;
    }
  }
}

QString TargetsDialog::selectedTarget() const {
  const QModelIndexList rows = m_table->selectionModel()->selectedRows();
  if (rows.isEmpty() || rows.front().row() >= m_targets->rowCount()) return {};
  return QString::fromStdString(m_targets->targets()[static_cast<size_t>(rows.front().row())].name);
}

bool TargetsDialog::removeSelected() {
  const QString name = selectedTarget();
  if (name.isEmpty()) return false;
  if (const QString error = m_targets->remove(name); !error.isEmpty()) {
    m_connectStatus->setText(error);
    return false;
  }
  return true;
}

bool TargetsDialog::probeSelected() {
  const mnv2::remote::Target* t = m_targets->find(selectedTarget());
  if (t == nullptr || m_probeJob != 0) return false;
  m_probeTarget = QString::fromStdString(t->name);
  m_probeView->setHtml(QStringLiteral("Probing <b>%1</b>…").arg(html(t->name)));
  m_probeJob = m_controller->probeTarget(*t);
  updateButtons();
  return true;
}

void TargetsDialog::showProbe(const TargetProbe& p) {
  if (p.ok)
    m_probeView->setHtml(probeHtml(p.result));
  else
    m_probeView->setHtml(QStringLiteral("<b>%1</b>: <span style='color:#b02a37'>%2</span>")
                             .arg(p.target.toHtmlEscaped(), p.error.toHtmlEscaped()));
}

bool TargetsDialog::connectSelected() {
  const mnv2::remote::Target* found = m_targets->find(selectedTarget());
  if (found == nullptr || m_ssh) return false;
  const mnv2::remote::Target target = *found;
  std::string note;
  const mnv2::remote::SessionConfig config = frontend::remote_session_config(frontend::remote_environment(), &note);
  const std::vector<std::string> argv = frontend::connect_argv(target, config);
  if (argv.empty()) {
    m_connectStatus->setText(QStringLiteral("No private folder for ssh's control socket, so no connection can be "
                                            "kept: %1")
                                 .arg(QString::fromStdString(mnv2::printable(note))));
    return false;
  }
  QStringList args;
  for (size_t i = 1; i < argv.size(); ++i) args << QString::fromStdString(argv[i]);
  auto* ssh = new QProcess(this);
  m_ssh = ssh;
  // The prompt goes to the askpass program (there is no terminal here); only this interactive login asks.
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("SSH_ASKPASS_REQUIRE"), QStringLiteral("force"));
  ssh->setProcessEnvironment(env);
  ssh->setProgram(QString::fromStdString(argv.front()));
  ssh->setArguments(args);
  ssh->setProcessChannelMode(QProcess::SeparateChannels);
  const QString who = QString::fromStdString(mnv2::printable(target.name));
  m_connectStatus->setText(QStringLiteral("Connecting to %1 (%2): answer OpenSSH's prompt if one opens…")
                               .arg(who, QString::fromStdString(mnv2::printable(target.host))));
  connect(ssh, &QProcess::finished, this, [this, ssh, target, who](int code, QProcess::ExitStatus status) {
    const QString err = QString::fromStdString(mnv2::printable(ssh->readAllStandardError().trimmed().toStdString()));
    const bool ok = status == QProcess::NormalExit && code == 0;
    if (ok) {
      m_connectStatus->setText(
          QStringLiteral("Connected to %1: the connection is kept for an hour, and runs and probes reuse it.")
              .arg(who));
      Q_EMIT connected(target);
    } else {
      const bool askpass = qEnvironmentVariableIsSet("SSH_ASKPASS");
      m_connectStatus->setText(
          QStringLiteral("Could not connect to %1 (ssh exit status %2): %3%4")
              .arg(who)
              .arg(code)
              .arg(err.isEmpty() ? QStringLiteral("(no message)") : err,
                   askpass ? QString()
                           : QStringLiteral(" — $SSH_ASKPASS is not set: name a graphical askpass program "
                                            "(ssh-askpass, ksshaskpass), or run 'mnv2 targets connect %1' in a "
                                            "terminal.")
                                 .arg(who)));
    }
    ssh->deleteLater();
    m_ssh = nullptr;
    updateButtons();
    Q_EMIT connectFinished(ok);
  });
  connect(ssh, &QProcess::errorOccurred, this, [this, ssh](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    m_connectStatus->setText(QStringLiteral("Could not start %1: %2").arg(ssh->program(), ssh->errorString()));
    ssh->deleteLater();
    m_ssh = nullptr;
    updateButtons();
    Q_EMIT connectFinished(false);
  });
  ssh->start();
  ssh->closeWriteChannel();
  updateButtons();
  return true;
}

void TargetsDialog::updateButtons() {
  const bool selected = !selectedTarget().isEmpty();
  m_remove->setEnabled(selected);
  m_probe->setEnabled(selected && m_probeJob == 0);
  m_cancelProbe->setEnabled(m_probeJob != 0);
  m_connect->setEnabled(selected && !m_ssh);
  m_fileLabel->setText(m_targets->error().isEmpty()
                           ? QStringLiteral("In %1 (shared with mnv2 targets)").arg(m_targets->path())
                           : m_targets->error());
}

}  // namespace mnv2::ui
