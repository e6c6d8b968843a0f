// The Kernel lab page (see kernel_lab_page.h). `mnv2 lab` decides and measures; this page lays out its
// result and keeps the versions of the user's kernel.
#include "widgets/kernel_lab_page.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "mnv2/exit_codes.h"
#include "widgets/chart_style.h"
#include "widgets/code_editor.h"

namespace mnv2::ui {

namespace {

constexpr qint64 kMaxSourceBytes = 4 * 1024 * 1024;  // a kernel file; anything bigger is not one
constexpr int kMaxOutputLines = 20000;

// The three series of the per-layer chart: the user's kernel, ours (cuda) and the cuDNN baseline, in the
// colours the other charts give those backends.
QColor userColor() { return seriesColor(QStringLiteral("lab"), 0); }
QColor oursColor() { return seriesColor(QStringLiteral("cuda"), 0); }
QColor cudnnColor() { return seriesColor(QStringLiteral("cudnn"), 0); }

QString micro(const std::optional<double>& us) {
  return us ? QStringLiteral("%1 µs").arg(*us, 0, 'f', *us < 100 ? 2 : 1) : QStringLiteral("—");
}
QString milli(const std::optional<double>& ms) {
  return ms ? QStringLiteral("%1 ms").arg(*ms, 0, 'f', 3) : QStringLiteral("—");
}

void emptyText(QCustomPlot* plot, const QString& text) {
  auto* t = new QCPItemText(plot);
  t->setObjectName(QStringLiteral("labEmpty"));
  t->position->setType(QCPItemPosition::ptAxisRectRatio);
  t->position->setCoords(0.5, 0.5);
  t->setText(text);
  t->setColor(QColor(110, 110, 110));
}

QPushButton* button(const QString& text, const QString& objectName, const QString& accessible, QWidget* parent) {
  auto* b = new QPushButton(text, parent);
  b->setObjectName(objectName);
  b->setAccessibleName(accessible);  // apart from the Run and Cancel buttons of the run panel (screenshots.sh)
  return b;
}

}  // namespace

KernelLabPage::KernelLabPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kernelLabPage"));
  m_process = new LabProcess(this);

  // Row 1: what runs. Row 2: the file and the jobs.
  m_slot = new QComboBox(this);
  m_slot->setObjectName(QStringLiteral("labSlot"));
  m_slot->setAccessibleName(QStringLiteral("Slot"));
  auto* slotModel = new QStandardItemModel(m_slot);
  for (const QString& s : labSlots()) {
    auto* item = new QStandardItem(s);
    const QString refusal = labSlotRefusal(s);
    if (!refusal.isEmpty()) {
      item->setEnabled(false);
      item->setText(s + QStringLiteral(" (not yet)"));
      item->setToolTip(refusal);
    }
    item->setData(s, Qt::UserRole);
    slotModel->appendRow(item);
  }
  m_slot->setModel(slotModel);
  m_slot->setToolTip(
      QStringLiteral("The kind of layer your kernel replaces: every layer of that kind, or the ones "
                     "chosen under Layers"));
  m_template = button(QStringLiteral("New from template"), QStringLiteral("labTemplate"),
                      QStringLiteral("New from template"), this);
  m_template->setToolTip(
      QStringLiteral("Replace the editor's text with the slot's template (mnv2 lab --template): "
                     "our simplest correct kernel for it, with its parameter struct"));
  m_precision = new QComboBox(this);
  m_precision->setObjectName(QStringLiteral("labPrecision"));
  m_precision->setAccessibleName(QStringLiteral("Precision"));
  m_precision->addItems({QStringLiteral("fp32"), QStringLiteral("fp16")});
  m_batch = new QSpinBox(this);
  m_batch->setObjectName(QStringLiteral("labBatch"));
  m_batch->setAccessibleName(QStringLiteral("Batch"));
  m_batch->setRange(1, 4096);
  // Compiling needs no GPU, but without one NVRTC must be told the architecture (mnv2 lab --arch).
  m_arch = new QComboBox(this);
  m_arch->setObjectName(QStringLiteral("labArch"));
  m_arch->setAccessibleName(QStringLiteral("Architecture"));
  m_arch->addItem(QStringLiteral("GPU's arch"), QString());
  for (const char* a : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"})
    m_arch->addItem(QString::fromLatin1(a), QString::fromLatin1(a));
  m_arch->setToolTip(
      QStringLiteral("The architecture NVRTC compiles for: the GPU's own, or a chosen one (needed to "
                     "compile on a machine without a GPU; Check and Run need the GPU's)"));
  m_layers = new QLineEdit(this);
  m_layers->setObjectName(QStringLiteral("labLayers"));
  m_layers->setAccessibleName(QStringLiteral("Layers"));
  m_layers->setPlaceholderText(QStringLiteral("all of the slot"));
  m_layers->setToolTip(QStringLiteral("Layer numbers, comma-separated (e.g. 2,7); empty: every layer of the slot"));
  m_layers->setMinimumWidth(70);
  m_layerMenu = new QToolButton(this);
  m_layerMenu->setObjectName(QStringLiteral("labLayerMenu"));
  m_layerMenu->setText(QStringLiteral("…"));
  m_layerMenu->setToolTip(QStringLiteral("Choose among the slot's layers"));
  m_layerMenu->setPopupMode(QToolButton::InstantPopup);
  m_layerMenu->setMenu(new QMenu(m_layerMenu));
  // Three short rows, so that the page fits a 1024-pixel window beside the input column: what runs; the layers
  // and the jobs; the file, over the editor.
  auto* row1 = new QHBoxLayout;
  row1->addWidget(new QLabel(QStringLiteral("Slot"), this));
  row1->addWidget(m_slot);
  row1->addWidget(m_template);
  row1->addSpacing(6);
  row1->addWidget(new QLabel(QStringLiteral("Precision"), this));
  row1->addWidget(m_precision);
  row1->addWidget(new QLabel(QStringLiteral("Batch"), this));
  row1->addWidget(m_batch);
  row1->addWidget(m_arch);
  row1->addStretch(1);

  m_open = button(QStringLiteral("Open…"), QStringLiteral("labOpen"), QStringLiteral("Open kernel"), this);
  m_save = button(QStringLiteral("Save"), QStringLiteral("labSave"), QStringLiteral("Save kernel"), this);
  m_save->setToolTip(QStringLiteral("Save the kernel (Ctrl+S on this page)"));
  m_file = new QLabel(this);
  m_file->setObjectName(QStringLiteral("labFile"));
  m_file->setMinimumWidth(40);
  m_file->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  m_compile = button(QStringLiteral("Compile"), QStringLiteral("labCompile"), QStringLiteral("Compile kernel"), this);
  m_compile->setToolTip(QStringLiteral("Compile with NVRTC only (Ctrl+B)"));
  m_check = button(QStringLiteral("Check"), QStringLiteral("labCheck"), QStringLiteral("Check kernel"), this);
  m_check->setToolTip(
      QStringLiteral("Compile and check every chosen layer against the CPU reference and our kernel, "
                     "without timing (Ctrl+T)"));
  m_run = button(QStringLiteral("Run"), QStringLiteral("labRun"), QStringLiteral("Run kernel"), this);
  m_run->setToolTip(QStringLiteral("Compile, check, then time per layer against ours and cuDNN (Ctrl+R)"));
  m_cancel = button(QStringLiteral("Cancel"), QStringLiteral("labCancel"), QStringLiteral("Cancel kernel job"), this);
  m_cancel->setEnabled(false);
  auto* row2 = new QHBoxLayout;
  row2->addWidget(new QLabel(QStringLiteral("Layers"), this));
  row2->addWidget(m_layers, 1);
  row2->addWidget(m_layerMenu);
  row2->addSpacing(6);
  row2->addWidget(m_compile);
  row2->addWidget(m_check);
  row2->addWidget(m_run);
  row2->addWidget(m_cancel);

  m_status = new QLabel(QStringLiteral("Choose a slot, then New from template or Open…; Compile, Check or Run."), this);
  m_status->setObjectName(QStringLiteral("labStatus"));
  m_status->setAccessibleName(QStringLiteral("Kernel lab status"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_status->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

  // The editor.
  m_editor = new CodeEditor(this);
  m_editor->setObjectName(QStringLiteral("labEditor"));
  m_editor->setAccessibleName(QStringLiteral("Kernel source"));
  m_editor->setPlaceholderText(
      QStringLiteral("Your kernel: New from template starts from our simplest correct kernel "
                     "for the slot; Open… reads a .cu file."));
  m_editor->setMinimumSize(200, 100);
  auto* editorBox = new QWidget(this);
  auto* editorLayout = new QVBoxLayout(editorBox);
  editorLayout->setContentsMargins(0, 0, 0, 0);
  editorLayout->setSpacing(2);
  auto* fileRow = new QHBoxLayout;
  fileRow->addWidget(m_file, 1);
  fileRow->addWidget(m_open);
  fileRow->addWidget(m_save);
  editorLayout->addLayout(fileRow);
  editorLayout->addWidget(m_editor, 1);

  // Results: the chart with the end-to-end line, the check table, the history.
  m_results = new QTabWidget(this);
  m_results->setObjectName(QStringLiteral("labResults"));
  auto* chartBox = new QWidget(m_results);
  auto* chartLayout = new QVBoxLayout(chartBox);
  chartLayout->setContentsMargins(2, 2, 2, 2);
  m_chart = new QCustomPlot(chartBox);
  m_chart->setObjectName(QStringLiteral("labChart"));
  applyPlotStyle(m_chart);
  m_chart->setMinimumSize(200, 100);
  m_chart->yAxis->setLabel(QStringLiteral("median kernel time (µs, CUPTI)"));
  m_chart->xAxis->setLabel(QStringLiteral("layer"));
  // The legend in one row (yours, ours, cuDNN): three rows covered the bars of a laptop-sized chart.
  m_chart->legend->setFillOrder(QCPLegend::foColumnsFirst);
  m_chart->setToolTip(
      QStringLiteral("Median kernel time per layer (CUPTI): your kernel, our kernel for the slot "
                     "(unfused plan) and the fused cuDNN baseline"));
  m_endToEnd = new QLabel(chartBox);
  m_endToEnd->setObjectName(QStringLiteral("labEndToEnd"));
  m_endToEnd->setWordWrap(true);
  m_endToEnd->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  chartLayout->addWidget(m_chart, 1);
  chartLayout->addWidget(m_endToEnd);
  m_checkModel = new LabLayerTableModel(this);
  m_checkTable = new QTableView(m_results);
  m_checkTable->setObjectName(QStringLiteral("labCheckTable"));
  m_checkTable->setModel(m_checkModel);
  m_checkTable->setTabKeyNavigation(false);
  m_checkTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_checkTable->verticalHeader()->hide();
  m_checkTable->verticalHeader()->setDefaultSectionSize(20);
  m_checkTable->horizontalHeader()->setStretchLastSection(true);
  auto* historyBox = new QWidget(m_results);
  auto* historyLayout = new QVBoxLayout(historyBox);
  historyLayout->setContentsMargins(2, 2, 2, 2);
  m_history = new LabHistoryModel(this);
  m_historyTable = new QTableView(historyBox);
  m_historyTable->setObjectName(QStringLiteral("labHistoryTable"));
  m_historyTable->setModel(m_history);
  m_historyTable->setTabKeyNavigation(false);
  m_historyTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_historyTable->setSelectionMode(QAbstractItemView::SingleSelection);
  m_historyTable->verticalHeader()->hide();
  m_historyTable->verticalHeader()->setDefaultSectionSize(20);
  m_historyTable->horizontalHeader()->setStretchLastSection(true);
  m_historyTable->setToolTip(
      QStringLiteral("Click a version to see its result; double-click (or Restore) to put "
                     "its source back in the editor"));
  m_historyChart = new QCustomPlot(historyBox);
  m_historyChart->setObjectName(QStringLiteral("labHistoryChart"));
  applyPlotStyle(m_historyChart);
  m_historyChart->setMinimumSize(200, 110);
  m_historyChart->yAxis->ticker()->setTickCount(3);
  m_historyChart->xAxis->setLabel(QStringLiteral("version"));
  m_historyChart->yAxis->setLabel(QStringLiteral("yours, µs"));
  m_restore = button(QStringLiteral("Restore source"), QStringLiteral("labRestore"),
                     QStringLiteral("Restore version source"), historyBox);
  m_restore->setEnabled(false);
  auto* historySplit = new QSplitter(Qt::Vertical, historyBox);
  historySplit->addWidget(m_historyTable);
  historySplit->addWidget(m_historyChart);
  historySplit->setChildrenCollapsible(false);
  historySplit->setStretchFactor(0, 1);
  historySplit->setStretchFactor(1, 2);
  historyLayout->addWidget(historySplit, 1);
  auto* restoreRow = new QHBoxLayout;
  restoreRow->addStretch(1);
  restoreRow->addWidget(m_restore);
  historyLayout->addLayout(restoreRow);
  m_results->addTab(chartBox, QStringLiteral("Per layer"));
  m_results->addTab(m_checkTable, QStringLiteral("Check"));
  m_results->addTab(historyBox, QStringLiteral("History"));
  m_results->setMinimumSize(220, 100);

  // Bottom: the live output, the diagnostics, the commands to dig deeper.
  m_bottom = new QTabWidget(this);
  m_bottom->setObjectName(QStringLiteral("labBottom"));
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  m_output = new QPlainTextEdit(m_bottom);
  m_output->setObjectName(QStringLiteral("labOutput"));
  m_output->setReadOnly(true);
  m_output->setFont(mono);
  m_output->setMaximumBlockCount(kMaxOutputLines);
  m_output->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_diagnostics = new QListWidget(m_bottom);
  m_diagnostics->setObjectName(QStringLiteral("labDiagnostics"));
  m_diagnostics->setToolTip(QStringLiteral("Click a message to go to its line"));
  m_commands = new QPlainTextEdit(m_bottom);
  m_commands->setObjectName(QStringLiteral("labCommands"));
  m_commands->setReadOnly(true);
  m_commands->setFont(mono);
  m_commands->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  m_bottom->addTab(m_output, QStringLiteral("Output"));
  m_bottom->addTab(m_diagnostics, QStringLiteral("Diagnostics"));
  m_bottom->addTab(m_commands, QStringLiteral("Commands"));
  m_bottom->setMinimumHeight(60);

  auto* top = new QSplitter(Qt::Horizontal, this);
  top->setObjectName(QStringLiteral("labTopSplit"));
  top->addWidget(editorBox);
  top->addWidget(m_results);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  top->setChildrenCollapsible(false);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->setObjectName(QStringLiteral("labSplit"));
  split->addWidget(top);
  split->addWidget(m_bottom);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(row1);
  layout->addLayout(row2);
  layout->addWidget(m_status);
  layout->addWidget(split, 1);

  connect(m_slot, &QComboBox::currentIndexChanged, this, [this] {
    rebuildLayerMenu();
    m_layers->clear();  // another slot's layers would be refused
  });
  connect(m_template, &QPushButton::clicked, this, [this] { newFromTemplate(); });
  connect(m_open, &QPushButton::clicked, this, [this] { openInteractive(); });
  connect(m_save, &QPushButton::clicked, this, [this] { save(); });
  connect(m_compile, &QPushButton::clicked, this, [this] { compile(); });
  connect(m_check, &QPushButton::clicked, this, [this] { check(); });
  connect(m_run, &QPushButton::clicked, this, [this] { run(); });
  connect(m_cancel, &QPushButton::clicked, this, [this] { cancel(); });
  connect(m_editor->document(), &QTextDocument::modificationChanged, this, [this](bool modified) {
    updateFileLabel();
    Q_EMIT modifiedChanged(modified);
  });
  connect(m_process, &LabProcess::started, this,
          [this](const QString& command) { m_output->appendPlainText(QStringLiteral("$ ") + command); });
  connect(m_process, &LabProcess::outputLine, this, [this](const QString& line) { m_output->appendPlainText(line); });
  connect(m_process, &LabProcess::finished, this, [this](const LabProcess::Outcome& o) { onFinished(o); });
  auto jump = [this](QListWidgetItem* item) {
    const int line = item->data(Qt::UserRole).toInt();
    if (line > 0) m_editor->goToLine(line, item->data(Qt::UserRole + 1).toInt());
  };
  connect(m_diagnostics, &QListWidget::itemClicked, this, jump);
  connect(m_diagnostics, &QListWidget::itemActivated, this, jump);
  connect(m_historyTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            m_restore->setEnabled(current.isValid());
            if (current.isValid()) showVersion(current.row());
          });
  connect(m_historyTable, &QTableView::doubleClicked, this,
          [this](const QModelIndex& index) { restoreVersion(index.row()); });
  connect(m_restore, &QPushButton::clicked, this, [this] { restoreVersion(m_historyTable->currentIndex().row()); });

  updateFileLabel();
  rebuildChart();
  rebuildHistoryChart();
  rebuildLayerMenu();
}

KernelLabPage::~KernelLabPage() = default;

void KernelLabPage::setTopology(std::vector<mnv2::Layer> topology) {
  m_topology = std::move(topology);
  rebuildLayerMenu();
}

QString KernelLabPage::slot() const { return m_slot->currentData(Qt::UserRole).toString(); }

bool KernelLabPage::selectSlot(const QString& slot) {
  const int i = m_slot->findData(slot, Qt::UserRole);
  if (i < 0 || !labSlotRefusal(slot).isEmpty()) return false;
  m_slot->setCurrentIndex(i);
  return true;
}

bool KernelLabPage::setPrecision(const QString& precision) {
  const int i = m_precision->findText(precision);
  if (i < 0) return false;
  m_precision->setCurrentIndex(i);
  return true;
}

void KernelLabPage::setLayers(const QString& layers) { m_layers->setText(layers); }
void KernelLabPage::setBatch(int batch) { m_batch->setValue(batch); }
bool KernelLabPage::setArch(const QString& arch) {
  const int i = m_arch->findData(arch);
  if (i < 0) return false;
  m_arch->setCurrentIndex(i);
  return true;
}
bool KernelLabPage::isRunning() const { return m_process->isRunning(); }
bool KernelLabPage::isModified() const { return m_editor->document()->isModified(); }
QString KernelLabPage::statusText() const { return m_status->text(); }

void KernelLabPage::rebuildLayerMenu() {
  QMenu* menu = m_layerMenu->menu();
  menu->clear();
  const std::vector<int> layers = labSlotLayers(slot(), m_topology);
  m_layerMenu->setEnabled(!layers.empty());
  QAction* all = menu->addAction(QStringLiteral("All of the slot (%1 layers)").arg(layers.size()));
  connect(all, &QAction::triggered, this, [this] { m_layers->clear(); });
  menu->addSeparator();
  for (int l : layers) {
    const mnv2::Layer& layer = m_topology[static_cast<size_t>(l)];
    QAction* a = menu->addAction(QStringLiteral("%1  %2").arg(l).arg(QString::fromStdString(layer.name)));
    connect(a, &QAction::triggered, this, [this, l] {
      // Toggles the layer in the list.
      std::vector<int> now = parseLabLayers(m_layers->text(), nullptr).value_or(std::vector<int>{});
      const auto it = std::find(now.begin(), now.end(), l);
      if (it == now.end())
        now.push_back(l);
      else
        now.erase(it);
      std::sort(now.begin(), now.end());
      m_layers->setText(formatLabLayers(now));
    });
  }
}

void KernelLabPage::setStatus(const QString& text, const QColor& color) {
  m_status->setText(text);
  m_status->setStyleSheet(QStringLiteral("color: %1;").arg(color.name()));
  // screenshots.sh waits on the status through the accessibility tree: the name is fixed, the text goes here.
  m_status->setAccessibleDescription(text);
}

void KernelLabPage::setRemoteRefusal(const QString& reason) {
  const QList<QPushButton*> jobs = {m_compile, m_check, m_run};
  if (m_jobTips.isEmpty())
    for (QPushButton* b : jobs) m_jobTips << b->toolTip();
  m_remoteRefusal = reason;
  for (qsizetype i = 0; i < jobs.size(); ++i) jobs[i]->setToolTip(reason.isEmpty() ? m_jobTips[i] : reason);
  setBusy(isRunning());
}

void KernelLabPage::setBusy(bool busy) {
  for (QWidget* w : std::initializer_list<QWidget*>{m_template, m_open, m_slot}) w->setEnabled(!busy);
  for (QWidget* w : std::initializer_list<QWidget*>{m_compile, m_check, m_run})
    w->setEnabled(!busy && m_remoteRefusal.isEmpty());
  m_cancel->setEnabled(busy);
  Q_EMIT runningChanged(busy);
}

void KernelLabPage::updateFileLabel() {
  const QString name = m_path.isEmpty() ? QStringLiteral("untitled.cu") : QFileInfo(m_path).fileName();
  m_file->setText(isModified() ? name + QStringLiteral(" *") : name);
  m_file->setToolTip(m_path.isEmpty() ? QStringLiteral("Not saved yet") : m_path);
}

bool KernelLabPage::confirmDiscard(const QString& what) {
  if (!m_confirm || !isModified()) return true;
  return QMessageBox::question(this, QStringLiteral("Unsaved kernel"),
                               QStringLiteral("The kernel has unsaved changes. %1 anyway?").arg(what),
                               QMessageBox::Discard | QMessageBox::Cancel) == QMessageBox::Discard;
}

void KernelLabPage::loadSource(const QString& source, const QString& path) {
  m_editor->setPlainText(source);
  m_editor->clearMarkers();
  m_path = path;
  m_editor->document()->setModified(false);
  updateFileLabel();
}

bool KernelLabPage::openFile(const QString& path) {
  QFile f(path);
  const QFileInfo info(path);
  QString error;
  if (!info.isFile())
    error = QStringLiteral("%1 is not a file").arg(path);
  else if (info.size() > kMaxSourceBytes)
    error = QStringLiteral("%1 is %2 MB: not a kernel source").arg(path).arg(info.size() / 1e6, 0, 'f', 1);
  else if (!f.open(QIODevice::ReadOnly))
    error = QStringLiteral("could not open %1: %2").arg(path, f.errorString());
  QByteArray bytes;
  if (error.isEmpty()) {
    bytes = f.readAll();
    if (bytes.contains('\0')) error = QStringLiteral("%1 is a binary file, not a kernel source").arg(path);
  }
  if (!error.isEmpty()) {
    setStatus(error, labStatusColor(QStringLiteral("crashed")));
    return false;
  }
  loadSource(QString::fromUtf8(bytes), info.absoluteFilePath());
  setStatus(QStringLiteral("Opened %1").arg(info.absoluteFilePath()), QColor(60, 60, 60));
  return true;
}

void KernelLabPage::openInteractive() {
  if (!confirmDiscard(QStringLiteral("Open another file"))) return;
  const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a kernel"),
                                                    m_path.isEmpty() ? QString() : QFileInfo(m_path).absolutePath(),
                                                    QStringLiteral("CUDA sources (*.cu *.cuh);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

bool KernelLabPage::save() {
  if (m_path.isEmpty()) {
    saveAsInteractive();
    return !m_path.isEmpty() && !isModified();
  }
  return saveAs(m_path);
}

bool KernelLabPage::saveAs(const QString& path) {
  QSaveFile f(path);
  const QByteArray bytes = m_editor->toPlainText().toUtf8();
  if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
    setStatus(QStringLiteral("Could not save %1: %2").arg(path, f.errorString()), labStatusColor("crashed"));
    return false;
  }
  m_path = QFileInfo(path).absoluteFilePath();
  m_editor->document()->setModified(false);
  updateFileLabel();
  setStatus(QStringLiteral("Saved %1").arg(m_path), QColor(60, 60, 60));
  return true;
}

void KernelLabPage::saveAsInteractive() {
  const QString suggested = m_path.isEmpty() ? QStringLiteral("my_%1.cu").arg(slot()) : m_path;
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save the kernel"), suggested,
                                                    QStringLiteral("CUDA sources (*.cu *.cuh)"));
  if (!path.isEmpty()) saveAs(path);
}

bool KernelLabPage::newFromTemplate() {
  if (isRunning()) return false;
  if (!labSlotRefusal(slot()).isEmpty()) {
    setStatus(labSlotRefusal(slot()), labStatusColor("crashed"));
    return false;
  }
  if (!confirmDiscard(QStringLiteral("Replace it with the template"))) return false;
  LabProcess::Request r;
  r.action = LabProcess::Action::Template;
  r.slot = slot();
  r.precision = m_precision->currentText();
  m_action = r.action;
  setStatus(QStringLiteral("Loading the %1 template…").arg(r.slot), QColor(60, 60, 60));
  setBusy(true);
  m_process->start(r);
  return true;
}

bool KernelLabPage::compile() { return startJob(LabProcess::Action::Compile); }
bool KernelLabPage::check() { return startJob(LabProcess::Action::Check); }
bool KernelLabPage::run() { return startJob(LabProcess::Action::Run); }
void KernelLabPage::cancel() { m_process->cancel(); }

bool KernelLabPage::startJob(LabProcess::Action action) {
  if (isRunning()) return false;
  const QColor bad = labStatusColor(QStringLiteral("crashed"));
  if (!m_remoteRefusal.isEmpty()) {
    setStatus(m_remoteRefusal, bad);
    return false;
  }
  const QString refusal = labSlotRefusal(slot());
  if (!refusal.isEmpty()) {
    setStatus(refusal, bad);
    return false;
  }
  const QString source = m_editor->toPlainText();
  if (source.trimmed().isEmpty()) {
    setStatus(QStringLiteral("The editor is empty: press New from template, or open a .cu file."), bad);
    return false;
  }
  QString layerError;
  const auto layers = parseLabLayers(m_layers->text(), &layerError);
  if (!layers) {
    setStatus(layerError, bad);
    return false;
  }
  // A saved, unedited file compiles where it is (its own #includes resolve); otherwise the editor's text is
  // written to a scratch folder under the same file name (the report's backend is cuda+lab:NAME).
  QString file = m_path;
  if (m_path.isEmpty() || isModified()) {
    if (!m_scratch || !m_scratch->isValid())
      m_scratch = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("mnv2-lab-src-XXXXXX")));
    const QString name = m_path.isEmpty() ? QStringLiteral("my_%1.cu").arg(slot()) : QFileInfo(m_path).fileName();
    file = m_scratch->filePath(name);
    QSaveFile f(file);
    const QByteArray bytes = source.toUtf8();
    if (!m_scratch->isValid() || !f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
      setStatus(QStringLiteral("Could not write the source for mnv2 lab to %1: %2").arg(file, f.errorString()), bad);
      return false;
    }
  }
  LabProcess::Request r;
  r.action = action;
  r.slot = slot();
  r.kernelFile = file;
  r.layers = formatLabLayers(*layers);
  r.precision = m_precision->currentText();
  r.batch = m_batch->value();
  r.model = m_modelPath;
  r.arch = m_arch->currentData().toString();
  r.device = m_device;
  m_action = action;
  m_jobSource = source;
  m_jobFile = file;
  m_output->clear();
  const QString verb = action == LabProcess::Action::Compile ? QStringLiteral("Compiling")
                       : action == LabProcess::Action::Check ? QStringLiteral("Checking")
                                                             : QStringLiteral("Running");
  setStatus(QStringLiteral("%1 %2 (%3 slot, %4)…").arg(verb, QFileInfo(file).fileName(), r.slot, r.precision),
            QColor(60, 60, 60));
  m_bottom->setCurrentWidget(m_output);
  setBusy(true);
  m_process->start(r);
  return true;
}

void KernelLabPage::onFinished(const LabProcess::Outcome& o) {
  setBusy(false);
  const QColor bad = labStatusColor(QStringLiteral("crashed"));
  if (o.action == LabProcess::Action::Template) {
    if (!o.error.isEmpty()) {
      setStatus(o.cancelled ? QStringLiteral("Template: cancelled") : o.error, bad);
      Q_EMIT finished(false);
      return;
    }
    loadSource(o.output, QString());
    setStatus(QStringLiteral("The %1 template (%2): edit it, then Compile, Check or Run.")
                  .arg(slot(), m_precision->currentText()),
              QColor(60, 60, 60));
    Q_EMIT finished(true);
    return;
  }
  if (!o.result) {
    // No result: nothing to keep as a version, except a worker that died without one (exit 4), which is
    // this source's outcome.
    QString text = o.cancelled ? QStringLiteral("Cancelled.") : o.error;
    if (!o.cancelled && o.exitCode == mnv2::kExitLabCrashed && !o.crashed) {
      const int row = m_history->record(m_jobSource, LabProcess::actionName(o.action), QStringLiteral("crashed"),
                                        o.error, std::nullopt);
      text = QStringLiteral("v%1 %2 — %3").arg(row + 1).arg(LabProcess::actionName(o.action), o.error);
      rebuildHistoryChart();
    }
    setStatus(text, bad);
    m_output->appendPlainText(QStringLiteral("[%1]").arg(text));
    Q_EMIT finished(false);
    return;
  }
  const LabResult& r = *o.result;
  // A compile-only job that compiled is "compiled" in the history (nothing was checked).
  const bool compiledOnly = o.action == LabProcess::Action::Compile && r.status == QLatin1String("passed");
  const QString status = compiledOnly ? QStringLiteral("compiled") : r.status;
  const int row = m_history->record(m_jobSource, LabProcess::actionName(o.action), status, r.message, o.result);
  rebuildHistoryChart();
  // "v2 run — check failed: layer 7, ..." (the engine's message alone when it already starts with the status).
  const QString said = labStatusText(status);
  QString head = QStringLiteral("v%1 %2 — ").arg(row + 1).arg(LabProcess::actionName(o.action));
  if (r.message.startsWith(said, Qt::CaseInsensitive))
    head += r.message;
  else
    head += r.message.isEmpty() ? said : said + QStringLiteral(": ") + r.message;
  if (r.status == QLatin1String("passed") && r.timed())
    head += QStringLiteral(" · yours %1 vs ours %2 vs cuDNN %3 (sum of layers)")
                .arg(micro(r.totalUserUs()), micro(r.totalOursUs()), micro(r.totalCudnnUs()));
  if (!r.device.isEmpty()) head += QStringLiteral(" · ") + r.device;
  setStatus(head, labStatusColor(status));
  showResult(o.result, m_jobFile);
  m_output->moveCursor(QTextCursor::End);
  m_output->ensureCursorVisible();
  m_historyTable->selectionModel()->blockSignals(true);
  m_historyTable->selectRow(row);
  m_historyTable->selectionModel()->blockSignals(false);
  m_historyTable->resizeColumnsToContents();
  m_restore->setEnabled(true);
  // What to look at first.
  if (r.status == QLatin1String("compile_error")) {
    m_bottom->setCurrentWidget(m_diagnostics);
    if (m_diagnostics->count() > 0) {
      const int line = m_diagnostics->item(0)->data(Qt::UserRole).toInt();
      if (line > 0) m_editor->goToLine(line, m_diagnostics->item(0)->data(Qt::UserRole + 1).toInt());
    }
  } else if (r.status == QLatin1String("check_failed")) {
    m_results->setCurrentWidget(m_checkTable);
    // The failing row current and in view, not selected: its red stays visible.
    if (const LabLayer* l = r.firstFailingLayer()) {
      const QModelIndex failing = m_checkModel->index(m_checkModel->rowOfLayer(l->index), 0);
      m_checkTable->selectionModel()->setCurrentIndex(failing, QItemSelectionModel::NoUpdate);
      m_checkTable->scrollTo(failing);
    }
  } else if (r.status == QLatin1String("passed") && r.timed()) {
    m_results->setCurrentIndex(0);
  }
  Q_EMIT finished(true);
}

void KernelLabPage::showResult(const std::optional<LabResult>& result, const QString& compiledFile) {
  m_shown = result;
  m_shownFile = compiledFile;
  m_checkModel->setResult(result);
  m_checkTable->resizeColumnsToContents();
  rebuildChart();

  // Diagnostics: every message in the list; those of the compiled file also in the editor (when the editor
  // still shows that source: a version viewed from the history marks nothing in another text).
  m_diagnostics->clear();
  std::vector<CodeEditor::Marker> markers;
  // The file the diagnostics name as the editor's: the result's own record of it, else the one this page wrote.
  const QString compiledName =
      QFileInfo(result && !result->kernelFile.isEmpty() ? result->kernelFile : compiledFile).fileName();
  int errors = 0, warnings = 0;
  if (result) {
    for (const LabDiagnostic& d : result->compile.diagnostics) {
      const bool error = d.severity != QLatin1String("warning");
      (error ? errors : warnings) += 1;
      const bool ours = d.file.isEmpty() || QFileInfo(d.file).fileName() == compiledName;
      const QString where = ours ? QStringLiteral("line %1").arg(d.line)
                                 : QStringLiteral("%1:%2").arg(QFileInfo(d.file).fileName()).arg(d.line);
      auto* item = new QListWidgetItem(
          QStringLiteral("%1%2  %3: %4")
              .arg(where, d.column > 0 ? QStringLiteral(":%1").arg(d.column) : QString(), d.severity, d.message),
          m_diagnostics);
      item->setForeground(error ? QColor(190, 30, 30) : QColor(160, 110, 0));
      item->setData(Qt::UserRole, ours ? d.line : 0);
      item->setData(Qt::UserRole + 1, d.column);
      item->setToolTip(ours ? QStringLiteral("Go to line %1").arg(d.line)
                            : QStringLiteral("In %1 (not the editor's file)").arg(d.file));
      if (ours && d.line > 0) markers.push_back({d.line, d.column, error, d.message});
    }
  }
  const bool sameText = result && m_editor->toPlainText() == m_jobSource;
  m_editor->setMarkers(sameText ? markers : std::vector<CodeEditor::Marker>{});
  m_bottom->setTabText(m_bottom->indexOf(m_diagnostics), errors + warnings > 0
                                                             ? QStringLiteral("Diagnostics (%1 error%2, %3 warning%4)")
                                                                   .arg(errors)
                                                                   .arg(errors == 1 ? "" : "s")
                                                                   .arg(warnings)
                                                                   .arg(warnings == 1 ? "" : "s")
                                                             : QStringLiteral("Diagnostics"));

  // The commands to dig deeper, the launch and the compile facts.
  QStringList lines;
  if (result) {
    const LabResult& r = *result;
    if (!r.kernelName.isEmpty()) lines << QStringLiteral("kernel: %1 (%2)").arg(r.kernelName, r.kernelFile);
    if (r.compile.present)
      lines << QStringLiteral("compile: %1 in %2 s%3; options: %4")
                   .arg(r.compile.ok ? QStringLiteral("ok") : QStringLiteral("failed"))
                   .arg(r.compile.seconds, 0, 'f', 2)
                   .arg(r.compile.cached ? QStringLiteral(" (cached)") : QString(),
                        r.compile.options.join(QLatin1Char(' ')));
    if (r.launch.present)
      lines << QStringLiteral("launch: block %1×%2×%3, grid %4, %5 bytes of shared memory")
                   .arg(r.launch.block[0])
                   .arg(r.launch.block[1])
                   .arg(r.launch.block[2])
                   .arg(r.launch.gridRule)
                   .arg(r.launch.sharedBytes);
    if (!r.computeSanitizerCommand.isEmpty()) lines << QStringLiteral("\nmemcheck:\n") + r.computeSanitizerCommand;
    if (!r.ncuCommand.isEmpty()) lines << QStringLiteral("\nNsight Compute:\n") + r.ncuCommand;
    if (!r.reportJson.isEmpty() || !r.reportCsv.isEmpty())
      lines << QStringLiteral("\nreports: %1 %2").arg(r.reportJson, r.reportCsv);
    if (!r.compile.log.trimmed().isEmpty()) lines << QStringLiteral("\nNVRTC log:\n") + r.compile.log;
  }
  m_commands->setPlainText(lines.join(QLatin1Char('\n')));

  // End to end.
  if (result && result->endToEnd) {
    const LabEndToEnd& e = *result->endToEnd;
    m_endToEnd->setText(
        QStringLiteral("<b>End to end</b> (batch %1, %2): yours %3 · ours unfused %4 · ours default "
                       "(fused) %5 · cuDNN %6")
            .arg(result->batch)
            .arg(result->precision, milli(e.userMs), milli(e.oursUnfusedMs), milli(e.oursDefaultMs), milli(e.cudnnMs)));
  } else {
    m_endToEnd->setText(
        QStringLiteral("<span style='color:#777'>End to end: after a Run that passes the check.</span>"));
  }
}

void KernelLabPage::rebuildChart() {
  m_chart->clearPlottables();
  m_chart->clearItems();
  for (QCPBarsGroup* old : m_chart->findChildren<QCPBarsGroup*>()) delete old;
  std::vector<const LabLayer*> timed;
  if (m_shown)
    for (const LabLayer& l : m_shown->layers)
      if (l.userUs || l.oursUs || l.cudnnUs) timed.push_back(&l);
  const bool any = !timed.empty();
  m_chart->legend->setVisible(any);
  if (QCPLayoutInset* inset = m_chart->axisRect()->insetLayout(); inset->elementCount() > 0)
    inset->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  for (QCPAxis* axis : {m_chart->xAxis, m_chart->yAxis}) {
    axis->setTicks(any);
    axis->setTickLabels(any);
  }
  if (!any) {
    QString why = QStringLiteral("No timings yet:\nRun times each chosen layer\n(yours, ours, cuDNN)");
    // A compile-only result checked no layer.
    const bool checked = m_shown && std::any_of(m_shown->layers.begin(), m_shown->layers.end(),
                                                [](const LabLayer& l) { return l.checked; });
    if (m_shown && m_shown->status != QLatin1String("passed"))
      why = QStringLiteral("Not timed: %1\n(timed once it passes the check)").arg(labStatusText(m_shown->status));
    else if (m_shown && !checked)
      why = QStringLiteral("Compiled only: not checked, not timed\npress Check or Run");
    else if (m_shown)
      why = QStringLiteral("Checked, not timed:\npress Run to time it");
    emptyText(m_chart, why);
    m_chart->replot();
    return;
  }
  auto* group = new QCPBarsGroup(m_chart);
  group->setSpacingType(QCPBarsGroup::stAbsolute);
  group->setSpacing(1);
  const std::pair<QString, std::optional<double> LabLayer::*> series[] = {
      {QStringLiteral("yours"), &LabLayer::userUs},
      {QStringLiteral("ours (cuda)"), &LabLayer::oursUs},
      {QStringLiteral("cuDNN"), &LabLayer::cudnnUs}};
  const QColor colors[] = {userColor(), oursColor(), cudnnColor()};
  double hi = 0;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t k = 0; k < timed.size(); ++k) ticker->addTick(static_cast<double>(k), QString::number(timed[k]->index));
  for (int s = 0; s < 3; ++s) {
    auto* bars = new QCPBars(m_chart->xAxis, m_chart->yAxis);
    bars->setName(series[s].first);
    bars->setPen(QPen(colors[s].darker(130), 0.5));
    bars->setBrush(colors[s]);
    bars->setWidth(0.26);
    QVector<double> keys, values;
    for (size_t k = 0; k < timed.size(); ++k) {
      const std::optional<double>& v = timed[k]->*series[s].second;
      if (!v) continue;
      keys << static_cast<double>(k);
      values << *v;
      hi = std::max(hi, *v);
    }
    bars->setData(keys, values, true);
    bars->setBarsGroup(group);
  }
  m_chart->xAxis->setTicker(ticker);
  m_chart->xAxis->setTickLabelRotation(timed.size() > 12 ? -60 : 0);
  m_chart->xAxis->grid()->setVisible(false);
  m_chart->xAxis->setRange(-0.6, static_cast<double>(timed.size()) - 0.4);
  m_chart->yAxis->setRange(0, hi > 0 ? hi * 1.25 : 1);  // headroom: the legend's row sits over the tallest bars
  m_chart->replot();
}

void KernelLabPage::rebuildHistoryChart() {
  QCustomPlot* p = m_historyChart;
  p->clearGraphs();
  p->clearItems();
  QVector<double> keys, values;
  std::optional<double> ours, cudnn;
  for (const LabVersion& v : m_history->versions()) {
    if (!v.totalUserUs) continue;
    keys << v.number;
    values << *v.totalUserUs;
    if (v.totalOursUs) ours = v.totalOursUs;
    if (v.totalCudnnUs) cudnn = v.totalCudnnUs;
  }
  const bool any = !keys.isEmpty();
  for (QCPAxis* axis : {p->xAxis, p->yAxis}) {
    axis->setTicks(any);
    axis->setTickLabels(any);
  }
  if (!any) {
    emptyText(p, QStringLiteral("Each timed Run of a new\nversion adds a point here"));
    p->replot();
    return;
  }
  QCPGraph* g = p->addGraph();
  g->setName(QStringLiteral("yours"));
  g->setPen(QPen(userColor(), 2));
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, userColor(), userColor(), 7));
  g->setData(keys, values, true);
  double hi = *std::max_element(values.begin(), values.end());
  const std::pair<std::optional<double>, QColor> refs[] = {{ours, oursColor()}, {cudnn, cudnnColor()}};
  for (const auto& [value, color] : refs) {
    if (!value) continue;
    auto* line = new QCPItemStraightLine(p);
    line->setPen(QPen(color, 1.5, Qt::DashLine));
    line->point1->setCoords(0, *value);
    line->point2->setCoords(1, *value);
    hi = std::max(hi, *value);
  }
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(1);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  p->xAxis->setTicker(ticker);
  p->xAxis->setRange(keys.front() - 0.5, keys.back() + 0.5);
  p->yAxis->setRange(0, hi * 1.15);
  p->setToolTip(
      QStringLiteral("Your kernel's time per version (sum over the slot's layers); dashed: ours (orange) "
                     "and cuDNN (green) on the same layers, from the newest run"));
  p->replot();
}

bool KernelLabPage::showVersion(int row) {
  const LabVersion* v = m_history->version(row);
  if (!v) return false;
  // The markers belong to the version's text: shown when the editor holds it.
  const QString saved = m_jobSource;
  m_jobSource = v->source;
  showResult(v->result, m_jobFile);
  m_jobSource = saved;
  if (!isRunning())
    setStatus(QStringLiteral("v%1 %2 — %3 (%4)%5")
                  .arg(v->number)
                  .arg(v->action, labStatusText(v->status), v->time.toString(QStringLiteral("HH:mm:ss")),
                       v->message.isEmpty() ? QString() : QStringLiteral(": ") + v->message),
              labStatusColor(v->status));
  return true;
}

bool KernelLabPage::restoreVersion(int row) {
  const LabVersion* v = m_history->version(row);
  if (!v) return false;
  // Through the editor's cursor, so that Undo takes the restore back.
  QTextCursor c(m_editor->document());
  c.beginEditBlock();
  c.select(QTextCursor::Document);
  c.insertText(v->source);
  c.endEditBlock();
  showVersion(row);
  return true;
}

bool KernelLabPage::showView(const QString& name) {
  if (name == QLatin1String("chart"))
    m_results->setCurrentIndex(0);
  else if (name == QLatin1String("check"))
    m_results->setCurrentWidget(m_checkTable);
  else if (name == QLatin1String("history"))
    m_results->setCurrentIndex(2);
  else if (name == QLatin1String("output"))
    m_bottom->setCurrentWidget(m_output);
  else if (name == QLatin1String("diagnostics"))
    m_bottom->setCurrentWidget(m_diagnostics);
  else if (name == QLatin1String("commands"))
    m_bottom->setCurrentWidget(m_commands);
  else
    return false;
  return true;
}

}  // namespace mnv2::ui
