// The precision choice and the Accuracy page, on the offscreen platform with the cpu backend: the
// precision selector offers only what each backend's supports() answered; runs, diffs and exports carry
// their precision; an evaluation of the shared photographs (labelled by their golden top-1 class) in a temp
// folder gets 5/5, lists a deliberately mislabelled file and an unreadable one, reports bad sets as errors,
// and stops on Cancel.
#include <qcustomplot.h>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "mnv2/json_io.h"
#include "mnv2/report.h"
#include "models/eval_result_model.h"
#include "models/report_catalog.h"
#include "models/run_comparison_model.h"
#include "run_controller.h"
#include "ui_test_support.h"
#include "widgets/accuracy_page.h"
#include "widgets/backend_picker.h"
#include "widgets/comparison_page.h"
#include "widgets/diffs_page.h"
#include "widgets/main_window.h"
#include "widgets/run_settings_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/timings_page.h"

using namespace mnv2::ui;
using mnv2::Precision;

namespace {

constexpr int kTimeoutMs = 180000;

// The shared photographs and their golden top-1 class index and label.
struct Photo {
  QString file;
  int label = 0;
  QString name;
};

std::vector<Photo> sharedPhotos() {
  std::vector<Photo> out;
  const QDir golden(test::sharedPath(QStringLiteral("golden")));
  for (const QString& json : golden.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    const mnv2::json::Json v = mnv2::json::parse_file(golden.filePath(json).toStdString());
    if (!v.contains("image")) continue;  // torchvision_random: a random input, no photograph
    const std::string image = v.at("image").get<std::string>();
    const mnv2::json::Json& top = v.at("top5").front();
    out.push_back({QString::fromStdString(image), static_cast<int>(top.at("index").get<int64_t>()),
                   QString::fromStdString(top.at("label").get<std::string>())});
  }
  return out;
}

QStringList csvLines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  QStringList lines;
  for (const QString& l : QString::fromUtf8(f.readAll()).split(QLatin1Char('\n')))
    if (!l.isEmpty()) lines << l;
  return lines;
}

bool itemEnabled(QComboBox* combo, Precision p) {
  auto* model = qobject_cast<QStandardItemModel*>(combo->model());
  const int i = combo->findData(static_cast<int>(p));
  return model && i >= 0 && model->item(i)->isEnabled();
}

BackendStatus fakeBackend(const QString& name, std::vector<Precision> precisions) {
  BackendStatus b;
  b.name = name;
  b.description = name + QStringLiteral(" (test)");
  b.available = true;
  b.precisions = std::move(precisions);
  return b;
}

}  // namespace

class AccuracyPageTest : public QObject {
  Q_OBJECT

 private:
  MainWindow* m_window = nullptr;
  QTemporaryDir m_dir;
  std::vector<Photo> m_photos;

  AccuracyPage* page() const { return m_window->accuracyPage(); }

  // Runs the page's fields as an evaluation; the evalFinished argument.
  bool evaluate() {
    QSignalSpy finished(m_window, &MainWindow::evalFinished);
    if (!m_window->startEval()) return false;
    if (!finished.wait(kTimeoutMs)) return false;
    return finished.first().at(0).toBool();
  }

  // One sub-folder per class (named by class index), each photograph in its golden class.
  QString classFolders(const QString& name) {
    const QString root = m_dir.filePath(name);
    for (const Photo& p : m_photos) {
      const QString folder = QDir(root).filePath(QString::number(p.label));
      QDir().mkpath(folder);
      if (!QFile::copy(test::imagePath(p.file), QDir(folder).filePath(p.file))) return {};
    }
    return root;
  }

  QString writeList(const QString& name, const QStringList& lines) {
    const QString path = m_dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) return {};
    f.write(lines.join(QLatin1Char('\n')).toUtf8() + "\n");
    return path;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_photos = sharedPhotos();
    QCOMPARE(m_photos.size(), size_t(5));
    MainWindow::Options options;
    options.useSettings = false;
    options.scripted = true;                  // errors as signals, no message boxes
    options.decoder = ImageDecoder::QtImage;  // the GPU machine's decoder (its build has no OpenCV codecs)
    m_window = new MainWindow(options);
    m_window->show();
    QVERIFY(test::startOnMainModel(*m_window, kTimeoutMs));
  }

  void cleanupTestCase() { delete m_window; }

  // ---- precision ---------------------------------------------------------------------------------

  void cpuOffersOnlyFp32() {
    RunSettingsPanel* settings = m_window->runSettings();
    QVERIFY(settings->selectBackend(QStringLiteral("cpu")));
    const BackendStatus* cpu = settings->backendStatus(QStringLiteral("cpu"));
    QVERIFY(cpu);
    // What the cpu backend answered, not a list kept in the app.
    QCOMPARE(cpu->precisions, std::vector<Precision>{Precision::fp32});
    auto* combo = m_window->findChild<QComboBox*>(QStringLiteral("precisionCombo"));
    QVERIFY(combo);
    QVERIFY(itemEnabled(combo, Precision::fp32));
    QVERIFY(!itemEnabled(combo, Precision::tf32));
    QVERIFY(!itemEnabled(combo, Precision::fp16));
    QVERIFY(!settings->setPrecision(Precision::fp16));
    QCOMPARE(settings->precision(), Precision::fp32);
    // The Accuracy page asks the same question of its own backend choice.
    QVERIFY(page()->selectBackend(QStringLiteral("cpu")));
    QVERIFY(!page()->setPrecision(Precision::tf32));
    QVERIFY(page()->setPrecision(Precision::fp32));
  }

  void selectorFollowsEachBackendsAnswer() {
    // Backends as a GPU machine might answer: cudnn runs every mode, cuda (for now) fp32 and fp16.
    RunSettingsPanel panel;
    panel.setBackends({fakeBackend(QStringLiteral("cpu"), {Precision::fp32}),
                       fakeBackend(QStringLiteral("cudnn"), {Precision::fp32, Precision::tf32, Precision::fp16}),
                       fakeBackend(QStringLiteral("cuda"), {Precision::fp32, Precision::fp16})});
    auto* combo = panel.findChild<QComboBox*>(QStringLiteral("precisionCombo"));
    auto* note = panel.findChild<QLabel*>(QStringLiteral("precisionNote"));
    QVERIFY(combo && note);
    QVERIFY(panel.selectBackend(QStringLiteral("cudnn")));
    QVERIFY(itemEnabled(combo, Precision::tf32) && itemEnabled(combo, Precision::fp16));
    QVERIFY(panel.setPrecision(Precision::tf32));
    QCOMPARE(panel.precision(), Precision::tf32);
    // Compare in tf32, as the engine's rule (mnv2::select_compare) says before the run: cpu, the reference, runs
    // fp32; cuda, without tf32, is left out; Compare runs cpu and cudnn.
    QVERIFY(!note->isHidden());
    QVERIFY2(note->text().contains(QStringLiteral("cpu runs fp32 as the reference")), qPrintable(note->text()));
    QVERIFY2(note->text().contains(QStringLiteral("cuda is left out")), qPrintable(note->text()));
    QCOMPARE(panel.compareSelection().backends, (std::vector<std::string>{"cpu", "cudnn"}));
    auto* compare = panel.findChild<QPushButton*>(QStringLiteral("compareButton"));
    QVERIFY(compare && compare->toolTip().contains(QStringLiteral("cpu, cudnn")));
    // cuda does not run tf32: choosing it falls back to fp32 and disables tf32, with the reason.
    QVERIFY(panel.selectBackend(QStringLiteral("cuda")));
    QCOMPARE(panel.precision(), Precision::fp32);
    QVERIFY(!itemEnabled(combo, Precision::tf32));
    QVERIFY(itemEnabled(combo, Precision::fp16));
    auto* model = qobject_cast<QStandardItemModel*>(combo->model());
    QVERIFY(
        model->item(combo->findData(static_cast<int>(Precision::tf32)))->toolTip().contains(QStringLiteral("cuda")));
    QVERIFY(note->isHidden());
    QVERIFY(panel.selectBackend(QStringLiteral("cpu")));
    QVERIFY(!itemEnabled(combo, Precision::fp16));

    // The sweep offers what every listed backend runs.
    SweepPage sweep;
    sweep.setBackends({fakeBackend(QStringLiteral("cpu"), {Precision::fp32}),
                       fakeBackend(QStringLiteral("cudnn"), {Precision::fp32, Precision::tf32, Precision::fp16})});
    sweep.setFields(QStringLiteral("cpu,cudnn"), {}, {});
    QVERIFY(!sweep.setPrecision(Precision::fp16));
    sweep.setFields(QStringLiteral("cudnn"), {}, {});
    QVERIFY(sweep.setPrecision(Precision::fp16));
    QCOMPARE(sweep.config()->precision, Precision::fp16);
  }

  void aRunsLabelsAndExportsCarryItsPrecision() {
    RunSettingsPanel* settings = m_window->runSettings();
    settings->setCounts(1, 0, 2);
    settings->setModelInputSize(96, 96);
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    m_window->startRun(false);
    QVERIFY(finished.wait(kTimeoutMs));
    QVERIFY(finished.first().at(0).toBool());
    QCOMPARE(m_window->shownReports().front()->config.precision, Precision::fp32);
    QVERIFY2(m_window->catalog()
                 ->entry(m_window->catalog()->firstCurrentRow())
                 .label.contains(QStringLiteral(": cpu fp32 (")),
             qPrintable(m_window->catalog()->entry(0).label));
    // The legend names the run (its name in the run history, then what it ran: "run 1 · cpu fp32 · ...").
    QVERIFY(m_window->timingsPage()->plot()->plottable(0)->name().contains(QStringLiteral(" · cpu fp32 · ")));
    const QString csv = m_dir.filePath(QStringLiteral("run.csv"));
    QVERIFY(m_window->exportTo(MainWindow::ExportFormat::Csv, csv));
    const QStringList lines = csvLines(csv);
    QVERIFY(lines.size() > 1);
    const int column = test::csvFields(lines.front()).indexOf(QStringLiteral("precision"));
    QVERIFY(column >= 0);
    QCOMPARE(test::csvFields(lines[1])[column], QStringLiteral("fp32"));
  }

  void anOpenedFp16ReportShowsItsModeAndThreshold() {
    // A compare written on a GPU machine: cpu (the reference, fp32) and cudnn in fp16 with its diff.
    const auto& topology = test::mainModel().layers;
    mnv2::RunReport cpu = test::syntheticReport(topology, "cpu", 2000, 0.05, false);
    mnv2::RunReport gpu = test::syntheticReport(topology, "cudnn", 100, 0.05, true);
    for (auto* r : {&cpu, &gpu}) {
      r->config.backend = r->backend;
      r->schema_version = 1;
      r->run_id = r->backend + "-test";
    }
    gpu.config.precision = Precision::fp16;
    mnv2::DiffReport d;
    d.backend = "cudnn";
    d.reference = "cpu";
    d.threshold = 1e-2;  // what the engine picks for a reduced-precision run
    d.top5_agree = true;
    d.top5 = d.reference_top5 = {286, 282, 283, 729, 540};
    for (size_t l = 0; l < topology.size(); ++l) {
      mnv2::LayerDiff ld;
      ld.layer = static_cast<int>(l);
      ld.compared = true;
      ld.error.rel_l2 = 1e-3;
      ld.error.cosine = 1.0;
      d.layers.push_back(ld);
    }
    gpu.diff = d;
    const QString json = m_dir.filePath(QStringLiteral("fp16-compare.json"));
    mnv2::write_json_report(json.toStdString(), {cpu, gpu});
    QVERIFY(m_window->openReport(json));

    bool listed = false;
    for (int i = 0; i < m_window->catalog()->count(); ++i)
      listed = listed || m_window->catalog()->entry(i).label.contains(QStringLiteral(": cudnn fp16 ("));
    QVERIFY(listed);
    QCustomPlot* plot = m_window->timingsPage()->plot();
    QCOMPARE(plot->plottableCount(), 2);
    QVERIFY2(plot->plottable(1)->name().contains(QStringLiteral(" · cudnn fp16 · ")),
             qPrintable(plot->plottable(1)->name()));
    const QString diff = m_window->diffsPage()->summaryText();
    QVERIFY2(diff.contains(QStringLiteral("cudnn fp16")) && diff.contains(QStringLiteral("cpu fp32")),
             qPrintable(diff));
    QVERIFY2(diff.contains(QStringLiteral("rel L2 0.01")) && diff.contains(QStringLiteral("reduced-precision")),
             qPrintable(diff));
    m_window->comparisonPage()->selectRuns(m_window->catalog()->count() - 2, m_window->catalog()->count() - 1);
    QVERIFY(m_window->comparisonPage()
                ->model()
                ->headerData(RunComparisonModel::MedianB, Qt::Horizontal)
                .toString()
                .contains(QStringLiteral("cudnn fp16")));

    // Exported again, each run keeps its own mode.
    const QString csv = m_dir.filePath(QStringLiteral("fp16-compare.csv"));
    QVERIFY(m_window->exportTo(MainWindow::ExportFormat::Csv, csv));
    const QStringList lines = csvLines(csv);
    const QStringList header = test::csvFields(lines.front());
    const int backend = header.indexOf(QStringLiteral("backend"));
    const int precision = header.indexOf(QStringLiteral("precision"));
    std::map<QString, QString> modes;
    for (int i = 1; i < lines.size(); ++i) {
      const QStringList row = test::csvFields(lines[i]);
      modes[row[backend]] = row[precision];
    }
    QCOMPARE(modes[QStringLiteral("cpu")], QStringLiteral("fp32"));
    QCOMPARE(modes[QStringLiteral("cudnn")], QStringLiteral("fp16"));
    const QString again = m_dir.filePath(QStringLiteral("fp16-again.json"));
    QVERIFY(m_window->exportTo(MainWindow::ExportFormat::Json, again));
    const auto runs = mnv2::read_reports_file(again.toStdString());
    QCOMPARE(runs.size(), size_t(2));
    QCOMPARE(runs[1].config.precision, Precision::fp16);
  }

  // ---- accuracy ----------------------------------------------------------------------------------

  void evaluatesThePhotographsFiveOutOfFive() {
    const QString set = classFolders(QStringLiteral("classes"));
    QVERIFY(!set.isEmpty());
    page()->setSet(set);
    QVERIFY(page()->selectBackend(QStringLiteral("cpu")));
    page()->setBatch(2);  // 5 images: the last batch runs padded
    page()->setLoaderThreads(2);
    QVERIFY(evaluate());
    const EvalRecordPtr r = page()->record();
    QVERIFY(r);
    QCOMPARE(r->result.images, 5);
    QCOMPARE(r->result.top1_correct, 5);
    QCOMPARE(r->result.top5_correct, 5);
    QCOMPARE(r->decoder, QStringLiteral("QImage"));
    QCOMPARE(page()->misclassifiedModel()->rowCount(), 0);
    QCOMPARE(page()->skippedModel()->rowCount(), 0);
    const QString summary = page()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("top-1 100.00%")) && summary.contains(QStringLiteral("(5 / 5)")) &&
                 summary.contains(QStringLiteral("cpu fp32")),
             qPrintable(summary));

    const QString csv = m_dir.filePath(QStringLiteral("eval.csv"));
    QVERIFY(m_window->exportEvalCsv(csv));
    const QStringList lines = csvLines(csv);
    QCOMPARE(lines.size(), 2);  // header + summary
    const QStringList header = test::csvFields(lines[0]);
    const QStringList row = test::csvFields(lines[1]);
    QCOMPARE(row.size(), header.size());
    QCOMPARE(row[header.indexOf(QStringLiteral("record"))], QStringLiteral("summary"));
    QCOMPARE(row[header.indexOf(QStringLiteral("precision"))], QStringLiteral("fp32"));
    QCOMPARE(row[header.indexOf(QStringLiteral("top1_correct"))], QStringLiteral("5"));
    QCOMPARE(row[header.indexOf(QStringLiteral("images"))], QStringLiteral("5"));
  }

  void aWrongLabelShowsTheMisclassifiedFile() {
    // A list file: every photograph with its golden class, except the parrot, labelled as the cat's class.
    QStringList lines = {QStringLiteral("# file label")};
    int catLabel = -1;
    QString parrotName;
    for (const Photo& p : m_photos)
      if (p.file == QLatin1String("cat.bmp")) catLabel = p.label;
    for (const Photo& p : m_photos) {
      const bool parrot = p.file.startsWith(QLatin1String("parrot"));
      if (parrot) parrotName = p.name.section(QLatin1Char(','), 0, 0);
      lines << QStringLiteral("%1 %2").arg(p.file).arg(parrot ? catLabel : p.label);
    }
    QVERIFY(catLabel >= 0 && !parrotName.isEmpty());
    page()->setSet(writeList(QStringLiteral("wrong.txt"), lines), test::sharedPath(QStringLiteral("images")));
    page()->setBatch(1);
    QVERIFY(evaluate());
    const EvalRecordPtr r = page()->record();
    QCOMPARE(r->result.images, 5);
    QCOMPARE(r->result.top1_correct, 4);
    EvalResultModel* misses = page()->misclassifiedModel();
    QCOMPARE(misses->rowCount(), 1);
    QCOMPARE(misses->index(0, EvalResultModel::File).data().toString(), QStringLiteral("parrot.jpg"));
    QVERIFY(misses->index(0, EvalResultModel::Second).data().toString().contains(QStringLiteral("Egyptian cat")));
    const QString predicted = misses->index(0, EvalResultModel::Third).data().toString();
    QVERIFY2(predicted.contains(parrotName), qPrintable(predicted + QStringLiteral(" / ") + parrotName));
    const QString csv = m_dir.filePath(QStringLiteral("wrong.csv"));
    QVERIFY(m_window->exportEvalCsv(csv));
    const QStringList rows = csvLines(csv);
    QCOMPARE(rows.size(), 3);  // header, summary, the parrot
    QVERIFY(rows[2].startsWith(QStringLiteral("misclassified,")));
    QCOMPARE(test::csvFields(rows[2]).size(), test::csvFields(rows[0]).size());
  }

  void anUnreadableFileIsSkippedWithItsReason() {
    const QString set = classFolders(QStringLiteral("with-broken"));
    QVERIFY(!set.isEmpty());
    QFile broken(QDir(set).filePath(QStringLiteral("%1/broken.jpg").arg(m_photos.front().label)));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("this is not a JPEG");
    broken.close();
    page()->setSet(set);
    QVERIFY(evaluate());
    const EvalRecordPtr r = page()->record();
    QCOMPARE(r->result.images, 5);
    QCOMPARE(r->result.top1_correct, 5);
    EvalResultModel* skipped = page()->skippedModel();
    QCOMPARE(skipped->rowCount(), 1);
    QCOMPARE(skipped->index(0, 0).data().toString(), QStringLiteral("broken.jpg"));
    const QString reason = skipped->index(0, 1).data().toString();
    QVERIFY2(reason.contains(QStringLiteral("not a decodable image")), qPrintable(reason));
  }

  void badSetsAreErrorsNotCrashes() {
    QSignalSpy errors(m_window, &MainWindow::errorReported);
    const QString empty = m_dir.filePath(QStringLiteral("empty"));
    QVERIFY(QDir().mkpath(empty));
    page()->setSet(empty);
    QVERIFY(!evaluate());
    QVERIFY2(page()->statusText().contains(QStringLiteral("no class sub-folders")), qPrintable(page()->statusText()));
    QVERIFY(!page()->record());

    page()->setSet(writeList(QStringLiteral("bad.txt"), {QStringLiteral("cat.bmp 286"), QStringLiteral("parrot.jpg")}),
                   test::sharedPath(QStringLiteral("images")));
    QVERIFY(!evaluate());
    QVERIFY2(page()->statusText().contains(QStringLiteral("bad.txt:2")), qPrintable(page()->statusText()));

    page()->setSet(m_dir.filePath(QStringLiteral("no-such-set")));
    QVERIFY(!evaluate());
    QVERIFY2(page()->statusText().contains(QStringLiteral("no such file or folder")), qPrintable(page()->statusText()));

    page()->setSet(QString());
    QVERIFY(!m_window->startEval());
    QVERIFY(errors.count() >= 4);
    QVERIFY(!m_window->exportEvalCsv(m_dir.filePath(QStringLiteral("nothing.csv"))));
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("nothing.csv"))));
  }

  void cancelStopsAnEvaluation() {
    QStringList lines;
    for (int i = 0; i < 2000; ++i)
      lines << QStringLiteral("%1 %2").arg(m_photos[i % 5].file).arg(m_photos[i % 5].label);
    page()->setSet(writeList(QStringLiteral("long.txt"), lines), test::sharedPath(QStringLiteral("images")));
    page()->setBatch(1);
    page()->setLoaderThreads(1);
    QSignalSpy finished(m_window, &MainWindow::evalFinished);
    QSignalSpy progress(m_window->controller(), &RunController::progress);
    QVERIFY(m_window->startEval());
    QVERIFY(progress.wait(kTimeoutMs));
    QVERIFY(m_window->controller()->isRunning());
    m_window->cancelRun();
    QVERIFY(finished.wait(kTimeoutMs));
    QVERIFY(!finished.first().at(0).toBool());
    QCOMPARE(page()->statusText(), QStringLiteral("cancelled"));
    QVERIFY(!page()->record());
    QVERIFY(!m_window->controller()->isRunning());
    // The app keeps working: a short evaluation after the cancelled one.
    page()->setSet(writeList(QStringLiteral("short.txt"), lines.mid(0, 2)), test::sharedPath(QStringLiteral("images")));
    QVERIFY(evaluate());
    QCOMPARE(page()->record()->result.images, 2);
  }

  void fieldsPersist() {
    QSettings().clear();
    MainWindow::Options options;
    {
      MainWindow first(options);
      first.accuracyPage()->setSet(QStringLiteral("/data/val/list.txt"), QStringLiteral("/data/val/images"));
      first.accuracyPage()->setBatch(3);
      first.close();
    }
    MainWindow second(options);
    QCOMPARE(second.findChild<QLineEdit*>(QStringLiteral("evalSet"))->text(), QStringLiteral("/data/val/list.txt"));
    QCOMPARE(second.findChild<QLineEdit*>(QStringLiteral("evalImages"))->text(), QStringLiteral("/data/val/images"));
    QCOMPARE(second.findChild<QSpinBox*>(QStringLiteral("evalBatch"))->value(), 3);
    QSettings().clear();
  }
};

MNV2_UI_SUITE(AccuracyPageTest);
#include "test_accuracy_page.moc"
