// Peak memory of one read through the engine's budgets, for docs/LIMITS.md: reads a report (as the app's
// Open does) or a roofline cache (as device_ceilings does) and prints the outcome, the time and the process's
// peak resident memory. Not a test: figures are measured, never asserted.
//
//   mnv2_read_memory report|cache FILE
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "mnv2/error.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/report.h"

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "report" && std::string(argv[1]) != "cache")) {
    std::fprintf(stderr, "usage: mnv2_read_memory report|cache FILE\n");
    return 2;
  }
  const std::string kind = argv[1], path = argv[2];
  if (const char* e = std::getenv("MNV2_PRINT_ESTIMATE"); e && *e == '1') {
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    std::printf("parsed-size estimate %.1f MiB for %.1f MiB of text\n", mnv2::json::parsed_size(text) / 1048576.0,
                text.size() / 1048576.0);
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string outcome;
  try {
    if (kind == "report")
      outcome = "read " + std::to_string(mnv2::read_reports_file(path).size()) + " runs";
    else
      outcome = "read " + std::to_string(mnv2::json::parse_file(path, mnv2::inputs::kRooflineCache).size()) + " keys";
  } catch (const mnv2::Error& e) {
    outcome = std::string("refused: ") + e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("%s\n%.3f s, peak resident memory %.1f MiB\n", outcome.substr(0, 300).c_str(), s, u.ru_maxrss / 1024.0);
  return 0;
}
