// What mnv2's commands run on (see run_request.h).
#include "run_request.h"

#include <filesystem>
#include <iostream>
#include <utility>

#include "common/environment.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/memory.h"  // check_sizes_fit
#include "mnv2/printable.h"
#include "mnv2/sweep.h"

namespace mnv2::cli {

LoadedModel load_model(const Args& args, const OptionValues& options) {
  LoadedModel m;
  m.location = locate_model(frontend::explicit_model(options), executable_dir());
  args.outputs().add_input("the model", m.location.path);
  m.model = load_located_model(m.location);
  const std::filesystem::path folder = std::filesystem::path(m.location.path).parent_path();
  for (const ExternalDataFile& f : m.model.file.external_files)
    args.outputs().add_input("the model's external data", (folder / f.location).string());
  for (const auto& w : m.model.warnings) std::cerr << "WARNING: " << printable(w) << "\n";
  return m;
}

ProfileRequest parse_profile_request(const Args& args, const OptionValues& options, bool compare, bool remote) {
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  ProfileRequest req;
  if (compare) {
    if (args.get("--backend")) throw UsageError("compare takes --backends B1,B2[,B3]");
    req.backends = split(args.get_or("--backends", "cpu,cudnn"), ',');
    if (req.backends.size() < 2) throw UsageError("compare needs at least two backends, e.g. --backends cpu,cudnn");
  } else {
    if (args.get("--backends")) throw UsageError("profile takes one --backend; use compare for several");
    req.backends = {args.get_or("--backend", "cpu")};
  }
  for (size_t i = 0; i < req.backends.size(); ++i) {
    make_backend(req.backends[i]);  // unknown names are usage errors
    for (size_t k = 0; k < i; ++k)
      if (req.backends[k] == req.backends[i]) throw UsageError("backend '" + req.backends[i] + "' given twice");
  }
  ProfileConfig& c = req.base;
  c.options = options;
  const PrepareConfig p = prepare_config_of(c.options, {224, 224});
  c.batch = p.batch;
  c.warmup = static_cast<int>(c.options.integer("warmup"));
  c.iters = static_cast<int>(c.options.integer("iters"));
  c.precision = p.precision;
  c.cuda = p.cuda;
  c.cudnn = p.cudnn;
  c.cpu_threads = p.cpu_threads;
  c.device = p.device;
  c.timer = parse_timer(c.options.value("timing"));
  c.graph_replay = c.options.value("exec") == "graph";
  c.layers_without_graph = compare;  // compare's list mixes backends: those without a graph run layer by layer
  if (args.get("--image") && args.get("--tensor")) throw UsageError("give --image or --tensor, not both");
  if (args.get("--image") && args.get("--input-size"))
    throw UsageError("--input-size applies to random or --tensor inputs; an image is cropped as the model says");
  req.m = load_model(args, options);
  auto [h, w] = args.get("--input-size") ? parse_input_size(*args.get("--input-size"))
                                         : std::pair<int, int>{req.m.model.input_height, req.m.model.input_width};
  if (auto image = args.get("--image")) {
    // The image is cropped as the model says: every backend's sizes are checked at that crop before it is decoded.
    for (const std::string& backend : req.backends) {
      if (remote) break;
      PrepareConfig at_crop = p;
      at_crop.height = at_crop.width = req.m.model.preprocess.crop;
      check_sizes_fit(req.m.model, backend, at_crop);
    }
    Tensor t = preprocess(decode_image_file(*image), req.m.model.preprocess);
    h = static_cast<int>(t.shape.h);
    w = static_cast<int>(t.shape.w);
    c.input = std::move(t);
    c.input_name = *image;
  } else if (auto tensor = args.get("--tensor")) {
    c.input = read_tensor_file(*tensor, Shape{1, req.m.model.input_channels, h, w});
    c.input_name = *tensor;
  }
  c.height = h;
  c.width = w;
  analyse(req.m.model, c.batch, h, w);  // a size the network cannot take fails before any run
  return req;
}

}  // namespace mnv2::cli
