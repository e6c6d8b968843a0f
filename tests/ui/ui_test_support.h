// Shared pieces of the Qt UI tests: suite registration (one executable, one CTest test per suite), the
// shared data folder, and small report builders.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QtGlobal>
#include <functional>
#include <vector>

#include "mnv2/model.h"
#include "mnv2/profiler.h"

namespace mnv2::ui {
class MainWindow;
}

namespace mnv2::ui::test {

struct Suite {
  const char* name;
  std::function<int(int, char**)> run;
};
std::vector<Suite>& suites();

// Registers a QtTest class; the test program runs the suite named by its first argument (or all).
#define MNV2_UI_SUITE(Class)                                                     \
  static const bool registered_##Class = [] {                                    \
    ::mnv2::ui::test::suites().push_back({#Class, [](int argc, char** argv) {    \
                                            Class t;                             \
                                            return QTest::qExec(&t, argc, argv); \
                                          }});                                   \
    return true;                                                                 \
  }()

// The shared data folder: env MNV2_SHARED_DIR, else the CMake cache variable MNV2_SHARED_DIR.
QString sharedPath(const QString& relative);
QString mainModelPath();
QString imagePath(const QString& name);  // shared/images/<name>

// Starts a shown `window` on the main model and waits up to `timeoutMs` for its model (and, when
// `waitEnvironment`, its environment probe) to be ready. False, with a warning saying which, when the model
// failed to load or the time ran out.
[[nodiscard]] bool startOnMainModel(MainWindow& window, int timeoutMs, bool waitEnvironment = true);

// One CSV line's fields, double-quoted fields honoured ("" inside quotes is a quote).
QStringList csvFields(const QString& line);

// The main model, loaded once per test program.
const mnv2::Model& mainModel();
// Its layers without their weights and biases: the topology a synthetic report needs.
std::vector<mnv2::Layer> weightlessTopology();

// A hand-made report over `topology`: one step per layer, or pairs (conv + activation) fused into one
// step when `fuseActivations`; step k's median is `base_ns * (1 + k % 7)` with p10/p90 at ±`spread`.
mnv2::RunReport syntheticReport(const std::vector<mnv2::Layer>& topology, const std::string& backend, double baseNs,
                                double spread, bool fuseActivations);

// An environment variable set for a test and put back as it was (set or unset) when the guard goes.
struct EnvGuard {
  QByteArray name, value;
  bool had;
  explicit EnvGuard(const char* n) : name(n), value(qgetenv(n)), had(qEnvironmentVariableIsSet(n)) {}
  ~EnvGuard() {
    if (had)
      qputenv(name.constData(), value);
    else
      qunsetenv(name.constData());
  }
};

}  // namespace mnv2::ui::test
