// cuDNN 9's graph (backend descriptor) API, used directly from cudnn.h: one operation graph per fused
// convolution group (conv fprop -> + bias -> clipped ReLU -> + residual, intermediates virtual), the engine
// configurations cuDNN's heuristics offer for it, execution plans and variant packs. No cudnn-frontend.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpu/check.h"
#include "gpu/runtime.h"

namespace mnv2::cudnn_backend {

MNV2_GPU_OWNED_TRAITS(BackendDescTraits, cudnnBackendDescriptor_t, cudnnBackendDestroyDescriptor);
using BackendDescriptor = gpu::Owned<BackendDescTraits>;

// The tensors' unique ids in a group's graph and variant pack.
enum GraphUid : int64_t { kUidX = 1, kUidW = 2, kUidBias = 3, kUidResidual = 4, kUidY = 5 };

// One fused convolution group as a graph problem. Dimensions are NCHW-ordered (cuDNN's convention); `nhwc`
// gives every real tensor (x, w, bias, residual, y) channels-last strides.
struct ConvGraphSpec {
  cudnnDataType_t io_type = CUDNN_DATA_FLOAT;  // x, w, bias, residual, y as stored (FLOAT or HALF)
  bool nhwc = false;
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, r = 1, s = 1;         // filter [k, c / groups, r, s]: cuDNN infers the groups from c
  int64_t groups = 1;                  // for the key and checks only
  int64_t out_h = 1, out_w = 1;        // output
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;  // pre and post paddings
  int64_t stride_h = 1, stride_w = 1;
  bool bias = false;  // + bias [1, k, 1, 1]
  enum class Act { none, relu, clip } act = Act::none;
  float clip_max = 6.0f;  // Act::clip: min(max(x, 0), clip_max)
  bool residual = false;  // + residual (shape of y)

  std::string ops() const;  // "conv+bias+relu6+add"
  std::string key() const;  // every field, for the plan cache
};

// An operation graph and every descriptor it refers to (kept alive together).
struct OperationGraph {
  std::vector<BackendDescriptor> parts;  // tensors, op descriptors, operations
  BackendDescriptor graph;
};

// Builds and finalizes the graph; throws Error (the cuDNN status and its message) where cuDNN refuses it.
OperationGraph build_conv_graph(cudnnHandle_t handle, const ConvGraphSpec& spec);

// One engine configuration and what it is.
struct EngineChoice {
  BackendDescriptor config;
  int64_t engine = -1;                             // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  std::vector<cudnnBackendNumericalNote_t> notes;
  std::vector<cudnnBackendBehaviorNote_t> behavior;
  std::string source;            // "heur_a", "fallback", "cache"
  std::string describe() const;  // "engine 12 [tensor_core] knobs 1=3,2=0"
};

// The configurations heuristics mode A and the fallback list offer, deduplicated, in that order. A mode that
// fails adds none.
std::vector<EngineChoice> engine_choices(const OperationGraph& graph);
// Rebuilds one configuration from its engine index and knob choices (the plan cache); nullopt-like empty
// config where cuDNN no longer accepts it.
EngineChoice rebuild_choice(const OperationGraph& graph, int64_t engine,
                            const std::vector<std::pair<int64_t, int64_t>>& knobs);

// Strict float32: no tensor cores (TF32), no down-conversion, no FFT or Winograd, deterministic. The reduced
// modes exclude FFT, Winograd and non-deterministic engines only. Returns the reason when not allowed.
std::string disallowed_reason(const EngineChoice& choice, bool strict_fp32);

struct ExecutionPlan {
  BackendDescriptor plan;
  int64_t workspace_bytes = 0;
  explicit operator bool() const { return static_cast<bool>(plan); }
};
// Finalizes a plan for `choice`; empty where cuDNN cannot (the reason in *why).
ExecutionPlan make_plan(cudnnHandle_t handle, const EngineChoice& choice, std::string* why);

// A finalized variant pack: uids -> device pointers, and the workspace.
BackendDescriptor make_variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
                                    void* workspace);

const char* note_name(cudnnBackendNumericalNote_t note);

}  // namespace mnv2::cudnn_backend
