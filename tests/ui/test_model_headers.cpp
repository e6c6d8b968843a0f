// Every table model of ui/models, one generic check: a header per column (non-empty, distinct, none read past
// the last column) and each header tool-tip over its own column. The models are listed by scanning
// ui/models/*.h, so that a new table model fails here until it is covered.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>
#include <functional>
#include <map>
#include <memory>

#include "models/deep_dive_model.h"
#include "models/diff_table_model.h"
#include "models/eval_result_model.h"
#include "models/lab_result_model.h"
#include "models/layer_table_model.h"
#include "models/report_catalog.h"
#include "models/run_comparison_model.h"
#include "models/targets_model.h"
#include "models/totals_model.h"
#include "ui_test_support.h"

using namespace mnv2::ui;

namespace {

// One model as a page shows it, and what some of its header tool-tips must speak of: the header's text mapped
// to a phrase of the tool-tip that belongs to that column (a header shifted by one column carries its
// neighbour's tool-tip, or is missing).
struct Case {
  QString name;  // the class, as ui/models declares it, and what is shown (several cases may share a class)
  std::shared_ptr<QAbstractItemModel> model;
  std::map<QString, QString> tooltips;
};

}  // namespace

class ModelHeadersTest : public QObject {
  Q_OBJECT

 private:
  std::vector<mnv2::Layer> topology() const { return test::weightlessTopology(); }
  ReportPtr report(const std::string& backend) const {
    return std::make_shared<const mnv2::RunReport>(test::syntheticReport(topology(), backend, 1000, 0.05, false));
  }

  // Every table model with data in it (the columns of some depend on their data).
  std::vector<Case> cases() {
    std::vector<Case> out;
    {
      auto m = std::make_shared<ReportCatalog>();
      m->addRun({report("cpu")});
      m->addRun({report("cpu"), report("cudnn")});
      out.push_back({QStringLiteral("ReportCatalog"),
                     m,
                     {{QStringLiteral("Run"), QStringLiteral("baseline")},
                      {QStringLiteral("Ran on"), QStringLiteral("remote target")},
                      {QStringLiteral("Differs"), QStringLiteral("comparability rule")},
                      {QStringLiteral("End to end (ms)"), QStringLiteral("end-to-end")},
                      {QStringLiteral("Reliability"), QStringLiteral("unreliable")},
                      {QStringLiteral("Note"), QStringLiteral("Your note")}}});
    }
    {
      auto d = std::make_shared<mnv2::DiffReport>();
      d->backend = "cudnn";
      d->reference = "cpu";
      for (int l = 0; l < 99; ++l) {
        mnv2::LayerDiff ld;
        ld.layer = l;
        ld.compared = true;
        d->layers.push_back(ld);
      }
      auto m = std::make_shared<DiffTableModel>();
      m->setDiff(d, topology());
      out.push_back({QStringLiteral("DiffTableModel"),
                     m,
                     {{QStringLiteral("Max abs"), QStringLiteral("absolute difference")},
                      {QStringLiteral("Rel L2"), QStringLiteral("reference||")},
                      {QStringLiteral("Cosine"), QStringLiteral("cosine")}}});
    }
    {
      auto m = std::make_shared<LayerTableModel>();
      m->setTopology(topology(), mnv2::analyse(test::mainModel(), 1, 224, 224));
      m->setReport(report("cpu"));
      out.push_back({QStringLiteral("LayerTableModel"),
                     m,
                     {{QStringLiteral("Output"), QStringLiteral("shape")},
                      {QStringLiteral("MACs"), QStringLiteral("Multiply-accumulates")},
                      {QStringLiteral("Median µs"), QStringLiteral("Median time")},
                      {QStringLiteral("Share %"), QStringLiteral("Share of")},
                      {QStringLiteral("GFLOP/s"), QStringLiteral("MACs / median")}}});
    }
    {
      auto m = std::make_shared<RunComparisonModel>();
      m->setRuns(report("cpu"), report("cudnn"));
      out.push_back({QStringLiteral("RunComparisonModel"),
                     m,
                     {{QStringLiteral("Δ B−A µs"), QStringLiteral("B's median − A's median")},
                      {QStringLiteral("Speed-up A/B"), QStringLiteral("A's median / B's median")}}});
    }
    {
      auto m = std::make_shared<TotalsModel>();
      m->setReports({report("cpu"), report("cudnn")});
      out.push_back({QStringLiteral("TotalsModel"), m, {{QStringLiteral("Kind"), QString()}}});
      // Two runs of one backend and mode: their names (the run history's) keep the columns apart.
      auto same = std::make_shared<TotalsModel>();
      same->setReports({report("cpu"), report("cpu")}, {QStringLiteral("run 1 · cpu fp32 · b1 · 224×224"),
                                                        QStringLiteral("run 2 · cpu fp32 · b1 · 224×224")});
      out.push_back({QStringLiteral("TotalsModel"), same, {}});
    }
    for (auto kind : {EvalResultModel::Kind::Misclassified, EvalResultModel::Kind::Skipped})
      out.push_back({QStringLiteral("EvalResultModel"), std::make_shared<EvalResultModel>(kind), {}});
    out.push_back({QStringLiteral("TargetsModel"),
                   std::make_shared<TargetsModel>(m_dir.filePath(QStringLiteral("no-such-targets.json"))),
                   {}});
    {
      auto m = std::make_shared<LabLayerTableModel>();
      LabResult r;
      r.status = QStringLiteral("passed");
      LabLayer l;
      l.index = 2;
      l.checked = true;
      l.passed = true;
      r.layers.push_back(l);
      m->setResult(r);
      out.push_back({QStringLiteral("LabLayerTableModel"),
                     m,
                     {{QStringLiteral("layer"), QStringLiteral("layer index")},
                      {QStringLiteral("check"), QStringLiteral("Pass:")},
                      {QStringLiteral("op"), QStringLiteral("operation")},
                      {QStringLiteral("failing element"), QStringLiteral("first element over the bound")},
                      {QStringLiteral("expected"), QStringLiteral("reference's value")},
                      {QStringLiteral("got"), QStringLiteral("Your kernel's value")},
                      {QStringLiteral("max abs vs ref"), QStringLiteral("from the CPU reference")},
                      {QStringLiteral("rel L2 vs ref"), QStringLiteral("Relative L2")},
                      {QStringLiteral("max abs vs ours"), QStringLiteral("our own kernel's output")},
                      {QStringLiteral("yours µs"), QStringLiteral("Your kernel's median time")},
                      {QStringLiteral("ours µs"), QStringLiteral("Our kernel's median time")},
                      {QStringLiteral("cuDNN µs"), QStringLiteral("cuDNN baseline")},
                      {QStringLiteral("name"), QStringLiteral("Layer name")}}});
    }
    {
      auto m = std::make_shared<LabHistoryModel>();
      m->record(QStringLiteral("src"), QStringLiteral("compile"), QStringLiteral("compiled"), QString(), std::nullopt);
      out.push_back({QStringLiteral("LabHistoryModel"), m, {}});
    }
    {
      // A column per run (its name on the pages), a row per figure (the rows' names and tips: their own list).
      auto m = std::make_shared<DeepDiveModel>();
      m->setColumns({{QStringLiteral("run 1 · cuda fp16"), std::nullopt, QStringLiteral("waiting")},
                     {QStringLiteral("run 2 · cudnn fp16"), std::nullopt, QStringLiteral("waiting")}});
      out.push_back({QStringLiteral("DeepDiveModel"), m, {}});
    }
    return out;
  }

  QTemporaryDir m_dir;

 private Q_SLOTS:
  // The cases cover every QAbstractTableModel that ui/models declares.
  void everyTableModelIsCovered() {
    QSet<QString> declared;
    const QDir dir(QStringLiteral(MNV2_UI_MODELS_DIR));
    const QRegularExpression re(QStringLiteral(R"(class\s+(\w+)\s*:\s*public\s+QAbstractTableModel)"));
    for (const QString& header : dir.entryList({QStringLiteral("*.h")}, QDir::Files)) {
      QFile f(dir.filePath(header));
      QVERIFY(f.open(QIODevice::ReadOnly));
      for (const auto& m : re.globalMatch(QString::fromUtf8(f.readAll()))) declared << m.captured(1);
    }
    QVERIFY2(declared.size() >= 8, qPrintable(QStringList(declared.values()).join(QLatin1Char(' '))));
    QSet<QString> covered;
    for (const Case& c : cases()) covered << c.name;
    for (const QString& name : declared)
      QVERIFY2(covered.contains(name), qPrintable(name + QStringLiteral(" is not covered by ModelHeadersTest")));
  }

  void everyColumnHasItsOwnHeader() {
    for (const Case& c : cases()) {
      const QAbstractItemModel& m = *c.model;
      const int columns = m.columnCount();
      QVERIFY2(columns > 0, qPrintable(c.name));
      QSet<QString> seen;
      std::map<QString, int> column;
      for (int s = 0; s < columns; ++s) {
        const QString h = m.headerData(s, Qt::Horizontal, Qt::DisplayRole).toString();
        QVERIFY2(!h.trimmed().isEmpty(), qPrintable(QStringLiteral("%1: column %2 has no header").arg(c.name).arg(s)));
        QVERIFY2(!seen.contains(h),
                 qPrintable(QStringLiteral("%1: header '%2' stands over two columns").arg(c.name, h)));
        seen << h;
        column[h] = s;
      }
      // The header list ends where the columns do.
      for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)}) {
        QVERIFY2(!m.headerData(columns, Qt::Horizontal, role).isValid(),
                 qPrintable(QStringLiteral("%1: a header past the last column").arg(c.name)));
        QVERIFY2(!m.headerData(-1, Qt::Horizontal, role).isValid(), qPrintable(c.name));
      }
      // Each tool-tip over its own column.
      for (const auto& [header, phrase] : c.tooltips) {
        const auto it = column.find(header);
        QVERIFY2(it != column.end(), qPrintable(QStringLiteral("%1: no column headed '%2' (headers: %3)")
                                                    .arg(c.name, header, QStringList(seen.values()).join(", "))));
        const QString tip = m.headerData(it->second, Qt::Horizontal, Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(phrase),
                 qPrintable(QStringLiteral("%1: the tool-tip of '%2' is '%3'").arg(c.name, header, tip)));
      }
    }
  }
};

MNV2_UI_SUITE(ModelHeadersTest);
#include "test_model_headers.moc"
