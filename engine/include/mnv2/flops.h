// The one definition of a layer's floating-point operations, which every GFLOP/s of the project uses: the
// report's and CSV's gflop_s, the app's tables and the roofline.
#pragma once

#include "mnv2/model.h"

namespace mnv2 {

// FLOPs one layer does for the whole batch: 2 per multiply-accumulate for Conv2d and Linear; 2 per output
// element for ReLU6 and ReLU (a max and a min); 1 per add for ResidualAdd and GlobalAveragePool (their `macs`
// count adds). A step's GFLOP/s is the sum over its layers divided by its median time.
double layer_flops(const Layer& layer, const LayerStats& stats);

}  // namespace mnv2
