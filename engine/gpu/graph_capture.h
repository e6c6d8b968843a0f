// Capturing a backend's run as one CUDA graph with each node tied to the step that enqueued it (GraphStepMap,
// mnv2/backend.h), so a CUPTI observer can time steps inside replays; counting a graph's kernels and turning its
// kernel-to-kernel edges into Programmatic Dependent Launch edges. Used by both GPU backends.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpu/check.h"
#include "gpu/runtime.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"

// The graph calls that carry edge data are the plain names from CUDA 13 on, the _v2 ones in CUDA 12.3 .. 12.9.
#if CUDART_VERSION >= 13000
#define MNV2_GRAPH_EDGE_CALL(name) name
#else
#define MNV2_GRAPH_EDGE_CALL(name) name##_v2
#endif

namespace mnv2::gpu {

// A StepObserver for the capture itself: at each step's end, the nodes the capture gained since the last look
// are that step's (nodes before the first step and after the last belong to none).
class CaptureRecorder final : public StepObserver {
 public:
  explicit CaptureRecorder(std::string who) : who_(std::move(who)) {}
  void step_begin(int, void* stream) override {
    map.sequence.resize(map.sequence.size() + new_nodes(stream).size(), -1);
  }
  void step_end(int step, void* stream) override {
    for (cudaGraphNode_t node : new_nodes(stream)) {
      map.nodes.emplace_back(static_cast<void*>(node), step);
      map.sequence.push_back(step);
    }
  }
  // After the capture: the nodes added after the last step (the logits download).
  void finish(cudaGraph_t graph) { map.sequence.resize(map.sequence.size() + new_nodes(graph).size(), -1); }
  GraphStepMap map;

 private:
  std::vector<cudaGraphNode_t> new_nodes(void* stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    MNV2_CHECK_CUDA(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr, &graph));
    if (status != cudaStreamCaptureStatusActive || graph == nullptr)
      throw Error(who_ + ": the stream is not capturing while the graph's steps are recorded");
    return new_nodes(graph);
  }
  // Nodes appear in the graph in capture order; those not seen before are the latest.
  std::vector<cudaGraphNode_t> new_nodes(cudaGraph_t graph) {
    size_t count = 0;
    MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> all(count);
    if (count > 0) MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, all.data(), &count));
    all.resize(count);
    std::vector<cudaGraphNode_t> fresh;
    for (cudaGraphNode_t node : all)
      if (seen_.insert(node).second) fresh.push_back(node);
    return fresh;
  }
  std::string who_;
  std::unordered_set<cudaGraphNode_t> seen_;
};

// What `enqueue` puts on `stream`, as a graph; the capture ends on every path.
inline Graph capture_graph(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  MNV2_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    MNV2_CHECK_LOG(cudaStreamEndCapture(stream, &broken));
    if (broken != nullptr) MNV2_CHECK_LOG(cudaGraphDestroy(broken));
    throw;
  }
  cudaGraph_t graph = nullptr;
  MNV2_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  return Graph(graph);
}

// The kernel nodes of `graph` (memory copies, memsets and empty nodes are not kernels).
inline int64_t count_kernel_nodes(cudaGraph_t graph) {
  size_t count = 0;
  MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  int64_t kernels = 0;
  for (size_t i = 0; i < count; ++i) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    MNV2_CHECK_CUDA(cudaGraphNodeGetType(nodes[i], &type));
    kernels += type == cudaGraphNodeTypeKernel ? 1 : 0;
  }
  return kernels;
}

// A copy of `graph` (the original keeps its nodes, and so the GraphStepMap recorded for it).
inline Graph clone_graph(cudaGraph_t graph) {
  cudaGraph_t copy = nullptr;
  MNV2_CHECK_CUDA(cudaGraphClone(&copy, graph));
  return Graph(copy);
}

// Programmatic Dependent Launch (sm_90 on): every edge of `graph` from a kernel node into a kernel node that
// `may_start_early` accepts becomes a programmatic edge (out of the upstream kernel's programmatic port, what
// stream capture makes of a launch with cudaLaunchAttributeProgrammaticStreamSerialization): the downstream
// kernel may start once every block of the upstream one has called griddepcontrol.launch_dependents (or
// exited), and must itself wait (griddepcontrol.wait, kernels/common.cuh pdl_wait) before touching what the
// upstream kernels write or read. Returns the edges changed.
inline int make_programmatic_edges(cudaGraph_t graph, const std::function<bool(cudaGraphNode_t)>& may_start_early) {
  auto is_kernel = [](cudaGraphNode_t node) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    MNV2_CHECK_CUDA(cudaGraphNodeGetType(node, &type));
    return type == cudaGraphNodeTypeKernel;
  };
  size_t count = 0;
  MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  int changed = 0;
  for (cudaGraphNode_t to : nodes) {
    if (!is_kernel(to) || !may_start_early(to)) continue;
    size_t deps = 0;
    MNV2_CHECK_CUDA(MNV2_GRAPH_EDGE_CALL(cudaGraphNodeGetDependencies)(to, nullptr, nullptr, &deps));
    std::vector<cudaGraphNode_t> from(deps);
    std::vector<cudaGraphEdgeData> edges(deps);
    if (deps > 0)
      MNV2_CHECK_CUDA(MNV2_GRAPH_EDGE_CALL(cudaGraphNodeGetDependencies)(to, from.data(), edges.data(), &deps));
    for (size_t i = 0; i < deps; ++i) {
      if (!is_kernel(from[i]) || edges[i].type == cudaGraphDependencyTypeProgrammatic) continue;
      MNV2_CHECK_CUDA(MNV2_GRAPH_EDGE_CALL(cudaGraphRemoveDependencies)(graph, &from[i], &to, &edges[i], 1));
      cudaGraphEdgeData programmatic{};
      programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
      programmatic.type = cudaGraphDependencyTypeProgrammatic;
      MNV2_CHECK_CUDA(MNV2_GRAPH_EDGE_CALL(cudaGraphAddDependencies)(graph, &from[i], &to, &programmatic, 1));
      ++changed;
    }
  }
  return changed;
}

// An executable graph, uploaded to the device on `stream`.
inline GraphExec instantiate_graph(cudaGraph_t graph, cudaStream_t stream) {
  cudaGraphExec_t exec = nullptr;
  MNV2_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  GraphExec owned(exec);
  MNV2_CHECK_CUDA(cudaGraphUpload(owned.get(), stream));
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  return owned;
}

}  // namespace mnv2::gpu
