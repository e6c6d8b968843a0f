// The UI test program: mnv2_ui_tests [SuiteName] [QtTest options]. Without a suite name it runs them all.
// CTest runs each suite as its own test with QT_QPA_PLATFORM=offscreen.
#include <QApplication>
#include <QDir>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>
#include <cstring>

#include "mnv2/model.h"
#include "models/report_access.h"
#include "ui_test_support.h"
#include "widgets/main_window.h"

namespace mnv2::ui::test {

std::vector<Suite>& suites() {
  static std::vector<Suite> all;
  return all;
}

bool startOnMainModel(MainWindow& window, int timeoutMs, bool waitEnvironment) {
  QSignalSpy env(&window, &MainWindow::environmentReady);
  QSignalSpy model(&window, &MainWindow::modelReady);
  window.start(mainModelPath());
  const bool ready =
      QTest::qWaitFor([&] { return model.count() == 1 && (!waitEnvironment || env.count() == 1); }, timeoutMs);
  if (!ready) {
    qWarning("startOnMainModel: not ready after %d ms (model signals %d, environment signals %d)", timeoutMs,
             static_cast<int>(model.count()), static_cast<int>(env.count()));
    return false;
  }
  if (!model.first().at(0).toBool()) {
    qWarning("startOnMainModel: the main model failed to load (%s)", qPrintable(mainModelPath()));
    return false;
  }
  return true;
}

QString sharedPath(const QString& relative) {
  QString dir = qEnvironmentVariable("MNV2_SHARED_DIR");
  if (dir.isEmpty()) dir = QStringLiteral(MNV2_SHARED_DIR_DEFAULT);
  return QDir(dir).filePath(relative);
}

QString mainModelPath() { return sharedPath(QStringLiteral("weights/mobilenet_v2_1.0_224.onnx")); }
QString imagePath(const QString& name) { return sharedPath(QStringLiteral("images/") + name); }

QStringList csvFields(const QString& line) {
  QStringList out;
  QString field;
  bool quoted = false;
  for (int i = 0; i < line.size(); ++i) {
    const QChar c = line[i];
    if (quoted) {
      if (c == QLatin1Char('"') && i + 1 < line.size() && line[i + 1] == QLatin1Char('"')) {
        field += c;
        ++i;
      } else if (c == QLatin1Char('"')) {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == QLatin1Char('"')) {
      quoted = true;
    } else if (c == QLatin1Char(',')) {
      out << field;
      field.clear();
    } else {
      field += c;
    }
  }
  out << field;
  return out;
}

const mnv2::Model& mainModel() {
  static const mnv2::Model model = mnv2::load_onnx(mainModelPath().toStdString());
  return model;
}

std::vector<mnv2::Layer> weightlessTopology() {
  std::vector<mnv2::Layer> layers = mainModel().layers;
  for (auto& l : layers) {
    l.weight.clear();
    l.bias.clear();
  }
  return layers;
}

mnv2::RunReport syntheticReport(const std::vector<mnv2::Layer>& topology, const std::string& backend, double baseNs,
                                double spread, bool fuseActivations) {
  mnv2::RunReport r;
  r.backend = backend;
  r.device = backend == "cpu" ? "CPU" : "Test GPU";
  r.timer = backend == "cpu" ? "host_clock" : "cuda_event";
  r.topology = topology;
  r.layer_stats.resize(topology.size());
  for (auto& st : r.layer_stats) st.output = mnv2::Shape{1, 1, 1, 1};  // a report read back needs real shapes
  r.layers.resize(topology.size());
  double sum = 0;
  for (size_t l = 0; l < topology.size();) {
    mnv2::StepProfile s;
    s.step = static_cast<int>(r.steps.size());
    s.layers = {static_cast<int>(l)};
    const bool fuse = fuseActivations && topology[l].kind == mnv2::LayerKind::Conv2d && l + 1 < topology.size() &&
                      topology[l + 1].kind == mnv2::LayerKind::ReLU6;
    if (fuse) s.layers.push_back(static_cast<int>(l + 1));
    s.name = fuse ? "fused " + std::to_string(l) : "step " + std::to_string(l);
    const double median = baseNs * (1 + s.step % 7);
    s.time_ns.n = 10;
    s.time_ns.median = s.time_ns.mean = median;
    s.time_ns.p10 = s.time_ns.min = median * (1 - spread);
    s.time_ns.p90 = s.time_ns.max = median * (1 + spread);
    sum += median;
    for (int x : s.layers) {
      r.layers[static_cast<size_t>(x)].layer = x;
      r.layers[static_cast<size_t>(x)].step = s.step;
    }
    l += s.layers.size();
    r.steps.push_back(s);
  }
  for (auto& s : r.steps) s.share = s.time_ns.median / sum;
  r.sum_of_steps_ms = sum / 1e6;
  mnv2::compute_group_totals(r);
  return r;
}

}  // namespace mnv2::ui::test

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("mnv2-ui-tests"));
  QApplication::setApplicationName(QStringLiteral("mnv2-ui-tests"));
  QStandardPaths::setTestModeEnabled(true);  // settings land in ~/.qttest, never the user's
  auto& all = mnv2::ui::test::suites();
  if (argc > 1 && argv[1][0] != '-') {
    for (const auto& s : all) {
      if (std::strcmp(s.name, argv[1]) != 0) continue;
      // CTest runs suites in parallel processes: each keeps its settings in a file of its own, so that one
      // suite clearing or saving settings never changes another's.
      QApplication::setApplicationName(QStringLiteral("mnv2-ui-tests-") + QString::fromLatin1(s.name));
      argv[1] = argv[0];  // QtTest sees the program name, then its own options
      return s.run(argc - 1, argv + 1);
    }
    std::fprintf(stderr, "unknown suite '%s'\n", argv[1]);
    return 2;
  }
  int failures = 0;
  for (const auto& s : all) failures += s.run(argc, argv);
  return failures;
}
