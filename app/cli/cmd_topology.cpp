// mnv2 topology: the layers with their output shapes, parameters and MACs, as a table, CSV or JSON.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/report.h"
#include "mnv2/topology_report.h"
#include "output.h"
#include "run_request.h"

namespace mnv2::cli {

void declare_topology(Args& a) {
  model_options(a);
  a.value("--format", "table, csv or json (default table)");
  batch_option(a);
  size_option(a);
}

int cmd_topology(const Args& args, const OptionValues& options) {
  if (!args.positionals().empty()) throw UsageError("topology takes no positional arguments");
  const std::string format = args.get_or("--format", "table");
  if (format != "table" && format != "csv" && format != "json")
    throw UsageError("--format must be table, csv or json, got '" + format + "'");
  LoadedModel m = load_model(args, options);
  const PrepareConfig size = prepare_config_of(options, {m.model.input_height, m.model.input_width});
  const int batch = size.batch, h = size.height, w = size.width;
  const std::vector<LayerStats> stats = analyse(m.model, batch, h, w);
  int64_t total_params = 0, total_macs = 0, total_act = 0;
  for (const auto& s : stats) {
    total_params += s.params;
    total_macs += s.macs;
    total_act += s.activation_bytes;
  }

  if (format == "json") {
    std::cout << json::dump(topology_json(report_model(m.model, m.location.how), m.model, stats, batch, h, w), 2)
              << "\n";
    return 0;
  }
  if (format == "csv") {
    print_warnings(std::cout, m.model, "# WARNING: ");
    std::cout << topology_csv(m.model, stats);
    return 0;
  }
  print_warnings(std::cout, m.model);
  std::cout << "model: " << m.model.source << " (" << m.location.how << ")\n";
  std::cout << "input: " << batch << "x" << m.model.input_channels << "x" << h << "x" << w << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-48s %-22s %-18s %10s %14s\n", "idx: layer", "name", "output", "params", "MACs");
  std::cout << line;
  for (size_t i = 0; i < m.model.layers.size(); ++i) {
    const Layer& l = m.model.layers[i];
    const LayerStats& s = stats[i];
    std::string head = std::to_string(l.index) + ": " + describe(l);
    std::snprintf(line, sizeof line, "%-48s %-22s %-18s %10lld %14lld\n", head.c_str(), l.name.c_str(),
                  s.output.str().c_str(), static_cast<long long>(s.params), static_cast<long long>(s.macs));
    std::cout << line;
  }
  std::cout << "\n" << m.model.layers.size() << " layers (";
  bool first = true;
  for (LayerKind k : {LayerKind::Conv2d, LayerKind::ReLU6, LayerKind::ReLU, LayerKind::ResidualAdd,
                      LayerKind::GlobalAveragePool, LayerKind::Linear}) {
    if (int c = count_layers(m.model, k)) {
      std::cout << (first ? "" : ", ") << c << " " << to_string(k);
      first = false;
    }
  }
  std::cout << "), " << m.model.num_blocks << " bottleneck blocks, " << total_params << " params, " << total_macs
            << " MACs, " << total_act << " activation bytes\n";
  return 0;
}

}  // namespace mnv2::cli
