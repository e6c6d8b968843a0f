// The Accuracy tab (see accuracy_page.h).
#include "widgets/accuracy_page.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QThread>
#include <QVBoxLayout>

#include "models/report_access.h"
#include "widgets/backend_picker.h"

namespace mnv2::ui {

namespace {

QTableView* resultTable(QWidget* parent, QAbstractItemModel* model, const QString& objectName) {
  auto* view = new QTableView(parent);
  view->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  view->setObjectName(objectName);
  view->setModel(model);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(20);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setWordWrap(false);
  return view;
}

QString seconds(double s) { return QStringLiteral("%1 s").arg(s, 0, 'f', s < 10 ? 3 : 1); }

}  // namespace

AccuracyPage::AccuracyPage(QWidget* parent) : QWidget(parent) {
  m_set = new QLineEdit(this);
  m_set->setObjectName(QStringLiteral("evalSet"));
  m_set->setPlaceholderText(QStringLiteral("a folder of class folders, or a list file"));
  auto* browseFolder = new QPushButton(QStringLiteral("Folder…"), this);
  auto* browseList = new QPushButton(QStringLiteral("List file…"), this);
  m_images = new QLineEdit(this);
  m_images->setObjectName(QStringLiteral("evalImages"));
  m_images->setPlaceholderText(QStringLiteral("the list file's folder"));
  m_images->setToolTip(QStringLiteral("Where a list file's relative file names are found"));
  m_browseImages = new QPushButton(QStringLiteral("Browse…"), this);
  auto* hint = new QLabel(
      QStringLiteral("A folder with one sub-folder per class, named by class index (<tt>286</tt>) or class name "
                     "(<tt>Egyptian_cat</tt>); or a list file of <tt>FILENAME LABEL-INDEX</tt> lines with its "
                     "images folder. Unreadable images are skipped and listed."),
      this);
  hint->setWordWrap(true);
  hint->setStyleSheet(QStringLiteral("color: #555;"));

  m_backend = new BackendCombo(this);
  m_backend->setObjectName(QStringLiteral("evalBackend"));
  m_precision = new PrecisionCombo(this);
  m_precision->setObjectName(QStringLiteral("evalPrecision"));
  m_batch = new QSpinBox(this);
  m_batch->setObjectName(QStringLiteral("evalBatch"));
  m_batch->setRange(1, 4096);
  m_batch->setValue(8);
  m_batch->setToolTip(QStringLiteral("Images per forward pass (a short last batch runs padded)"));
  m_threads = new QSpinBox(this);
  m_threads->setObjectName(QStringLiteral("evalThreads"));
  m_threads->setRange(0, 64);
  m_threads->setSpecialValueText(QStringLiteral("auto"));
  m_threads->setToolTip(QStringLiteral("Threads decoding and preprocessing images ahead of inference; auto: "
                                       "min(4, hardware threads) = %1")
                            .arg(std::min(4, std::max(1, QThread::idealThreadCount()))));
  m_run = new QPushButton(QStringLiteral("Evaluate"), this);
  m_run->setObjectName(QStringLiteral("evalRun"));
  m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
  m_cancel->setObjectName(QStringLiteral("evalCancel"));
  m_progress = new QProgressBar(this);
  m_progress->setObjectName(QStringLiteral("evalProgress"));
  m_progress->setRange(0, 1000);
  m_progress->setValue(0);
  m_status = new QLabel(QStringLiteral("Choose a labelled set, then Evaluate."), this);
  m_status->setObjectName(QStringLiteral("evalStatus"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_summary = new QLabel(this);
  m_summary->setObjectName(QStringLiteral("evalSummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_export = new QPushButton(QStringLiteral("Export CSV…"), this);
  m_export->setObjectName(QStringLiteral("evalExport"));

  m_misses = new EvalResultModel(EvalResultModel::Kind::Misclassified, this);
  m_skips = new EvalResultModel(EvalResultModel::Kind::Skipped, this);
  m_missView = resultTable(this, m_misses, QStringLiteral("evalMisclassified"));
  m_skipView = resultTable(this, m_skips, QStringLiteral("evalSkipped"));
  // A misclassified row's image: double-click (or the context menu) opens and classifies it in the input panel.
  m_missView->setToolTip(QStringLiteral("Double-click a row to open its image in the input panel"));
  connect(m_missView, &QAbstractItemView::doubleClicked, this, [this](const QModelIndex& index) {
    const QString path = index.data(EvalResultModel::PathRole).toString();
    if (!path.isEmpty()) Q_EMIT imageRequested(path);
  });
  auto* openRow = new QAction(QStringLiteral("Open the image in the input panel"), m_missView);
  openRow->setObjectName(QStringLiteral("openMisclassifiedImage"));
  connect(openRow, &QAction::triggered, this, [this] {
    const QString path = m_missView->currentIndex().data(EvalResultModel::PathRole).toString();
    if (!path.isEmpty()) Q_EMIT imageRequested(path);
  });
  m_missView->addAction(openRow);
  m_missView->setContextMenuPolicy(Qt::ActionsContextMenu);
  m_missTitle = new QLabel(this);
  m_skipTitle = new QLabel(this);

  auto* setRow = new QHBoxLayout;
  setRow->addWidget(m_set, 1);
  setRow->addWidget(browseFolder);
  setRow->addWidget(browseList);
  auto* imagesRow = new QHBoxLayout;
  imagesRow->addWidget(m_images, 1);
  imagesRow->addWidget(m_browseImages);
  auto* settingsRow = new QHBoxLayout;
  settingsRow->addWidget(m_backend);
  settingsRow->addSpacing(12);
  settingsRow->addWidget(new QLabel(QStringLiteral("Precision"), this));
  settingsRow->addWidget(m_precision);
  settingsRow->addSpacing(12);
  settingsRow->addWidget(new QLabel(QStringLiteral("Batch"), this));
  settingsRow->addWidget(m_batch);
  settingsRow->addSpacing(12);
  settingsRow->addStretch(1);
  // Threads and the buttons on a row of their own: one row of everything was wider than a laptop's tab.
  auto* runRow = new QHBoxLayout;
  runRow->addWidget(m_threads);
  runRow->addStretch(1);
  runRow->addWidget(m_run);
  runRow->addWidget(m_cancel);
  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Labelled set"), setRow);
  form->addRow(QStringLiteral("Images folder"), imagesRow);
  form->addRow(hint);
  form->addRow(QStringLiteral("Backend"), settingsRow);
  form->addRow(QStringLiteral("Loader threads"), runRow);

  auto* resultRow = new QHBoxLayout;
  resultRow->addWidget(m_summary, 1);
  resultRow->addWidget(m_export, 0, Qt::AlignTop);

  auto* split = new QSplitter(Qt::Horizontal, this);
  for (auto [title, view] : {std::pair{m_missTitle, m_missView}, std::pair{m_skipTitle, m_skipView}}) {
    auto* box = new QWidget(split);
    auto* l = new QVBoxLayout(box);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(title);
    l->addWidget(view, 1);
    split->addWidget(box);
  }
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(m_progress);
  layout->addWidget(m_status);
  layout->addLayout(resultRow);
  layout->addWidget(split, 1);

  connect(browseFolder, &QPushButton::clicked, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, QStringLiteral("Folder of class folders"), m_set->text());
    if (!dir.isEmpty()) m_set->setText(dir);
  });
  connect(browseList, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("List file (FILENAME LABEL lines)"),
                                                      QFileInfo(m_set->text()).absolutePath(),
                                                      QStringLiteral("Lists (*.txt *.lst *.list);;All files (*)"));
    if (!file.isEmpty()) m_set->setText(file);
  });
  connect(m_browseImages, &QPushButton::clicked, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, QStringLiteral("Images of the list file"), m_images->text());
    if (!dir.isEmpty()) m_images->setText(dir);
  });
  connect(m_set, &QLineEdit::textChanged, this, [this] { updateEnabled(); });
  connect(m_backend, &QComboBox::currentIndexChanged, this, [this] {
    const BackendStatus* b = m_backend->status(m_backend->backend());
    m_precision->setSupported(b ? std::vector<const BackendStatus*>{b} : std::vector<const BackendStatus*>{});
    updateEnabled();
  });
  connect(m_run, &QPushButton::clicked, this, &AccuracyPage::runRequested);
  connect(m_cancel, &QPushButton::clicked, this, &AccuracyPage::cancelRequested);
  connect(m_export, &QPushButton::clicked, this, &AccuracyPage::exportRequested);
  showRecord();
  updateEnabled();
}

void AccuracyPage::setBackends(const std::vector<BackendStatus>& backends) { m_backend->setBackends(backends); }

void AccuracyPage::setSet(const QString& set, const QString& imagesDir) {
  m_set->setText(set);
  m_images->setText(imagesDir);
}

bool AccuracyPage::selectBackend(const QString& name) { return m_backend->select(name); }
bool AccuracyPage::setPrecision(mnv2::Precision precision) { return m_precision->setPrecision(precision); }
void AccuracyPage::setBatch(int batch) { m_batch->setValue(batch); }
void AccuracyPage::setLoaderThreads(int threads) { m_threads->setValue(threads); }

std::optional<EvalRequest> AccuracyPage::request(QString* error) const {
  auto refuse = [&](const QString& why) {
    if (error) *error = why;
    return std::nullopt;
  };
  const QString set = m_set->text().trimmed();
  if (set.isEmpty()) return refuse(QStringLiteral("choose a labelled set: a folder of class folders or a list file"));
  if (m_backend->backend().isEmpty()) return refuse(QStringLiteral("no backend is available"));
  EvalRequest r;
  r.set = set;
  r.imagesDir = m_images->text().trimmed();
  r.config.backend = m_backend->backend().toStdString();
  r.config.precision = m_precision->precision();
  r.config.batch = m_batch->value();
  r.config.loader_threads = m_threads->value();
  return r;
}

void AccuracyPage::setRemoteRefusal(const QString& reason) {
  m_remoteRefusal = reason;
  m_run->setToolTip(reason);
  updateEnabled();
}

void AccuracyPage::setRunning(bool running) {
  m_running = running;
  updateEnabled();
}

void AccuracyPage::evalStarted(const QString& what) {
  m_record.reset();
  showRecord();
  m_progress->setValue(0);
  m_status->setStyleSheet(QString());
  m_status->setText(what);
}

void AccuracyPage::setProgress(const RunProgress& p) {
  m_progress->setValue(static_cast<int>(p.fraction * m_progress->maximum()));
  m_status->setText(QStringLiteral("%1: %2 / %3 images, %4 images/s")
                        .arg(runLabel(p.backend, m_precision->precision()))
                        .arg(p.done)
                        .arg(p.total)
                        .arg(p.imagesPerS, 0, 'f', 1));
}

void AccuracyPage::setOutcome(const EvalOutcome& outcome) {
  m_record = std::make_shared<const EvalRecord>(outcome.record);
  m_progress->setValue(m_progress->maximum());
  const mnv2::EvalResult& r = m_record->result;
  m_status->setStyleSheet(QString());
  m_status->setText(QStringLiteral("done: %1 images in %2, %3 images/s")
                        .arg(r.images)
                        .arg(seconds(r.wall_s))
                        .arg(r.images_per_s, 0, 'f', 1));
  showRecord();
}

void AccuracyPage::setError(const QString& message) {
  m_progress->setValue(0);
  m_status->setStyleSheet(QStringLiteral("color: #b42318;"));
  m_status->setText(QStringLiteral("Evaluation failed: ") + message);
}

void AccuracyPage::setCancelled() {
  m_status->setStyleSheet(QString());
  m_status->setText(QStringLiteral("cancelled"));
}

void AccuracyPage::loadSettings(const QSettings& s) {
  setSet(s.value(QStringLiteral("eval/set")).toString(), s.value(QStringLiteral("eval/images")).toString());
  m_batch->setValue(s.value(QStringLiteral("eval/batch"), 8).toInt());
  m_threads->setValue(s.value(QStringLiteral("eval/threads"), 0).toInt());
}

void AccuracyPage::saveSettings(QSettings& s) const {
  s.setValue(QStringLiteral("eval/set"), m_set->text());
  s.setValue(QStringLiteral("eval/images"), m_images->text());
  s.setValue(QStringLiteral("eval/batch"), m_batch->value());
  s.setValue(QStringLiteral("eval/threads"), m_threads->value());
}

QString AccuracyPage::summaryText() const { return m_summary->text(); }
QString AccuracyPage::statusText() const { return m_status->text(); }

void AccuracyPage::showRecord() {
  m_misses->setRecord(m_record);
  m_skips->setRecord(m_record);
  const int misses = m_misses->rowCount(), skips = m_skips->rowCount();
  m_missTitle->setText(QStringLiteral("<b>Misclassified</b> (top-1 wrong): %1").arg(misses));
  m_skipTitle->setText(QStringLiteral("<b>Skipped</b> (unreadable): %1").arg(skips));
  for (QTableView* v : {m_missView, m_skipView}) v->resizeColumnsToContents();
  if (!m_record) {
    m_summary->setText(QStringLiteral("No evaluation yet."));
    updateEnabled();
    return;
  }
  const mnv2::EvalResult& r = m_record->result;
  const mnv2::EvalConfig& c = r.config;
  // Built line by line: a path or description holding "%1" must not be taken for a placeholder.
  const QString figures =
      QStringLiteral(
          "<span style='font-size:large'><b>top-1 %1%</b> (%2 / %3) &nbsp; <b>top-5 %4%</b> (%5 / %3)</span>")
          .arg(r.top1 * 100, 0, 'f', 2)
          .arg(r.top1_correct)
          .arg(r.images)
          .arg(r.top5 * 100, 0, 'f', 2)
          .arg(r.top5_correct);
  const QString how = QStringLiteral("<b>") + runLabel(shownText(c.backend), c.precision).toHtmlEscaped() +
                      QStringLiteral("</b> (") + shownText(r.backend_description).toHtmlEscaped() +
                      QStringLiteral("), batch %1, %2 loader threads, ").arg(c.batch).arg(c.loader_threads) +
                      m_record->decoder.toHtmlEscaped() +
                      QStringLiteral(" decoder; %1 images evaluated, %2 skipped").arg(r.images).arg(r.skipped.size());
  const QString times = QStringLiteral("wall %1 · <b>%2 images/s</b> · inference %3 · waiting for the loaders %4")
                            .arg(seconds(r.wall_s))
                            .arg(r.images_per_s, 0, 'f', 1)
                            .arg(seconds(r.inference_s), seconds(r.loader_wait_s));
  m_summary->setText(figures + QStringLiteral("<br>") + how + QStringLiteral("<br>") + times +
                     QStringLiteral("<br>set: ") + m_record->set.toHtmlEscaped());
  updateEnabled();
}

void AccuracyPage::updateEnabled() {
  for (QWidget* w : std::initializer_list<QWidget*>{m_set, m_images, m_backend, m_precision, m_batch, m_threads})
    w->setEnabled(!m_running);
  m_browseImages->setEnabled(!m_running);
  m_run->setEnabled(!m_running && !m_backend->backend().isEmpty() && m_remoteRefusal.isEmpty());
  m_cancel->setEnabled(m_running);
  m_export->setEnabled(m_record != nullptr);
}

}  // namespace mnv2::ui
