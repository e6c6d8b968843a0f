// mnv2-profiler: the Qt desktop app. Without scripting options it opens the window; with them it runs a fixed
// sequence for automated screenshots and tests, driving the very same window and worker (screenshot_script.h).
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string_view>

#include "common/environment.h"
#include "common/omp_wait_policy.h"
#include "mnv2/error.h"
#include "screenshot_script.h"
#include "widgets/main_window.h"

// Idle OpenMP threads spin briefly, then sleep, unless the user chose a policy (set before libgomp starts).
MNV2_DEFAULT_OMP_WAIT_POLICY();

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) is an export's EFBIG error, not a process killed mid-write (SIGXFSZ).
  std::signal(SIGXFSZ, SIG_IGN);
  // --help and --version print and exit before any window system is needed: a QCoreApplication for them (a
  // QApplication aborts without a display), the QApplication otherwise.
  bool textOnly = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version") textOnly = true;
  }
  std::unique_ptr<QCoreApplication> app;
  if (textOnly)
    app = std::make_unique<QCoreApplication>(argc, argv);
  else
    app = std::make_unique<QApplication>(argc, argv);
  QCoreApplication::setOrganizationName(QStringLiteral("mnv2"));
  QCoreApplication::setApplicationName(QStringLiteral("mnv2-profiler"));
  QCoreApplication::setApplicationVersion(QStringLiteral(MNV2_VERSION));
  if (!textOnly) QApplication::setWindowIcon(QIcon(QStringLiteral(":/mnv2/mnv2-profiler.png")));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "A visual profiler for MobileNetV2 inference. The model is --model F, else $MNV2_MODEL, else a weights/ "
      "folder next to the program, else the built-in topology with synthetic weights."));
  parser.addHelpOption();
  parser.addVersionOption();
  mnv2::gui::ScreenshotScript script(parser);
  parser.process(*app);  // --help, --version: printed, exit 0
  {
    // The engine's process-wide settings (model lookup's $MNV2_MODEL, caches, CUPTI switch, the kernel lab's
    // folder, the cpu backends' default threads) from the environment, as the CLI takes them.
    mnv2::OptionValues values;
    try {
      mnv2::frontend::offer_environment(values);
    } catch (const mnv2::Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
    mnv2::set_process_settings(mnv2::frontend::process_settings_of(values));
  }
  if (textOnly) return 0;  // not reached: process() exits for them
  if (!script.check()) return 2;

  mnv2::ui::MainWindow window(script.windowOptions());
  if (const std::optional<int> exitCode = script.run(window)) return *exitCode;
  return QApplication::exec();
}
