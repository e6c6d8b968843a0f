// The one definition of a layer's floating-point operations, which every GFLOP/s of the project uses: the
// report's and CSV's gflop_s, the app's tables and the roofline.
#pragma once

#include "mnv2/model.h"

namespace mnv2 {

// FLOPs one layer does for the whole batch: 2 per multiply-accumulate for Conv2d and Linear; 2 per output
// element for ReLU6 and ReLU (a max and a min); 1 per add for ResidualAdd and GlobalAveragePool (their `macs`
// count adds). A step's GFLOP/s is the sum over its layers divided by its median time.
double layer_flops(const Layer& layer, const LayerStats& stats);

// Bytes a step covering `layers` (ascending) must move: its layers' weights, each input it reads from outside
// itself once, and its last layer's output. A fused step's inner tensors never reach memory, so summing each
// layer's own traffic would overstate the step's bytes (and place it above the roofline); a fused
// inverted-residual block reads its input once, for the expansion and the residual. Activations and weights count
// `storage_bytes` per element (4: float32, as analyse() counts them; 2 for fp16 storage), the network input 4
// always (every backend reads it as float32 NCHW). For a single float32 layer: its LayerStats::bytes.
double step_bytes(const std::vector<Layer>& topology, const std::vector<LayerStats>& stats,
                  const std::vector<int>& layers, double storage_bytes = 4.0);

}  // namespace mnv2
