// The kernel lab's worker process (`mnv2 lab-worker`, mnv2/lab.h): the only process that runs the user's code.
// It loads the compiled module, runs the network with the user's kernel in its slot and checks every replaced
// layer against the cpu reference and our own kernel; only a kernel that passes is then timed (CUPTI, per
// layer, beside ours unfused and cuDNN's fused default, and end to end with the user's kernel inside the graph).
// The result goes to the parent through a pipe as one "mnv2.lab" document.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/plugin_api.h"
#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/flops.h"
#include "mnv2/lab.h"
#include "mnv2/model_lookup.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/tensor.h"

namespace mnv2 {
namespace {

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string fmt(double v, const char* spec = "%.3g") {
  char b[64];
  std::snprintf(b, sizeof b, spec, v);
  return b;
}

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Compares one replaced layer's output: an element fails when it is not finite, or when it is further than
// `tol` from both the cpu reference and our kernel's output (tol = the layer bound times the reference's
// largest magnitude, at least the bound). The layer fails on any failing element, or when its relative L2 error
// exceeds the bound against both.
LabCheck check_layer(const Tensor& got, const Tensor& ref, const Tensor& ours, double bound) {
  LabCheck c;
  c.bound = bound;
  const int64_t n = static_cast<int64_t>(got.data.size());
  const ErrorStats vs_ref = compare(got.data.data(), ref.data.data(), n);
  const ErrorStats vs_ours = compare(got.data.data(), ours.data.data(), n);
  c.max_abs_vs_reference = vs_ref.max_abs;
  c.rel_l2_vs_reference = vs_ref.rel_l2;
  c.max_abs_vs_ours = vs_ours.max_abs;
  double ref_max = 0;
  for (float v : ref.data) ref_max = std::max(ref_max, static_cast<double>(std::fabs(v)));
  const double tol = bound * std::max(1.0, ref_max);
  int64_t worst = -1;
  double worst_err = -1;
  int64_t first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double g = got.data[static_cast<size_t>(i)], e = ref.data[static_cast<size_t>(i)],
                 o = ours.data[static_cast<size_t>(i)];
    if (!std::isfinite(g) || (std::fabs(g - e) > tol && std::fabs(g - o) > tol)) {
      first = i;
      break;
    }
    if (std::fabs(g - e) > worst_err) worst_err = std::fabs(g - e), worst = i;
  }
  const bool l2_ok = (vs_ref.finite && vs_ref.rel_l2 <= bound) || (vs_ours.finite && vs_ours.rel_l2 <= bound);
  c.passed = first < 0 && l2_ok;
  if (!c.passed) {
    const int64_t at = first >= 0 ? first : std::max<int64_t>(worst, 0);
    const Shape& s = got.shape;
    LabFailure f;
    f.flat_index = at;
    f.coords = {at / (s.c * s.h * s.w), (at / (s.h * s.w)) % s.c, (at / s.w) % s.h, at % s.w};
    f.expected = ref.data[static_cast<size_t>(at)];
    f.got = got.data[static_cast<size_t>(at)];
    c.first_failure = f;
  }
  return c;
}

std::string shape_text(const Shape& s) {
  return std::to_string(s.n) + "," + std::to_string(s.c) + "," + std::to_string(s.h) + "," + std::to_string(s.w);
}

std::optional<double> step_us(const RunReport& r, int layer) {
  for (const StepProfile& s : r.steps)
    if (std::find(s.layers.begin(), s.layers.end(), layer) != s.layers.end()) return s.time_ns.median / 1000.0;
  return std::nullopt;
}

std::optional<double> gpu_ms(const RunReport& r) {
  if (r.end_to_end.gpu_ms) return r.end_to_end.gpu_ms->median;
  return std::nullopt;
}

// One profile of `backend` as the lab times it: CUPTI kernel times, the CUDA graph replayed (per-step records by
// graph node), the same input as the check.
RunReport lab_profile(const Model& model, const std::string& backend, const CudaOptions& cuda, Precision p, int batch,
                      int runs, const Tensor& input, const std::string& input_name) {
  ProfileConfig pc;
  pc.backend = backend;
  pc.batch = batch;
  pc.height = input.shape.h;
  pc.width = input.shape.w;
  pc.precision = p;
  pc.cuda = cuda;
  pc.iters = runs;
  pc.warmup = std::min(10, std::max(1, runs / 10));
  pc.timer = TimerKind::cupti_kernel;
  pc.graph_replay = true;
  pc.layers_without_graph = true;
  pc.input = input;
  pc.input_name = input_name;
  return profile(model, pc);
}

}  // namespace

int lab_worker_main(const std::string& request_path, int result_fd) {
  LabResult r;
  r.status = "error";
  const auto finish = [&](int code) {
    write_all(result_fd, lab_result_json(r).dump());
    ::close(result_fd);
    std::fflush(stdout);
    std::fflush(stderr);
    // No teardown: after a crash the CUDA context is gone, and nothing here needs destructors.
    std::_Exit(code);
    return code;
  };
  json::Json req;
  LabKernelSpec spec;
  Model model;
  Precision precision = Precision::fp32;
  int batch = 1, runs = 100, device = 0;
  bool no_time = false;
  std::string input_text, report_json, report_csv;
  try {
    req = json::parse_file(request_path);
    spec.slot = req.at("slot").get<std::string>();
    spec.name = req.at("name").get<std::string>();
    spec.cubin_path = req.at("cubin").get<std::string>();
    spec.layers = req.at("layers").get<std::vector<int>>();
    precision = parse_precision(req.at("precision").get<std::string>());
    batch = req.at("batch").get<int>();
    device = req.value("device", 0);
    runs = std::max(1, req.at("runs").get<int>());
    no_time = req.at("no_time").get<bool>();
    input_text = req.at("input").get<std::string>();
    report_json = req.at("report_json").get<std::string>();
    report_csv = req.at("report_csv").get<std::string>();
    r.slot = spec.slot;
    r.kernel_name = req.at("kernel_name").get<std::string>();
    r.precision = to_string(precision);
    r.batch = batch;
    ModelLocation loc;
    loc.path = req.at("model").get<std::string>();
    model = load_located_model(loc);
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) {
      r.message = "no GPU in the worker: " + env.why_none;
      return finish(1);
    }
    const GpuDevice& d = gpu_device(device);
    r.device = d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ")";
  } catch (const std::exception& e) {
    r.message = std::string("bad request: ") + e.what();
    return finish(1);
  }

  const LabSlot* slot = nullptr;
  for (const LabSlot& s : lab_slots())
    if (s.name == spec.slot) slot = &s;
  r.grid_rule = slot != nullptr ? slot->grid_rule : "";
  const std::vector<int> slot_layers = lab_slot_layers(model, spec.slot);
  for (int l : spec.layers)
    if (std::find(slot_layers.begin(), slot_layers.end(), l) == slot_layers.end()) {
      r.message = "layer " + std::to_string(l) + " is not a " + spec.slot + " layer of this model";
      return finish(2);
    }
  register_lab_kernel(spec);
  const std::string backend = "cuda+lab:" + spec.name;
  CudaOptions unfused;
  unfused.variant = CudaOptions::Variant::fast;
  unfused.fusion = CudaOptions::Fusion::none;
  PrepareConfig config;
  config.batch = batch;
  config.height = model.input_height;
  config.width = model.input_width;
  config.precision = precision;
  config.cuda = unfused;
  config.device = device;

  Tensor input;
  std::string input_name;
  try {
    const Shape shape{batch, model.input_channels, config.height, config.width};
    if (input_text.empty() || input_text == "random") {
      input = random_input(shape, 1);
      input_name = "random(seed=1)";
    } else {
      Tensor t = read_tensor_file(input_text, shape);
      if (t.shape.n == 1 && batch > 1) {  // one image, repeated over the batch
        input = Tensor(shape);
        for (int n = 0; n < batch; ++n) std::copy(t.data.begin(), t.data.end(), input.data.begin() + n * t.data.size());
      } else if (t.shape.n == batch) {
        input = t;
      } else {
        throw UsageError(input_text + " holds " + std::to_string(t.shape.n) + " images, not 1 or the batch");
      }
      input_name = input_text;
    }
  } catch (const std::exception& e) {
    r.message = std::string("input: ") + e.what();
    return finish(2);
  }

  // ---- the check ----------------------------------------------------------------------------------------------
  std::vector<Tensor> user_out, ref_out, ours_out;
  std::vector<ExecStep> user_steps;
  try {
    const gpu_plugin::Api* gpu = gpu_plugin::api();
    if (gpu == nullptr) throw Error("the GPU plugin is not loaded: " + gpu_plugin::status().problem);
    gpu_plugin::LabModuleInfo info;
    gpu->lab_module_info(device, spec.cubin_path, info);
    // A kernel written for another slot (or taking anything else) would read this slot's struct as its own: its
    // (mangled) name says what it takes ("_Z6linearN8mnv2_lab16ClassifierParamsE"); an extern "C" kernel's name
    // does not, and is trusted.
    if (slot != nullptr && info.kernel_name.rfind("_Z", 0) == 0) {
      const std::string type = slot->params_struct.substr(slot->params_struct.rfind(':') + 1);
      if (info.kernel_name.find("8mnv2_lab" + std::to_string(type.size()) + type) == std::string::npos) {
        r.message = "lab: the kernel " + info.kernel_name + " does not take " + slot->params_struct +
                    ", the parameter struct of slot '" + spec.slot + "' (a kernel written for another slot?)";
        say(r.message);
        return finish(1);
      }
    }
    // The source's name where the module's (mangled) one contains it, else the module's.
    if (r.kernel_name.empty() || info.kernel_name.find(r.kernel_name) == std::string::npos)
      r.kernel_name = info.kernel_name;
    r.has_launch = true;
    std::copy(info.block, info.block + 3, r.block);
    std::copy(info.tile, info.tile + 2, r.tile);
    r.shared_bytes = info.shared_bytes;
    say("loaded " + r.kernel_name + ": block " + std::to_string(r.block[0]) + "x" + std::to_string(r.block[1]) + "x" +
        std::to_string(r.block[2]) + ", tile " + std::to_string(r.tile[0]) + "x" + std::to_string(r.tile[1]) +
        ", shared " + std::to_string(r.shared_bytes) + " B");
    say("running " + backend + " (outputs poisoned with NaN first) on " + input_name + ", batch " +
        std::to_string(batch) + ", " + r.precision);
    auto net = make_backend(backend)->prepare(model, config);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    net->run(input, keep);
    user_out = net->layer_outputs();
    user_steps = net->steps();
  } catch (const UsageError& e) {
    r.message = e.what();
    return finish(2);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    r.status = what.rfind("lab:", 0) == 0 ? "error" : "crashed";
    // A fault inside a kernel is reported by the next CUDA call on the stream, which may be a later layer's
    // launch or a synchronisation: the text names that call.
    r.message =
        (r.status == "crashed" ? "the kernel crashed the worker's CUDA context (a kernel's fault is reported by "
                                 "the next CUDA call on the stream): "
                               : "") +
        what;
    say(r.message);
    return finish(r.status == "crashed" ? 4 : 1);
  }
  try {
    say("running the cpu reference and our kernel (cuda, unfused) on the same input");
    PrepareConfig ref_config = config;
    ref_config.precision = reference_precision("cpu-ref", precision);
    auto ref = make_backend("cpu-ref")->prepare(model, ref_config);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    ref->run(input, keep);
    ref_out = ref->layer_outputs();
    auto ours = make_backend("cuda")->prepare(model, config);
    ours->run(input, keep);
    ours_out = ours->layer_outputs();
  } catch (const std::exception& e) {
    r.message = std::string("the reference runs failed: ") + e.what();
    return finish(1);
  }

  const std::vector<LayerStats> stats = analyse(model, batch, config.height, config.width);
  const double bound = precision_layer_threshold(precision);
  bool all_passed = true;
  int first_failed = -1;
  for (const ExecStep& step : user_steps) {
    if (step.variant.rfind("lab:", 0) != 0) continue;
    const int index = step.layers.front();
    const int out = step.layers.back();  // the step's materialised output (after its fused clip)
    const Layer& layer = model.layers[static_cast<size_t>(index)];
    LabLayer l;
    l.index = index;
    l.name = layer.name;
    const ConvParams& conv = layer.conv;
    if (spec.slot == "depthwise") {
      l.op = "depthwise 3x3 s" + std::to_string(conv.stride_h);
    } else if (spec.slot == "pointwise") {
      l.op = "1x1 " + std::to_string(conv.in_channels) + "->" + std::to_string(conv.out_channels);
      for (int j : step.layers)
        if (model.layers[static_cast<size_t>(j)].kind == LayerKind::ResidualAdd) l.op += " +res";
    } else if (spec.slot == "stem") {
      l.op = "conv " + std::to_string(conv.kernel_h) + "x" + std::to_string(conv.kernel_w) + " s" +
             std::to_string(conv.stride_h) + " " + std::to_string(conv.in_channels) + "->" +
             std::to_string(conv.out_channels);
    } else if (spec.slot == "pool") {
      const Shape& in = layer.inputs.front() == kNetworkInput
                            ? Shape{batch, model.input_channels, config.height, config.width}
                            : stats[static_cast<size_t>(layer.inputs.front())].output;
      l.op = "avgpool " + std::to_string(in.h) + "x" + std::to_string(in.w);
    } else {
      l.op = "linear " + std::to_string(layer.in_features) + "->" + std::to_string(layer.out_features);
    }
    const Tensor& got = user_out[static_cast<size_t>(out)];
    l.shape = shape_text(got.shape);
    if (got.empty() || ref_out[static_cast<size_t>(out)].empty() || ours_out[static_cast<size_t>(out)].empty()) {
      r.message = "layer " + std::to_string(index) + ": an output was not materialised";
      return finish(1);
    }
    l.check = check_layer(got, ref_out[static_cast<size_t>(out)], ours_out[static_cast<size_t>(out)], bound);
    const LayerStats& st = stats[static_cast<size_t>(index)];
    l.flops = 2.0 * static_cast<double>(st.macs);
    // In the storage type, the network input float32 (the stem slot reads it so in every precision).
    l.bytes = step_bytes(model.layers, stats, {index}, storage_bytes(precision));
    const LabCheck& check = *l.check;
    std::string line = "  layer " + std::to_string(index) + " '" + l.name + "' " + l.op + " [" + l.shape + "]: ";
    if (check.passed) {
      line += "passed (max abs " + fmt(check.max_abs_vs_reference) + " vs reference, " + fmt(check.max_abs_vs_ours) +
              " vs ours; rel L2 " + fmt(check.rel_l2_vs_reference) + ", bound " + fmt(bound) + ")";
    } else {
      const LabFailure& f = *check.first_failure;
      line += "FAILED at element (n,c,h,w) = (" + std::to_string(f.coords[0]) + "," + std::to_string(f.coords[1]) +
              "," + std::to_string(f.coords[2]) + "," + std::to_string(f.coords[3]) + "): expected " +
              fmt(f.expected, "%.6g") + ", got " + fmt(f.got, "%.6g") + " (max abs " + fmt(check.max_abs_vs_reference) +
              ", rel L2 " + fmt(check.rel_l2_vs_reference) + ", bound " + fmt(bound) + ")";
      if (all_passed) first_failed = index;
      all_passed = false;
    }
    say(line);
    r.layers.push_back(l);
  }
  if (r.layers.empty()) {
    r.message = "the kernel replaced no layer (no " + spec.slot + " step in the plan)";
    return finish(1);
  }
  if (!all_passed) {
    const LabLayer& bad =
        *std::find_if(r.layers.begin(), r.layers.end(), [&](const LabLayer& l) { return l.index == first_failed; });
    const LabFailure& f = *bad.check->first_failure;
    r.status = "check_failed";
    r.message = "check failed at layer " + std::to_string(bad.index) + " '" + bad.name + "', element (n,c,h,w) = (" +
                std::to_string(f.coords[0]) + "," + std::to_string(f.coords[1]) + "," + std::to_string(f.coords[2]) +
                "," + std::to_string(f.coords[3]) + "): expected " + fmt(f.expected, "%.6g") + ", got " +
                fmt(f.got, "%.6g") + "; not timed";
    return finish(1);
  }
  r.status = "passed";
  r.message = "check passed on " + std::to_string(r.layers.size()) + " layer(s)";
  if (no_time) {
    r.message += " (--no-time: not timed)";
    return finish(0);
  }

  // ---- timing ---------------------------------------------------------------------------------------------------
  try {
    say("timing " + backend + ", cuda (unfused) and cudnn (fused default): CUPTI, graph replay, " +
        std::to_string(runs) + " runs each");
    const RunReport user = lab_profile(model, backend, unfused, precision, batch, runs, input, input_name);
    const RunReport ours = lab_profile(model, "cuda", unfused, precision, batch, runs, input, input_name);
    const CudaOptions defaults;
    const bool default_is_unfused = defaults == unfused;
    std::optional<RunReport> ours_default;
    if (!default_is_unfused)
      ours_default = lab_profile(model, "cuda", defaults, precision, batch, runs, input, input_name);
    std::optional<RunReport> cudnn;
    try {
      cudnn = lab_profile(model, "cudnn", unfused, precision, batch, runs, input, input_name);
    } catch (const std::exception& e) {
      say(std::string("  cudnn not timed: ") + e.what());
    }
    for (LabLayer& l : r.layers) {
      l.user_us = step_us(user, l.index);
      l.ours_us = step_us(ours, l.index);
      if (cudnn) l.cudnn_us = step_us(*cudnn, l.index);
    }
    LabEndToEnd e;
    e.user_ms = gpu_ms(user);
    e.ours_unfused_ms = gpu_ms(ours);
    e.ours_default_ms = ours_default ? gpu_ms(*ours_default) : gpu_ms(ours);
    if (cudnn) e.cudnn_ms = gpu_ms(*cudnn);
    r.end_to_end = e;
    if (!report_json.empty()) {
      write_json_report(report_json, {user});
      r.report_json = report_json;
    }
    if (!report_csv.empty()) {
      write_csv_report(report_csv, {user});
      r.report_csv = report_csv;
    }
    r.message += "; timed";
  } catch (const std::exception& e) {
    r.status = "crashed";
    r.message = std::string("the check passed, but the timed runs failed: ") + e.what();
    return finish(4);
  }
  return finish(0);
}

}  // namespace mnv2
