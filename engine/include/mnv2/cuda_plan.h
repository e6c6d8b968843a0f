// The cuda backend's plan: which topology layers each execution step covers, which kernel runs it, in which
// precision and with which tile or launch shape, as plain data (no CUDA types). plan_cuda_network() makes it
// from the model, the prepare options and a GPU's properties, without a GPU: the backend lowers it into
// launches, the CLI can print it (describe) and the unit tests check it for GPUs this machine does not have.
#pragma once

#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/gpu_properties.h"  // GpuProperties, tf32_refusal
#include "mnv2/model.h"

namespace mnv2 {

// The kernel family a step runs.
enum class CudaKernel {
  direct_conv,       // direct convolution (the stem; any convolution the others do not take)
  depthwise_conv,    // depthwise 3x3, NHWC
  pointwise_gemm,    // 1x1 convolution as the FFMA GEMM (fp32)
  pointwise_tc,      // 1x1 convolution as the tensor-core GEMM (tf32, fp16)
  expand_depthwise,  // expansion 1x1 + depthwise 3x3 in one kernel (fusion expand_dw, fp32)
  fused_block,       // a whole inverted-residual block in one kernel: expansion 1x1, depthwise 3x3, projection 1x1
                     // (+ residual) (fusion block, fp16)
  fused_stem,        // the stem conv 3x3 + the first block (depthwise 3x3, projection 1x1) in one kernel (fusion
               // block, fp16 and fp32): FFMA; in fp16 with compute_80 code the stem and projection on tensor cores
  im2col_gemm,  // the baseline's convolution: im2col (unless 1x1) + the FFMA GEMM, NCHW
  clip,         // a separate clip pass (ReLU6, ReLU)
  add,          // a separate residual add
  avg_pool,     // global average pool
  linear_gemm,  // Linear as the FFMA GEMM
  linear_tc,    // Linear as the tensor-core GEMM
};
const char* to_string(CudaKernel k);

// The launch shape the planner chose (the fields the step's kernel uses; the rest keep their defaults).
struct CudaLaunchChoice {
  std::string tile;               // GEMM tile ("128x64", "32x32k32"); expand_depthwise: the spatial tile ("8x8")
  int splits = 1;                 // GEMM split-K pieces
  bool splitk_in_kernel = false;  // split GEMMs: the last block of each tile adds the pieces (no reduction kernel)
  bool splitk_cluster = false;    // split tensor-core GEMMs: each tile's splits add their pieces as one cluster
  bool vec = false;               // 16-byte accesses (GEMMs)
  int vec_width = 1;              // depthwise: channels per thread
  int cols = 1;                   // depthwise: output columns per thread
  int stride = 0;                 // depthwise: the compile-time stride (1, 2; 0 any)
  int co = 1;                     // direct: output channels per thread
  bool taps27 = false;            // direct: the unrolled 3x3x3 stem
  int tile_h = 0, tile_w = 0;     // expand_depthwise, fused_block, fused_stem: output pixels per block
  int items = 0;                  // fused_block (fp16, tf32): projection items (16 pixels x 32 channels) per warp
  int block_splits = 1;           // fused_block (fp16): CTAs each tile's expanded channels are split over
  int px = 0, nc = 0;             // fused_block (fp32): the projection's pixels and channel quads per thread
  int images_per_launch = 0;      // im2col_gemm: images unfolded per launch (0: the whole batch)
};

struct CudaStep {
  CudaKernel kernel = CudaKernel::direct_conv;
  std::vector<int> layers;        // topology layers covered, ascending
  std::string name;               // "Conv2d 14 + ResidualAdd 15"
  std::string variant;            // what reports show: "fast: gemm 128x64 vec4 +bias +residual"
  bool half = false;              // activations stored as half (fp16); else float32
  bool tensor_cores = false;      // TF32 or half tensor-core GEMM
  int clip_layer = -1;            // the clip fused into the epilogue (the convolution's; the expansion's for
                                  // expand_depthwise and fused_block), or -1
  int dw_clip_layer = -1;         // expand_depthwise, fused_block: the depthwise part's clip, or -1
  int residual = -1;              // layer whose output the epilogue adds, or -1 (fused_block: the block's input,
                                  // kNetworkInput never)
  int output_layer = -1;          // the layer whose value the step materialises (the last covered)
  bool nhwc_output = false;       // storage order of the output
  bool half_output = false;       // output element type half (else float32)
  int padded_features = 0;        // Linear: output features rounded up for 16-byte accesses (0: not a Linear)
  bool permute_weights = false;   // Linear: weights permuted to read an NHWC map
  bool reads_input_copy = false;  // reads the network input's NHWC (half in fp16) copy, not the NCHW input
  CudaLaunchChoice launch;
  // Kernel launches of the step in one run: its kernel, a separate split-K reduction, the input transpose of
  // the first step, the baseline's im2col and GEMM per chunk of images.
  int kernels = 1;
};

struct CudaPlan {
  GpuProperties gpu;
  PrepareConfig config;
  std::vector<CudaStep> steps;
  // The first step transposes the NCHW float32 input into an NHWC copy of the activation type, because a layer
  // other than a convolution reads the input directly (fast variant).
  bool input_nhwc_copy = false;
  int64_t gemm_workspace_floats = 0;    // split-K partial sums, shared by every split GEMM and split block
  int64_t gemm_tile_counters = 0;       // in-kernel split-K and split blocks: one arrival counter per output tile,
                                        // the most any step has (shared; each kernel leaves them at zero)
  int64_t im2col_workspace_floats = 0;  // the baseline's columns, for its largest launch
  // After the last step, before the logits are downloaded: an NHWC map of more than one pixel is transposed to
  // NCHW, or a half output converted to float32 (0 or 1 kernels).
  int tail_kernels = 0;
  // Programmatic Dependent Launch between the graph's kernels (CudaOptions::pdl resolved for this GPU and code);
  // pdl_note says why not where auto turned it off ("" otherwise).
  bool pdl = false;
  std::string pdl_note;
  // With pdl: whether the kernels load their weights before they wait for the previous kernel (the default) or
  // after it (CudaOptions::Pdl::late_weights).
  bool weights_before_wait = true;
  // Why split GEMMs keep the second kernel although CudaOptions::splitk asked for another reduction ("" otherwise).
  std::string splitk_note;
  // The fusion the plan runs (CudaOptions::fusion resolved: never automatic) and why: the rule and the
  // measurement behind it for auto, "as asked" for a fusion the options named.
  CudaOptions::Fusion fusion = CudaOptions::Fusion::none;
  std::string fusion_note;
};

// One rule of the automatic plan (--cuda-fusion auto): on a GPU of compute capability cc (major * 10 + minor)
// running code compiled for that architecture, in `precision`, at batches min_batch..max_batch, the fusion that
// measured fastest; `measurement` names the run and the figures behind it (docs/PERFORMANCE.md, docs/bench/).
struct CudaFusionRule {
  int cc = 0;
  Precision precision = Precision::fp32;
  int min_batch = 1, max_batch = 1;
  CudaOptions::Fusion fusion = CudaOptions::Fusion::none;
  const char* measurement = "";
};
// The table, fixed at build time: no two rules overlap, none says automatic.
const std::vector<CudaFusionRule>& cuda_fusion_rules();

// The fusion a plan of `config` runs on `gpu`, with its reason: the asked one as it is; for automatic, the rule
// of cuda_fusion_rules() that covers the GPU's architecture (with code built for it), the precision and the
// batch; the per-layer plan (none, the portable choice) where no rule covers them, or for the baseline variant,
// and the reason says so.
struct CudaFusionChoice {
  CudaOptions::Fusion fusion = CudaOptions::Fusion::none;
  std::string why;
};
CudaFusionChoice resolve_cuda_fusion(const PrepareConfig& config, const GpuProperties& gpu);

// The kernel launches of one run the plan predicts: every step's kernels and the tail. The backend counts the
// kernel nodes of its CUDA graph (PreparedNet::kernels_per_run()) and must agree.
int64_t planned_kernels(const CudaPlan& plan);

// Plans the network. Throws UsageError for option combinations the backend refuses (a reduced precision with
// the baseline variant, an unknown GEMM tile) and Error for what this GPU cannot run (tf32 below sm_80 code,
// a forced tile that does not fit its shared memory) or a malformed model.
CudaPlan plan_cuda_network(const Model& model, const PrepareConfig& config, const GpuProperties& gpu);

// One line per step: index, covered layers, kernel and variant; then the workspaces. For the CLI and tests.
std::string describe(const CudaPlan& plan);
// The fusion the plan runs, as asked or resolved: "block", "auto -> block".
std::string describe_fusion(const CudaPlan& plan);
// The launch chain in a few words: "57 kernels per run, PDL on, 12 split-K GEMMs reduced in the kernel".
std::string describe_chain(const CudaPlan& plan);

}  // namespace mnv2
