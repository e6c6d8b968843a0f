// The op harness's judge: the cpu-ref backend's output of every layer, a per-element error bound derived from the
// precision, the layer's reduction length and the element's magnitude, and the comparison of a backend's outputs
// against both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"

namespace mnv2::ops {

// The same network with every weight, bias and input made non-negative (|.|) and every clip widened to
// [0, +inf): run through cpu-ref on |input|, each output element is the sum of the absolute values of the terms
// behind it (its "magnitude"), the scale every rounding error of a sum is proportional to.
Model magnitude_model(const Model& model);
Tensor abs_of(const Tensor& t);

// Per layer: an output element may be off by factor * magnitude + tiny.
struct LayerBound {
  double factor = 0;
  double tiny = 0;  // absolute: half's subnormal spacing, carried through later layers
};

// The bound of each layer of `model` at `precision` against the float32 reference, following the layers' data
// flow (an input's error reaches the output scaled like its magnitude): a Conv2d or Linear of K terms adds
// dot_error_factor(u, K) for the backend (u = 0 in fp32, kU16 for TF32 and half operands) and
// dot_error_factor(0, K) for the reference; a pool of P pixels likewise with exact operands; an add two float32
// roundings; a clip nothing; in fp16 every stored value (the input too) one half rounding (kU16) more.
std::vector<LayerBound> layer_bounds(const Model& model, Precision precision, int batch, int height, int width);

// The reference's outputs of every layer (cpu-ref, fp32) and their magnitudes, for one input.
struct Reference {
  std::vector<Tensor> value;
  std::vector<Tensor> magnitude;
  Tensor logits;
  Tensor logits_magnitude;
  std::vector<ExecStep> steps;  // of the reference's net
};
Reference run_reference(const Model& model, const Tensor& input, int threads = 0);

// The worst element of one comparison.
struct Verdict {
  bool ok = true;
  std::string problem;   // when not ok and not an element off its bound (shape, missing output)
  int layer = -1;        // the layer whose output failed (model.layers.size(): the logits)
  int64_t outside = 0;   // elements past their bound in that layer
  int64_t compared = 0;  // elements compared over every layer
  int64_t index = -1;    // flat NCHW index of the worst element (err / bound) of the failing layer
  Shape shape;           // that layer's output shape
  double got = 0, expected = 0, bound = 0, magnitude = 0;
  double worst_ratio = 0;     // the largest err / bound over every compared element (< 1: within)
  std::string where() const;  // "[n 0, c 5, y 3, x 8]"
};

// Compares the logits and every layer output the backend materialised (layer_outputs(); a layer it leaves
// empty must lie inside a fused step of `steps` that ends after it).
Verdict check_outputs(const Model& model, const Reference& ref, const std::vector<LayerBound>& bounds,
                      const Tensor& logits, const std::vector<Tensor>& outputs, const std::vector<ExecStep>& steps);

}  // namespace mnv2::ops
