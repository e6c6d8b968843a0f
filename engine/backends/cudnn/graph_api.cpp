// cuDNN's graph API for the fused convolution groups (graph_api.h).
#include "backends/cudnn/graph_api.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/error.h"

// CUDNN_ATTR_EXECUTION_PLAN_HANDLE is marked deprecated in cuDNN 9.x headers but is still what a plan needs
// to be finalized on the cuDNN versions this build runs with (9.x).
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace mnv2::cudnn_backend {
namespace {

BackendDescriptor make(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnBackendCreateDescriptor(type, &d));
  return BackendDescriptor(d);
}

void set(const BackendDescriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* values) {
  MNV2_CHECK_CUDNN(cudnnBackendSetAttribute(d.get(), name, type, count, values));
}

void set_desc(const BackendDescriptor& d, cudnnBackendAttributeName_t name, const BackendDescriptor& value) {
  cudnnBackendDescriptor_t v = value.get();
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

void finalize(const BackendDescriptor& d) { MNV2_CHECK_CUDNN(cudnnBackendFinalize(d.get())); }

// Packed strides of an NCHW-ordered shape, channels-last or not.
std::vector<int64_t> strides_of(const std::vector<int64_t>& d, bool nhwc) {
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  (void)n;
  if (nhwc) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

BackendDescriptor tensor(int64_t uid, const std::vector<int64_t>& dims, bool nhwc, cudnnDataType_t type,
                         bool is_virtual) {
  BackendDescriptor t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::vector<int64_t> strides = strides_of(dims, nhwc);
  const int64_t alignment = 16;  // every buffer starts on 256 bytes (the arenas' alignment)
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  finalize(t);
  return t;
}

// A pointwise operation y = op(x[, b]) in float32 arithmetic.
BackendDescriptor pointwise(OperationGraph& g, cudnnPointwiseMode_t mode, const BackendDescriptor& x,
                            const BackendDescriptor* b, const BackendDescriptor& y, float lower = 0.0f,
                            float upper = -1.0f) {
  BackendDescriptor pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  if (mode == CUDNN_POINTWISE_RELU_FWD) {
    set(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_FLOAT, 1, &lower);
    if (upper > 0.0f) set(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_FLOAT, 1, &upper);
  }
  finalize(pw);
  BackendDescriptor op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b != nullptr) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  finalize(op);
  g.parts.push_back(std::move(pw));
  return op;
}

}  // namespace

std::string ConvGraphSpec::ops() const {
  std::string t = "conv";
  if (bias) t += "+bias";
  if (act == Act::relu) t += "+relu";
  if (act == Act::clip) {
    char c[32];
    std::snprintf(c, sizeof c, "+relu(0,%g)", static_cast<double>(clip_max));
    t += c;
  }
  if (residual) t += "+add";
  return t;
}

std::string ConvGraphSpec::key() const {
  char t[320];
  std::snprintf(t, sizeof t,
                "%s %s x=%lldx%lldx%lldx%lld w=%lldx%lldx%lldx%lld g=%lld y=%lldx%lld pad=%lld,%lld,%lld,%lld "
                "stride=%lld,%lld %s",
                io_type == CUDNN_DATA_HALF ? "half" : "float", nhwc ? "nhwc" : "nchw", (long long)n, (long long)c,
                (long long)h, (long long)w, (long long)k, (long long)(c / std::max<int64_t>(groups, 1)), (long long)r,
                (long long)s, (long long)groups, (long long)out_h, (long long)out_w, (long long)pad_top,
                (long long)pad_left, (long long)pad_bottom, (long long)pad_right, (long long)stride_h,
                (long long)stride_w, ops().c_str());
  return t;
}

OperationGraph build_conv_graph(cudnnHandle_t handle, const ConvGraphSpec& sp) {
  OperationGraph g;
  const bool nhwc = sp.nhwc;
  const std::vector<int64_t> xd{sp.n, sp.c, sp.h, sp.w};
  const std::vector<int64_t> wd{sp.k, sp.c / sp.groups, sp.r, sp.s};
  const std::vector<int64_t> yd{sp.n, sp.k, sp.out_h, sp.out_w};
  const std::vector<int64_t> bd{1, sp.k, 1, 1};
  BackendDescriptor x = tensor(kUidX, xd, nhwc, sp.io_type, false);
  BackendDescriptor w = tensor(kUidW, wd, nhwc, sp.io_type, false);
  const bool fused = sp.bias || sp.act != ConvGraphSpec::Act::none || sp.residual;
  // Intermediates are virtual float32; the last operation writes y as stored.
  int64_t next_virtual = 100;
  auto out_tensor = [&](bool last) {
    return last ? tensor(kUidY, yd, nhwc, sp.io_type, false) : tensor(next_virtual++, yd, nhwc, CUDNN_DATA_FLOAT, true);
  };

  BackendDescriptor conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = 2;
  const int64_t dil[2] = {1, 1}, stride[2] = {sp.stride_h, sp.stride_w};
  const int64_t pre[2] = {sp.pad_top, sp.pad_left}, post[2] = {sp.pad_bottom, sp.pad_right};
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
  set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre);
  set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post);
  finalize(conv);

  std::vector<BackendDescriptor> ops;
  BackendDescriptor y = out_tensor(!fused);
  BackendDescriptor fprop = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
  set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  set(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  set(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  finalize(fprop);
  ops.push_back(std::move(fprop));

  const bool has_act = sp.act != ConvGraphSpec::Act::none;
  if (sp.bias) {
    BackendDescriptor b = tensor(kUidBias, bd, nhwc, sp.io_type, false);
    BackendDescriptor out = out_tensor(!has_act && !sp.residual);
    ops.push_back(pointwise(g, CUDNN_POINTWISE_ADD, y, &b, out));
    g.parts.push_back(std::move(y));
    g.parts.push_back(std::move(b));
    y = std::move(out);
  }
  if (has_act) {
    BackendDescriptor out = out_tensor(!sp.residual);
    ops.push_back(pointwise(g, CUDNN_POINTWISE_RELU_FWD, y, nullptr, out, 0.0f,
                            sp.act == ConvGraphSpec::Act::clip ? sp.clip_max : -1.0f));
    g.parts.push_back(std::move(y));
    y = std::move(out);
  }
  if (sp.residual) {
    BackendDescriptor r = tensor(kUidResidual, yd, nhwc, sp.io_type, false);
    BackendDescriptor out = out_tensor(true);
    ops.push_back(pointwise(g, CUDNN_POINTWISE_ADD, y, &r, out));
    g.parts.push_back(std::move(y));
    g.parts.push_back(std::move(r));
    y = std::move(out);
  }

  g.graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const BackendDescriptor& op : ops) raw.push_back(op.get());
  set(g.graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()),
      raw.data());
  set(g.graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  finalize(g.graph);
  g.parts.push_back(std::move(x));
  g.parts.push_back(std::move(w));
  g.parts.push_back(std::move(y));
  g.parts.push_back(std::move(conv));
  for (BackendDescriptor& op : ops) g.parts.push_back(std::move(op));
  return g;
}

namespace {

// Reads the engine, notes and knobs of a finalized configuration into `c`.
void describe_config(EngineChoice& c) {
  BackendDescriptor engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t count = 0;
  MNV2_CHECK_CUDNN(cudnnBackendGetAttribute(c.config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                            1, &count, &e));
  MNV2_CHECK_CUDNN(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &c.engine));
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  count = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) == CUDNN_STATUS_SUCCESS)
    c.notes.assign(notes, notes + std::clamp<int64_t>(count, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT));
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  count = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, behavior) == CUDNN_STATUS_SUCCESS)
    c.behavior.assign(behavior, behavior + std::clamp<int64_t>(count, 0, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT));
  std::vector<BackendDescriptor> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    knobs.push_back(make(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    raw.push_back(knobs.back().get());
  }
  count = 0;
  if (cudnnBackendGetAttribute(c.config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               CUDNN_KNOB_TYPE_COUNTS, &count, raw.data()) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < std::min<int64_t>(count, CUDNN_KNOB_TYPE_COUNTS); ++i) {
      cudnnBackendKnobType_t type{};
      int64_t value = 0, n = 0;
      if (cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) !=
              CUDNN_STATUS_SUCCESS ||
          cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value) !=
              CUDNN_STATUS_SUCCESS)
        continue;
      c.knobs.emplace_back(static_cast<int64_t>(type), value);
    }
  }
}

void add_heuristic(const OperationGraph& g, cudnnBackendHeurMode_t mode, const char* source,
                   std::vector<EngineChoice>& out) {
  BackendDescriptor heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendDescriptor_t graph = g.graph.get();
  if (cudnnBackendSetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &graph) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS)
    return;
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return;
  std::vector<BackendDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back().get());
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               raw.data()) != CUDNN_STATUS_SUCCESS)
    return;
  for (int64_t i = 0; i < std::min(got, count); ++i) {
    EngineChoice c;
    c.config = std::move(configs[static_cast<size_t>(i)]);
    c.source = source;
    try {
      describe_config(c);
    } catch (const Error&) {
      continue;
    }
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const EngineChoice& o) { return o.engine == c.engine && o.knobs == c.knobs; });
    if (!seen) out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<EngineChoice> engine_choices(const OperationGraph& graph) {
  std::vector<EngineChoice> out;
  add_heuristic(graph, CUDNN_HEUR_MODE_A, "heur_a", out);
  add_heuristic(graph, CUDNN_HEUR_MODE_FALLBACK, "fallback", out);
  return out;
}

EngineChoice rebuild_choice(const OperationGraph& graph, int64_t engine_index,
                            const std::vector<std::pair<int64_t, int64_t>>& knobs) {
  EngineChoice c;
  cudnnBackendDescriptor_t engine = nullptr, config = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS) return c;
  BackendDescriptor owned_engine(engine);
  cudnnBackendDescriptor_t g = graph.graph.get();
  if (cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &engine_index) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(engine) != CUDNN_STATUS_SUCCESS)
    return c;
  std::vector<BackendDescriptor> choices;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& [type, value] : knobs) {
    cudnnBackendDescriptor_t k = nullptr;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &k) != CUDNN_STATUS_SUCCESS) return c;
    choices.emplace_back(k);
    const auto t = static_cast<cudnnBackendKnobType_t>(type);
    if (cudnnBackendSetAttribute(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &t) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(k) != CUDNN_STATUS_SUCCESS)
      return c;
    raw.push_back(k);
  }
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &config) != CUDNN_STATUS_SUCCESS) return c;
  BackendDescriptor owned_config(config);
  if (cudnnBackendSetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine) !=
          CUDNN_STATUS_SUCCESS ||
      (!raw.empty() &&
       cudnnBackendSetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                static_cast<int64_t>(raw.size()), raw.data()) != CUDNN_STATUS_SUCCESS) ||
      cudnnBackendFinalize(config) != CUDNN_STATUS_SUCCESS)
    return c;
  c.config = std::move(owned_config);
  c.source = "cache";
  try {
    describe_config(c);
  } catch (const Error&) {
    c.config = BackendDescriptor();
  }
  c.engine = engine_index;
  c.knobs = knobs;
  return c;
}

const char* note_name(cudnnBackendNumericalNote_t note) {
  switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      return "tensor_core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      return "down_convert";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      return "reduced_precision";
    case CUDNN_NUMERICAL_NOTE_FFT:
      return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
      return "winograd";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP:
      return "strict_nan";
    default:
      return "?";
  }
}

std::string EngineChoice::describe() const {
  std::string t = "engine " + std::to_string(engine);
  std::string n;
  for (cudnnBackendNumericalNote_t note : notes) n += (n.empty() ? "" : ",") + std::string(note_name(note));
  for (cudnnBackendBehaviorNote_t b : behavior)
    if (b == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) n += (n.empty() ? "" : ",") + std::string("runtime_compiled");
  if (!n.empty()) t += " [" + n + "]";
  if (!knobs.empty()) {
    t += " knobs";
    for (size_t i = 0; i < knobs.size(); ++i)
      t += (i == 0 ? " " : ",") + std::to_string(knobs[i].first) + "=" + std::to_string(knobs[i].second);
  }
  return t;
}

std::string disallowed_reason(const EngineChoice& choice, bool strict_fp32) {
  for (cudnnBackendNumericalNote_t note : choice.notes) {
    switch (note) {
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
        return note_name(note);
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        if (strict_fp32) return note_name(note);
        break;
      default:
        break;
    }
  }
  return {};
}

ExecutionPlan make_plan(cudnnHandle_t handle, const EngineChoice& choice, std::string* why) {
  ExecutionPlan p;
  cudnnBackendDescriptor_t plan = nullptr;
  cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
  if (s != CUDNN_STATUS_SUCCESS) {
    if (why) *why = cudnnGetErrorString(s);
    return p;
  }
  BackendDescriptor owned(plan);
  cudnnBackendDescriptor_t config = choice.config.get();
  s = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &config);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(plan);
  int64_t n = 0;
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                 &p.workspace_bytes);
  if (s != CUDNN_STATUS_SUCCESS) {
    if (why) *why = gpu::StatusTraits<cudnnStatus_t>::describe(s);
    return ExecutionPlan{};
  }
  p.plan = std::move(owned);
  return p;
}

BackendDescriptor make_variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
                                    void* workspace) {
  BackendDescriptor pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
      pointers.data());
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  finalize(pack);
  return pack;
}

}  // namespace mnv2::cudnn_backend
