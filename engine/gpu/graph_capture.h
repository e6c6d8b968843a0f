// Capturing a backend's run as one CUDA graph with each node tied to the step that enqueued it (GraphStepMap,
// mnv2/backend.h), so a CUPTI observer can time steps inside replays. Used by the cudnn backend; the cuda
// backend keeps its own copy of the same logic (cuda_backend.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpu/check.h"
#include "gpu/runtime.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"

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
