// The cudnn backend's lowering: a planned layer (cudnn_plan.h) becomes its device operands, its cuDNN
// descriptors and the legacy call that runs it; a convolution group becomes the graph-API problem autotuning
// (autotune.h) finds an engine for; a step runs its operation graph and then its legacy calls. The precision's
// storage type and math (Arithmetic) are stated here once.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cudnn/conv_algorithm.h"
#include "backends/cudnn/cudnn_plan.h"
#include "backends/cudnn/descriptors.h"
#include "backends/cudnn/graph_api.h"
#include "mnv2/backend.h"
#include "mnv2/model.h"

namespace mnv2::cudnn_backend {

// How a precision mode stores tensors and which math cuDNN and cuBLAS may use.
struct Arithmetic {
  Precision precision = Precision::fp32;
  cudnnDataType_t data = CUDNN_DATA_FLOAT;  // storage of weights and activations on the device
  cudnnMathType_t conv_math = CUDNN_FMA_MATH;
  cublasMath_t blas_math = CUBLAS_PEDANTIC_MATH;
};
Arithmetic arithmetic_for(Precision p);

// `value` as cuDNN's int, or Error naming `what`.
int to_int(int64_t value, const std::string& what);
// A packed 4-D descriptor of `s` in `type`, NCHW or NHWC.
TensorDescriptor packed_descriptor(const Shape& s, cudnnDataType_t type, bool nhwc = false);
// A convolution's filters [K, C/g, R, S] as channels-last [K, R, S, C/g] (the same order for 1x1 and depthwise).
std::vector<float> channels_last_filter(const Layer& layer);
// A Linear layer's weights [out, C*H*W] (its input flattened in NCHW order, as the model gives them) for an input
// map `in` stored channels-last: [out, H*W*C], the order cuBLAS reads the NHWC map in (the same for a 1x1 map).
std::vector<float> channels_last_linear(const Layer& layer, const Shape& in);

// What every call of a prepared network runs with.
struct CudnnContext {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaStream_t stream = nullptr;
  Arithmetic arith;
  bool nhwc = false;
  size_t element_bytes = sizeof(float);  // of the stored weights and activations
  int batch = 1;
  void* workspace = nullptr;  // shared by every convolution: the largest any chosen algorithm or plan needs

  TensorDescriptor descriptor(const Shape& shape) const { return packed_descriptor(shape, arith.data, nhwc); }
};

// One topology layer lowered: its device operands (float or half, as the precision stores them), descriptors and
// the legacy call's choices.
struct LayerOp {
  const LayerPlan* plan = nullptr;
  std::string label;  // "layer 5 'block1.dw' (Conv2d)", for errors

  const void* x = nullptr;
  const void* x2 = nullptr;  // ResidualAdd's second input
  void* y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* padded = nullptr;  // Conv2d with pad_copy: the zero-bordered buffer the convolution reads
  void* padded_interior = nullptr;

  TensorDescriptor x_desc;  // Conv2d: the padded map when pad_copy
  TensorDescriptor y_desc;
  TensorDescriptor bias_desc;  // [1, channels, 1, 1], broadcast over batch and map
  FilterDescriptor w_desc;
  ConvolutionDescriptor conv_desc;
  ConvAlgorithmChoice algo;
  ActivationDescriptor activation;        // ReLU6 / ReLU
  PoolingDescriptor pooling;              // GlobalAveragePool
  OpTensorDescriptor add;                 // ResidualAdd
  int in_features = 0, out_features = 0;  // Linear

  bool needs_algo = true;    // Conv2d run by the legacy call (every one in the naive variant)
  bool materialised = true;  // false: fused away inside an operation graph (a virtual tensor)
};

// Descriptors for `op`'s layer (its operands already set), checked against the model's shapes.
void configure(LayerOp& op, const Layer& layer, const CudnnPlan& plan, const CudnnContext& ctx);
// The legacy call(s) of one layer on ctx.stream.
void execute(const LayerOp& op, const CudnnContext& ctx);
// What the legacy call runs, for reports ("IMPLICIT_PRECOMP_GEMM ws=0B +bias", "CLIPPED_RELU(6)").
std::string variant_name(const LayerOp& op, const Layer& layer, Precision precision);
// The legacy algorithm search's cache key: device, precision, every descriptor field.
std::string problem_key(const LayerOp& op, int device, Precision precision);

// A convolution group as one cuDNN operation graph with its chosen plan.
struct FusedGraph {
  ConvGraphSpec spec;
  OperationGraph graph;
  EngineChoice choice;
  ExecutionPlan plan;
  std::vector<int64_t> uids;
  std::vector<void*> pointers;  // in uids' order
  BackendDescriptor pack;       // made once the workspace exists
  int last_layer = 0;           // the layer whose buffer the graph writes
  std::string how;              // "tuned 0.0123 ms, best of 5" / "cached"
};

// One execution step: a fused group (an operation graph, then any layer left to a legacy call) or, in the naive
// variant and for the layers outside groups, one layer's legacy call.
struct Unit {
  LayerGroup group;
  std::unique_ptr<FusedGraph> fused;  // null: legacy calls only
  bool bias_after = false;            // the graph has no bias: cudnnAddTensor on its output
  std::vector<int> legacy;            // layers run by their legacy call, in order
  std::string variant;
};

// The graph problem of `group` with the bias, activation and add it takes (where the group has them).
ConvGraphSpec graph_spec(const LayerGroup& group, const CudnnPlan& plan, const Model& model, cudnnDataType_t io_type,
                         bool bias, bool act, bool add);
// The graph's tensors: uids and device pointers from the group's ops, and the layer it writes.
void bind_graph(FusedGraph& f, const LayerGroup& group, const std::vector<LayerOp>& ops);
// Runs one step: its graph (and the bias after it), then its legacy calls.
void execute_unit(const Unit& u, const std::vector<LayerOp>& ops, const CudnnContext& ctx);

}  // namespace mnv2::cudnn_backend
