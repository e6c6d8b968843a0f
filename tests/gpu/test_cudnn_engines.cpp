// Which engines cuDNN offers for each MobileNetV2 layer kind (stem 3x3 s2, expansion 1x1, depthwise 3x3 s1
// and s2 with pads [0,0,1,1], projection 1x1 with and without the residual add), fused (conv + bias + ReLU6
// [+ add]) and as a bare convolution, in fp32 (NCHW, NHWC), tf32 and fp16 (NHWC), at batch 1 and 64: every
// configuration heuristics mode A and the fallback list return, its notes, whether it finalizes, its workspace
// and its time on real buffers. Printed, and written to $MNV2_CUDNN_ENGINE_LIST when set (the list in
// docs/reports/). Skips without a CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "mnv2/device.h"

#if defined(MNV2_HAVE_KERNELS)
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "backends/cudnn/graph_api.h"
#include "gpu/check.h"
#include "gpu/runtime.h"

namespace mnv2::test {
namespace {

using namespace cudnn_backend;

struct Kind {
  const char* name;
  int64_t c, h, w, k, r, s, groups, stride, pt, pl, pb, pr;
  ConvGraphSpec::Act act;
  bool residual;
};

TEST(CudnnEngines, ListPerLayerKind) {
  const CudaEnvironment& env = cuda_environment();
  if (env.devices.empty()) GTEST_SKIP() << "no CUDA device";
  cudnnHandle_t handle = nullptr;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  const Kind kinds[] = {
      {"stem 3x3 s2 3->32 @224", 3, 224, 224, 32, 3, 3, 1, 2, 0, 0, 1, 1, ConvGraphSpec::Act::clip, false},
      {"expand 1x1 24->144 @56", 24, 56, 56, 144, 1, 1, 1, 1, 0, 0, 0, 0, ConvGraphSpec::Act::clip, false},
      {"depthwise 3x3 s1 144 @56", 144, 56, 56, 144, 3, 3, 144, 1, 1, 1, 1, 1, ConvGraphSpec::Act::clip, false},
      {"depthwise 3x3 s2 144 @56 pads 0,0,1,1", 144, 56, 56, 144, 3, 3, 144, 2, 0, 0, 1, 1, ConvGraphSpec::Act::clip,
       false},
      {"project 1x1 144->24 @56 + residual", 144, 56, 56, 24, 1, 1, 1, 1, 0, 0, 0, 0, ConvGraphSpec::Act::none, true},
      {"project 1x1 144->32 @28", 144, 28, 28, 32, 1, 1, 1, 1, 0, 0, 0, 0, ConvGraphSpec::Act::none, false},
  };
  struct Mode {
    const char* name;
    cudnnDataType_t type;
    bool nhwc, strict;
  };
  const Mode modes[] = {{"fp32 NCHW", CUDNN_DATA_FLOAT, false, true},
                        {"fp32 NHWC", CUDNN_DATA_FLOAT, true, true},
                        {"tf32 NHWC", CUDNN_DATA_FLOAT, true, false},
                        {"fp16 NHWC", CUDNN_DATA_HALF, true, false}};
  constexpr size_t kWorkspace = size_t{256} << 20;
  gpu::DeviceBuffer ws(kWorkspace);
  gpu::Event start = gpu::make_event(), end = gpu::make_event();
  std::string text = "cuDNN " + std::to_string(cudnnGetVersion()) + " on " + env.devices.front().name +
                     "\nPer problem: every engine configuration heuristics mode A and the fallback list offer "
                     "(deduplicated), its numerical/behaviour notes, 'allowed' under the backend's rules (strict "
                     "fp32: no tensor_core/down_convert/reduced_precision; every mode: no fft/winograd/"
                     "nondeterministic), whether the plan finalizes, its workspace and its mean time over 5 runs "
                     "on real buffers (after one untimed run).\n";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  for (int batch : {1, 64})
    for (const Mode& m : modes)
      for (const Kind& k : kinds)
        for (bool fused : {true, false}) {
          if (std::chrono::steady_clock::now() > deadline) {
            text += "(stopped: the test's time budget of 150 s is spent)\n";
            goto done;
          }
          ConvGraphSpec spec;
          spec.io_type = m.type;
          spec.nhwc = m.nhwc;
          spec.n = batch;
          spec.c = k.c;
          spec.h = k.h;
          spec.w = k.w;
          spec.k = k.k;
          spec.r = k.r;
          spec.s = k.s;
          spec.groups = k.groups;
          spec.stride_h = spec.stride_w = k.stride;
          spec.pad_top = k.pt;
          spec.pad_left = k.pl;
          spec.pad_bottom = k.pb;
          spec.pad_right = k.pr;
          spec.out_h = (k.h + k.pt + k.pb - k.r) / k.stride + 1;
          spec.out_w = (k.w + k.pl + k.pr - k.s) / k.stride + 1;
          spec.bias = fused;
          spec.act = fused ? k.act : ConvGraphSpec::Act::none;
          spec.residual = fused && k.residual;
          text += "\n[batch " + std::to_string(batch) + "] " + m.name + " | " + k.name + " | " + spec.ops() + "\n";
          OperationGraph graph;
          try {
            graph = build_conv_graph(handle, spec);
          } catch (const std::exception& e) {
            text += "  graph refused: " + std::string(e.what()) + "\n";
            continue;
          }
          const size_t e = m.type == CUDNN_DATA_HALF ? 2 : 4;
          gpu::DeviceBuffer x(static_cast<size_t>(batch * k.c * k.h * k.w) * e);
          gpu::DeviceBuffer w(static_cast<size_t>(k.k * (k.c / k.groups) * k.r * k.s) * e);
          gpu::DeviceBuffer b(static_cast<size_t>(k.k) * e);
          gpu::DeviceBuffer y(static_cast<size_t>(batch * k.k * spec.out_h * spec.out_w) * e);
          gpu::DeviceBuffer r(y.bytes());
          for (const gpu::DeviceBuffer* buf : {&x, &w, &b, &y, &r})
            MNV2_CHECK_CUDA(cudaMemset(buf->get(), 0x3C, buf->bytes()));
          std::vector<int64_t> uids{kUidX, kUidW, kUidY};
          std::vector<void*> ptrs{x.get(), w.get(), y.get()};
          if (spec.bias) {
            uids.push_back(kUidBias);
            ptrs.push_back(b.get());
          }
          if (spec.residual) {
            uids.push_back(kUidResidual);
            ptrs.push_back(r.get());
          }
          const std::vector<EngineChoice> choices = engine_choices(graph);
          if (choices.empty()) text += "  no engine offered\n";
          for (const EngineChoice& c : choices) {
            const std::string why_not = disallowed_reason(c, m.strict);
            std::string line = "  " + c.source + " " + c.describe() + (why_not.empty() ? " allowed" : " NOT allowed");
            std::string why;
            const ExecutionPlan plan = make_plan(handle, c, &why);
            if (!plan) {
              line += ", does not finalize";
            } else {
              line += ", ws " + std::to_string(plan.workspace_bytes) + " B";
              if (static_cast<size_t>(plan.workspace_bytes) <= kWorkspace) {
                const BackendDescriptor pack = make_variant_pack(uids, ptrs, ws.get());
                bool ok = cudnnBackendExecute(handle, plan.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS;
                MNV2_CHECK_CUDA(cudaEventRecord(start.get()));
                for (int i = 0; ok && i < 5; ++i)
                  ok = cudnnBackendExecute(handle, plan.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS;
                MNV2_CHECK_CUDA(cudaEventRecord(end.get()));
                MNV2_CHECK_CUDA(cudaEventSynchronize(end.get()));
                float ms = 0;
                MNV2_CHECK_CUDA(cudaEventElapsedTime(&ms, start.get(), end.get()));
                char t[64];
                std::snprintf(t, sizeof t, ", %.4f ms", static_cast<double>(ms) / 5);
                line += ok ? std::string(t) : std::string(", execution failed");
              }
            }
            text += line + "\n";
          }
        }
done:
  cudnnDestroy(handle);
  std::printf("%s", text.c_str());
  if (const char* path = std::getenv("MNV2_CUDNN_ENGINE_LIST"); path && *path) std::ofstream(path) << text;
}

}  // namespace
}  // namespace mnv2::test
#endif
