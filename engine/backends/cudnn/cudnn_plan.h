// The cudnn backend's plan: which layout and storage type the network runs in, how each layer's asymmetric pads
// are met, where every buffer sits in the two arenas, and which layers form the convolution groups the fused
// variant tries as one cuDNN operation graph, as plain data (no CUDA, no cuDNN). plan_cudnn_network() makes it
// from the model and the prepare options; the lowering (cudnn_lowering.h) turns it into descriptors and calls,
// autotuning (autotune.h) decides how deep each group fuses. Plain C++ in the core library: tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/model.h"

namespace mnv2::cudnn_backend {

// Every sub-buffer starts on this many bytes, cudaMalloc's own alignment, so cuDNN's vectorised kernels see the
// same alignment as with separate allocations.
inline constexpr size_t kArenaAlignment = 256;

// One topology layer as the backend runs it.
struct LayerPlan {
  LayerKind kind = LayerKind::Conv2d;
  int layer = 0;
  Shape in_shape;  // the first input's
  Shape out_shape;
  int in_layer = kNetworkInput;   // producing layer of the first input
  int in_layer2 = kNetworkInput;  // ResidualAdd's second input
  bool has_bias = false;
  // Conv2d. cuDNN's legacy convolution pads symmetrically: it pads min(top, bottom) rows and min(left, right)
  // columns itself, and the rest (extra_*) is a zero border of a separate buffer the input is copied into.
  int sym_pad_h = 0, sym_pad_w = 0;
  int extra_top = 0, extra_left = 0, extra_bottom = 0, extra_right = 0;
  bool pad_copy = false;
  Shape padded_shape;
  // Byte offsets: the output and the padded copy in the activation arena, weights and bias in the weight arena.
  size_t out_offset = 0, pad_offset = 0, weight_offset = 0, bias_offset = 0;
};

// An execution step before tuning: a convolution with the ReLU6/ReLU that reads it and the residual add that
// reads that (the fused variant's groups; each intermediate with no other reader), or one layer.
struct LayerGroup {
  int conv = -1, act = -1, add = -1;  // a convolution group's layers (-1: none)
  std::vector<int> layers;            // topology layers covered, ascending
};

struct CudnnPlan {
  PrepareConfig config;
  bool fused = true;                     // the fused variant (operation graphs); else one legacy call per layer
  bool nhwc = false;                     // channels-last activations and filters (fused variant only)
  bool half = false;                     // weights and activations stored as half (fp16)
  size_t element_bytes = sizeof(float);  // of the stored weights and activations
  Shape input_shape;
  std::vector<LayerPlan> layers;
  std::vector<LayerGroup> groups;  // the steps, in order: every layer in exactly one
  // The two arenas (one cudaMalloc each): every weight and bias; the network input, every layer output (each its
  // own, so keep_layer_outputs can download all of them after a run), the padded copies, and where the host's
  // float32 NCHW is converted (converted()): the input's float32 staging and one layer output's readback.
  size_t weight_bytes = 0, activation_bytes = 0;
  size_t input_offset = 0, staging_offset = 0, readback_offset = 0;
  int64_t largest_weight = 0;  // elements: the fp16 weights' float32 staging buffer

  // Whether the float32 NCHW host side goes through a conversion on the device (half storage or NHWC).
  bool converted() const { return half || nhwc; }
};

// Plans the network; throws Error naming a layer that reads one not before it, or a malformed model.
CudnnPlan plan_cudnn_network(const Model& model, const PrepareConfig& config);

}  // namespace mnv2::cudnn_backend
