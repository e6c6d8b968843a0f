// The app's command line and its scripted mode: the options that open a model, an image or reports in the window,
// and those that run a fixed sequence for automated screenshots and tests, driving the very same window and worker:
//   mnv2-profiler --model F --image IMG --backend B [--precision P] --run [--compare] [--screenshot FILE.png] [--quit]
//   mnv2-profiler --backend B [--precision P] --eval SET [--eval-images DIR] [--eval-batch N] --tab accuracy
//                 [--export-eval-csv F] [--screenshot FILE.png] [--quit]
//   mnv2-profiler --tab lab --lab-slot S (--lab-kernel F.cu | --lab-template) [--lab-precision P] [--lab-layers L]
//                 [--lab-batch N] [--lab-arch sm_XX] --lab compile|check|run [--lab-view V] [--screenshot F] [--quit]
//     (the Kernel lab runs `mnv2 lab` as a process: MNV2_CLI, else the mnv2 beside this program, else the PATH)
//   mnv2-profiler --run-on TARGET ... --run (Profile on a remote target of the targets file)
//   mnv2-profiler [--run-on TARGET] [--probe-target TARGET] --targets-screenshot FILE.png [--quit]
//   mnv2-profiler --model F --backend cuda --precision fp16 --compare --select-layer 21 [--tab comparison --runs A,B]
//                 --deep-dive [--screenshot F] [--quit]   (Nsight Compute on that layer's step: ncu on the PATH)
// Exit codes with --quit: 0 success, 1 a step failed (model, image, report, run, export, screenshot),
// 2 bad arguments.
#pragma once

#include <QCommandLineParser>
#include <memory>
#include <optional>

#include "widgets/main_window.h"

namespace mnv2::gui {

class ScreenshotScript {
 public:
  // Adds every option (and the positional image) to `parser`, which must outlive this.
  explicit ScreenshotScript(QCommandLineParser& parser);
  ~ScreenshotScript();
  ScreenshotScript(const ScreenshotScript&) = delete;
  ScreenshotScript& operator=(const ScreenshotScript&) = delete;

  // After parser.process(): checks the values; false (the first problem said on stderr) for bad arguments.
  bool check();
  // Any scripting option makes the run reproducible: no saved settings, errors on stderr instead of boxes.
  ui::MainWindow::Options windowOptions() const;
  // Shows `window` as the options say and, scripted, runs the sequence. Returns the exit code where the script
  // ends the program (--quit), nullopt where the event loop goes on.
  std::optional<int> run(ui::MainWindow& window);

 private:
  struct Options;  // the QCommandLineOptions
  struct Values;   // what check() made of them, and what the window reported so far
  QCommandLineParser& m_parser;
  std::unique_ptr<Options> m_options;
  std::unique_ptr<Values> m_values;
};

}  // namespace mnv2::gui
