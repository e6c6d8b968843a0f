// The cudnn backend's engine choice and autotuning (autotune.h).
#include "backends/cudnn/autotune.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "backends/layer_checks.h"  // format_number
#include "gpu/check.h"
#include "mnv2/error.h"

namespace mnv2::cudnn_backend {
namespace {

// Autotuning: at most this many candidates are timed per problem, and a prepare() spends at most this long timing
// (candidates' plan finalization, which compiles runtime-fusion kernels, included); past it, each remaining problem
// takes the first candidate that finalizes, in the heuristics' order.
constexpr int kMaxTuneCandidates = 8;
constexpr double kTuneBudgetSeconds = 10.0;
constexpr int kTuneRepeats = 3;
// Tuning measures candidates with at most this much workspace.
constexpr size_t kMaxTuneWorkspace = size_t{256} << 20;
// Find measures with at most this much workspace (bytes), and at most half the free device memory.
constexpr size_t kMaxFindWorkspace = size_t{1} << 30;

}  // namespace

std::string cudnn_version_string(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

Autotuner::Autotuner(const CudnnContext& ctx, const CudnnPlan& plan, const Model& model, std::vector<LayerOp>& ops,
                     const GpuProperties& gpu, gpu::DeviceMemory& memory)
    : ctx_(ctx),
      plan_(plan),
      model_(model),
      ops_(ops),
      gpu_(gpu.name + " cc" + std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor)),
      memory_(memory) {}

std::string Autotuner::cache_key(const ConvGraphSpec& spec) const {
  return "cudnn " + cudnn_version_string(cudnnGetVersion()) + " | " + gpu_ + " | " + to_string(ctx_.arith.precision) +
         " | " + spec.key();
}

// Mean time of `repeats` calls of `work` on the stream, in ms. <0: it failed.
float Autotuner::time_on_stream(const std::function<bool()>& work, int repeats) {
  MNV2_CHECK_CUDA(cudaEventRecord(tune_start_.get(), ctx_.stream));
  for (int r = 0; r < repeats; ++r)
    if (!work()) return -1.0f;
  MNV2_CHECK_CUDA(cudaEventRecord(tune_end_.get(), ctx_.stream));
  MNV2_CHECK_CUDA(cudaEventSynchronize(tune_end_.get()));
  float ms = 0.0f;
  MNV2_CHECK_CUDA(cudaEventElapsedTime(&ms, tune_start_.get(), tune_end_.get()));
  return ms / static_cast<float>(repeats);
}

// Time one plan on the real buffers: one untimed execution, one timed; where that is not more than 3 times the best
// so far (`best_ms`, <0: none yet), the mean of kTuneRepeats more. <0: it failed.
float Autotuner::time_plan(const ExecutionPlan& plan, const BackendDescriptor& pack, float best_ms) {
  auto once = [&] { return cudnnBackendExecute(ctx_.cudnn, plan.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS; };
  if (!once()) return -1.0f;
  const float first = time_on_stream(once, 1);
  if (first < 0 || (best_ms >= 0 && first > 3 * best_ms)) return first;
  return time_on_stream(once, kTuneRepeats);
}

// The plan for one graph: the cached choice where it still finalizes and is allowed, else the fastest allowed
// candidate (or, past the tuning budget, the first that finalizes). Null, with *why, where none can run.
std::unique_ptr<FusedGraph> Autotuner::choose_plan(const LayerGroup& group, const ConvGraphSpec& spec, void* tune_ws,
                                                   size_t tune_bytes, std::string* why) {
  const bool strict = ctx_.arith.precision == Precision::fp32;
  auto f = std::make_unique<FusedGraph>();
  f->spec = spec;
  try {
    f->graph = build_conv_graph(ctx_.cudnn, spec);
  } catch (const Error& e) {
    *why = std::string("cuDNN refuses the graph: ") + e.what();
    return nullptr;
  }
  bind_graph(*f, group, ops_);

  const std::string key = cache_key(spec);
  std::optional<CachedPlan> cached = find_process_plan(key);
  const char* cached_how = "cached (this process)";
  if (!cached) {
    if (const CachedPlan* c = plan_cache_.find(key)) cached = *c;
    cached_how = "cached (plan cache file)";
  }
  std::string retune;
  if (cached) {
    f->choice = rebuild_choice(f->graph, cached->engine, cached->knobs);
    std::string plan_why;
    if (f->choice.config && disallowed_reason(f->choice, strict).empty())
      f->plan = make_plan(ctx_.cudnn, f->choice, &plan_why);
    if (f->plan && static_cast<size_t>(f->plan.workspace_bytes) <= tune_bytes) {
      f->how = cached_how;
      return f;
    }
    retune = ", re-tuned: the cached engine " + std::to_string(cached->engine) + " no longer finalizes";
    f->plan = ExecutionPlan{};
  }

  std::vector<EngineChoice> offered = engine_choices(f->graph);
  std::string excluded;
  std::vector<EngineChoice> allowed;
  for (EngineChoice& c : offered) {
    const std::string reason = disallowed_reason(c, strict);
    if (reason.empty())
      allowed.push_back(std::move(c));
    else
      excluded += (excluded.empty() ? "" : ", ") + std::to_string(c.engine) + " (" + reason + ")";
  }
  if (allowed.empty()) {
    *why = "no allowed engine: " + std::to_string(offered.size()) + " offered" +
           (excluded.empty() ? std::string() : ", excluded " + excluded);
    return nullptr;
  }
  const auto spent = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - tune_begin_).count() > kTuneBudgetSeconds;
  };
  float best_ms = -1.0f;
  int timed = 0;
  std::string failures;
  for (size_t i = 0; i < allowed.size() && static_cast<int>(i) < kMaxTuneCandidates; ++i) {
    std::string plan_why;
    ExecutionPlan plan = make_plan(ctx_.cudnn, allowed[i], &plan_why);
    if (!plan || static_cast<size_t>(plan.workspace_bytes) > tune_bytes) {
      failures += (failures.empty() ? "" : ", ") + std::to_string(allowed[i].engine);
      continue;
    }
    if (spent() && !f->plan) {  // budget spent: the first that finalizes
      f->choice = std::move(allowed[i]);
      f->plan = std::move(plan);
      f->how = "heuristic order (tuning budget of " + format_number(kTuneBudgetSeconds) + " s spent)";
      break;
    }
    const BackendDescriptor pack = make_variant_pack(f->uids, f->pointers, tune_ws);
    const float ms = time_plan(plan, pack, best_ms);
    if (ms < 0) continue;
    ++timed;
    if (best_ms < 0 || ms < best_ms) {
      best_ms = ms;
      f->choice = std::move(allowed[i]);
      f->plan = std::move(plan);
    }
    if (spent()) break;
  }
  if (!f->plan) {
    *why = "none of the " + std::to_string(allowed.size()) + " allowed engines finalizes or runs" +
           (failures.empty() ? std::string() : " (" + failures + ")");
    return nullptr;
  }
  if (best_ms >= 0) {
    char text[96];
    std::snprintf(text, sizeof text, "tuned %.4f ms, best of %d", static_cast<double>(best_ms), timed);
    f->how = text;
  }
  f->how += retune;
  if (best_ms >= 0) {  // only measured choices are kept
    const CachedPlan chosen{f->choice.engine, f->choice.knobs, f->plan.workspace_bytes, best_ms};
    put_process_plan(key, chosen);
    plan_cache_.put(key, chosen);
    plan_cache_dirty_ = true;
  }
  return f;
}

size_t Autotuner::tune(std::vector<Unit>& units) {
  size_t free_bytes = 0, total_bytes = 0;
  MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t tune_bytes = std::min(kMaxTuneWorkspace, free_bytes / 4);
  const gpu::DeviceBuffer tune_ws = memory_.allocate_scratch(tune_bytes, "the tuning workspace");
  const std::string path = plan_cache_file();
  plan_cache_ = PlanCache::load(path, &cache_warning_);
  if (!cache_warning_.empty()) std::fprintf(stderr, "mnv2: warning: %s\n", cache_warning_.c_str());
  tune_start_ = gpu::make_event();
  tune_end_ = gpu::make_event();
  tune_begin_ = std::chrono::steady_clock::now();
  const Precision precision = ctx_.arith.precision;
  size_t need = 0;
  for (Unit& u : units) {
    const LayerGroup& g = u.group;
    if (g.conv < 0) continue;
    struct Level {
      bool bias, act, add;
    };
    const Level levels[] = {{true, true, true}, {true, true, false}, {true, false, false}, {false, false, false}};
    // Every fusion depth cuDNN has an allowed engine for is timed as the whole step (the graph, then what is left
    // to legacy calls): the deepest fusion is not always the fastest (a depthwise conv + bias + ReLU6 graph may
    // only have cuDNN's generic engine 0, twenty times slower than the bare convolution's best). The depth chosen
    // is cached too (as the "engine" of a "depth |" entry), so a second prepare runs the very same kernels.
    auto spec_of = [&](const Level& l) { return graph_spec(g, plan_, model_, ctx_.arith.data, l.bias, l.act, l.add); };
    const std::string depth_key = "depth | " + cache_key(spec_of(levels[0]));
    std::optional<CachedPlan> depth = find_process_plan(depth_key);
    if (!depth)
      if (const CachedPlan* c = plan_cache_.find(depth_key)) depth = *c;
    std::string fell_back, levels_timed;
    std::string last_spec;
    float best_unit_ms = -1.0f;
    int best_level = -1;
    for (int li = 0; li < 4; ++li) {
      if (depth && depth->engine != li && depth->engine >= 0 && depth->engine < 4) continue;
      const ConvGraphSpec spec = spec_of(levels[li]);
      if (spec.ops() == last_spec) continue;  // the group has no such op: the same graph
      last_spec = spec.ops();
      std::string why;
      std::unique_ptr<FusedGraph> f = choose_plan(g, spec, tune_ws.get(), tune_bytes, &why);
      if (!f) {
        fell_back += (fell_back.empty() ? "" : "; ") + spec.ops() + ": " + why;
        continue;
      }
      Unit trial;
      trial.group = g;
      trial.bias_after = plan_.layers[static_cast<size_t>(g.conv)].has_bias && !f->spec.bias;
      for (int layer : g.layers)
        if (layer > f->last_layer) trial.legacy.push_back(layer);
      f->pack = make_variant_pack(f->uids, f->pointers, tune_ws.get());
      trial.fused = std::move(f);
      const auto run_unit = [&] {
        execute_unit(trial, ops_, ctx_);
        return true;
      };
      run_unit();
      const float ms = time_on_stream(run_unit, kTuneRepeats);
      char t[64];
      std::snprintf(t, sizeof t, " %.4f ms", static_cast<double>(ms));
      levels_timed += (levels_timed.empty() ? "" : ", ") + spec.ops() + t;
      if (best_unit_ms < 0 || (ms >= 0 && ms < best_unit_ms)) {
        best_unit_ms = ms;
        best_level = li;
        u.fused = std::move(trial.fused);
        u.bias_after = trial.bias_after;
        u.legacy = trial.legacy;
      }
    }
    if (u.fused && !depth && best_level >= 0) {
      const CachedPlan chosen{best_level, {}, 0, best_unit_ms};
      put_process_plan(depth_key, chosen);
      plan_cache_.put(depth_key, chosen);
      plan_cache_dirty_ = true;
    }
    std::string variant;
    if (u.fused) {
      const FusedGraph& f = *u.fused;
      need = std::max(need, static_cast<size_t>(f.plan.workspace_bytes));
      for (int layer : g.layers)
        if (layer < f.last_layer) ops_[static_cast<size_t>(layer)].materialised = false;
      ops_[static_cast<size_t>(g.conv)].needs_algo = false;
      variant = "graph " + f.spec.ops() + " " + to_string(precision) + ": " + f.choice.describe() + ", " +
                (plan_.nhwc ? "NHWC" : "NCHW") + ", ws=" + std::to_string(f.plan.workspace_bytes) + "B, " + f.how;
      if (u.bias_after) variant += "; bias: cudnnAddTensor";
      for (int layer : u.legacy)
        variant +=
            "; " + std::string(to_string(plan_.layers[static_cast<size_t>(layer)].kind)) + " " + std::to_string(layer) +
            ": " +
            variant_name(ops_[static_cast<size_t>(layer)], model_.layers[static_cast<size_t>(layer)], precision) +
            " separate";
    } else {
      u.legacy = g.layers;
      variant = std::string("legacy calls ") + to_string(precision);
    }
    if (!levels_timed.empty() && levels_timed.find(',') != std::string::npos)
      variant += " (fusion depth by step time: " + levels_timed + ")";
    else if (depth)
      variant += " (fusion depth cached)";
    if (!fell_back.empty()) variant += " (no graph for " + fell_back + ")";
    u.variant = variant;
  }
  if (plan_cache_dirty_ && !path.empty()) {
    try {
      plan_cache_.save(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mnv2: warning: the cudnn plan cache could not be written: %s\n", e.what());
    }
  }
  MNV2_CHECK_CUDA(cudaStreamSynchronize(ctx_.stream));
  return need;
}

size_t choose_conv_algorithms(std::vector<LayerOp>& ops, const CudnnContext& ctx, int device, size_t fused_workspace,
                              const gpu::DeviceMemory& memory) {
  auto legacy_conv = [](const LayerOp& op) { return op.plan->kind == LayerKind::Conv2d && op.needs_algo; };
  std::vector<ConvProblem> problems(ops.size());
  size_t find_bytes = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const LayerOp& op = ops[i];
    if (!legacy_conv(op)) continue;
    ConvProblem& p = problems[i];
    p.handle = ctx.cudnn;
    p.x_desc = op.x_desc.get();
    p.x = op.plan->pad_copy ? op.padded : op.x;
    p.w_desc = op.w_desc.get();
    p.w = op.weight;
    p.conv_desc = op.conv_desc.get();
    p.y_desc = op.y_desc.get();
    p.y = op.y;
    p.key = problem_key(op, device, ctx.arith.precision);
    p.tensor_ops = ctx.arith.conv_math == CUDNN_TENSOR_OP_MATH;
    find_bytes = std::max(find_bytes, max_allowed_workspace(p));
  }
  size_t free_bytes = 0, total_bytes = 0;
  MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  find_bytes = std::min({find_bytes, kMaxFindWorkspace, free_bytes / 2});

  size_t workspace_bytes = fused_workspace;
  if (find_bytes > 0 || std::any_of(ops.begin(), ops.end(), legacy_conv)) {
    const gpu::DeviceBuffer find_workspace = memory.allocate_scratch(find_bytes, "the algorithm search's workspace");
    for (size_t i = 0; i < ops.size(); ++i) {
      LayerOp& op = ops[i];
      if (!legacy_conv(op)) continue;
      try {
        op.algo = choose_algorithm(problems[i], find_workspace.get(), find_bytes);
      } catch (const Error& e) {
        throw Error("cudnn: " + op.label + ": " + e.what());
      }
      workspace_bytes = std::max(workspace_bytes, op.algo.workspace_bytes);
    }
  }
  return workspace_bytes;
}

}  // namespace mnv2::cudnn_backend
