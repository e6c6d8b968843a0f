// CUPTI timing: activity records of every kernel, memcpy and memset, tied to the ExecStep that launched
// them through external correlation ids pushed around each step, or, inside a CUDA graph replay, through
// the record's graph node id and the node-to-step map the backend recorded at capture time. step_ns is
// GPU-only busy time.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "gpu/check.h"
#include "mnv2/options.h"
#include "profile/gpu/gpu_timing.h"

namespace mnv2 {

namespace gpu {

namespace {

// CUPTI fills buffers we hand it; records must be 8-byte aligned. 4 MiB holds tens of thousands of
// records, far more than one MobileNetV2 iteration makes, so a buffer rarely fills mid-iteration.
constexpr size_t kBufferBytes = size_t{4} << 20;
constexpr size_t kBufferAlign = 8;
// Completed buffers are kept for reuse so the request callback, which runs inside timed CUDA calls, does
// not map fresh pages every iteration. Two cover one in use plus one being delivered.
constexpr size_t kMaxSpareBuffers = 2;

// External ids: CUSTOM0 carries (iteration << kStepBits | step) around each step, CUSTOM1 carries the
// iteration around the whole run, so work outside steps (input upload) can still be told apart from other
// GPU work in the process. Iterations count process-wide, so ids never repeat across sources.
constexpr CUpti_ExternalCorrelationKind kStepKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr CUpti_ExternalCorrelationKind kRunKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
constexpr int kStepBits = 24;
constexpr uint64_t kStepMask = (uint64_t{1} << kStepBits) - 1;

// External correlation records are only emitted beside driver/runtime API records, so both API kinds are
// on although their own records are ignored: kernels launched through the runtime and the driver API
// (cuDNN uses both), and memcpys/memsets whose correlation id is the driver call's, all find their id.
constexpr std::array kActivityKinds{
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,    CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET};

// GPU timestamps are nanoseconds, but come from the GPU's global timer: on an H200 (CUDA 13.0, driver
// 580) every record duration was a multiple of 32 ns, give or take 1 ns of clock conversion.
constexpr double kCuptiResolutionNs = 32.0;

const char* activity_kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return "DRIVER";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    default:
      return "?";
  }
}

const char* memcpy_name(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    default:
      return "memcpy";
  }
}

enum class RawKind : uint8_t { kernel, memcpy, memset };

// A record as copied out of a CUPTI buffer (the buffer is reused as soon as the callback returns).
struct RawRecord {
  RawKind kind = RawKind::kernel;
  uint8_t copy_kind = 0;
  uint32_t correlation_id = 0;
  uint32_t runtime_correlation_id = 0;  // memcpy only; 0 elsewhere
  uint32_t stream = 0;                  // CUPTI stream id
  uint64_t start = 0, end = 0;          // GPU clock, ns
  std::array<int, 3> grid{0, 0, 0};
  std::array<int, 3> block{0, 0, 0};
  uint64_t bytes = 0;
  uint64_t graph_node = 0;  // the executable graph's node that ran it; 0 outside graph replays
  std::string name;         // kernel name as CUPTI gives it (mangled)
};

// What the buffer callbacks delivered since the last end_iteration().
struct Delivery {
  std::vector<RawRecord> records;
  std::unordered_map<uint32_t, uint64_t> step_ids;  // CUPTI correlation id -> CUSTOM0 external id
  std::unordered_map<uint32_t, uint64_t> run_ids;   // CUPTI correlation id -> CUSTOM1 external id
  uint64_t dropped = 0;

  void append(Delivery&& more) {
    records.insert(records.end(), std::make_move_iterator(more.records.begin()),
                   std::make_move_iterator(more.records.end()));
    step_ids.merge(more.step_ids);
    run_ids.merge(more.run_ids);
    dropped += more.dropped;
  }
};

// CUPTI activity tracing is process-wide and its callbacks carry no user pointer, hence one shared state.
// Leaked on purpose: CUPTI may deliver a buffer during static destruction.
struct Shared {
  std::mutex mutex;
  bool live = false;  // a CuptiTimingSource exists; only then are delivered records kept
  Delivery pending;
  std::vector<uint8_t*> spare_buffers;
  std::string unavailable_reason;
  bool callbacks_registered = false;
};

Shared& shared() {
  static Shared* state = new Shared;
  return *state;
}

std::atomic<uint64_t> g_next_iteration{1};

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  Shared& s = shared();
  {
    std::lock_guard lock(s.mutex);
    if (!s.spare_buffers.empty()) {
      *buffer = s.spare_buffers.back();
      s.spare_buffers.pop_back();
      *size = kBufferBytes;
      return;
    }
  }
  // A null buffer makes CUPTI drop records, which the dropped count then reports.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
}

void parse_buffer(uint8_t* buffer, size_t valid_bytes, Delivery& out) {
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult result = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (result == CUPTI_ERROR_MAX_LIMIT_REACHED) return;
    if (!MNV2_CHECK_LOG(result)) return;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        RawRecord r;
        r.kind = RawKind::kernel;
        r.correlation_id = k->correlationId;
        r.start = k->start;
        r.end = k->end;
        r.grid = {k->gridX, k->gridY, k->gridZ};
        r.block = {k->blockX, k->blockY, k->blockZ};
        r.graph_node = k->graphNodeId;
        r.stream = k->streamId;
        r.name = k->name != nullptr ? k->name : "";
        out.records.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        RawRecord r;
        r.kind = RawKind::memcpy;
        r.copy_kind = m->copyKind;
        r.correlation_id = m->correlationId;
        r.runtime_correlation_id = m->runtimeCorrelationId;
        r.start = m->start;
        r.end = m->end;
        r.bytes = m->bytes;
        r.graph_node = m->graphNodeId;
        r.stream = m->streamId;
        out.records.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        RawRecord r;
        r.kind = RawKind::memset;
        r.correlation_id = m->correlationId;
        r.start = m->start;
        r.end = m->end;
        r.bytes = m->bytes;
        r.graph_node = m->graphNodeId;
        r.stream = m->streamId;
        out.records.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == kStepKind) out.step_ids[e->correlationId] = e->externalId;
        if (e->externalKind == kRunKind) out.run_ids[e->correlationId] = e->externalId;
        break;
      }
      default:
        break;  // API records: only needed so that external correlation records are emitted
    }
  }
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  if (buffer == nullptr) return;
  Shared& s = shared();
  // No exception may cross back into CUPTI.
  try {
    Delivery batch;
    parse_buffer(buffer, valid_bytes, batch);
    size_t dropped = 0;
    MNV2_CHECK_LOG(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
    batch.dropped = dropped;
    std::lock_guard lock(s.mutex);
    if (s.live) s.pending.append(std::move(batch));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnv2: CUPTI buffer lost: %s\n", e.what());
  }
  std::lock_guard lock(s.mutex);
  if (s.spare_buffers.size() < kMaxSpareBuffers) {
    s.spare_buffers.push_back(buffer);
  } else {
    std::free(buffer);
  }
}

std::string demangle(const std::string& name) {
  if (name.empty()) return "(unnamed kernel)";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                   &std::free);
  return status == 0 && text ? std::string(text.get()) : name;  // extern "C" kernels are not mangled
}

std::optional<uint64_t> find_id(const std::unordered_map<uint32_t, uint64_t>& ids, const RawRecord& r) {
  if (auto it = ids.find(r.correlation_id); it != ids.end()) return it->second;
  if (r.runtime_correlation_id != 0)
    if (auto it = ids.find(r.runtime_correlation_id); it != ids.end()) return it->second;
  return std::nullopt;
}

// Turns CUPTI on for this process; "" on success, else why not (with everything switched back off).
std::string start_activities(Shared& s) {
  if (!s.callbacks_registered) {
    if (const CUptiResult r = cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
        r != CUPTI_SUCCESS)
      return "cuptiActivityRegisterCallbacks: " + StatusTraits<CUptiResult>::describe(r);
    s.callbacks_registered = true;
  }
  for (size_t i = 0; i < kActivityKinds.size(); ++i) {
    if (const CUptiResult r = cuptiActivityEnable(kActivityKinds[i]); r != CUPTI_SUCCESS) {
      for (size_t j = 0; j < i; ++j) MNV2_CHECK_LOG(cuptiActivityDisable(kActivityKinds[j]));
      return std::string("cuptiActivityEnable(") + activity_kind_name(kActivityKinds[i]) +
             "): " + StatusTraits<CUptiResult>::describe(r);
    }
  }
  return "";
}

// Graph node ids of the copies CUPTI reports while a graph is instantiated (CUPTI_CBID_RESOURCE_GRAPHNODE_
// CLONED): an executable graph's nodes are copies of the captured graph's, and activity records carry the
// copy's id. Pairs (original id, copy id) in the order the copies were made.
struct CloneLog {
  std::vector<std::pair<uint64_t, uint64_t>> clones;
  int failures = 0;  // node ids CUPTI could not give
};

void CUPTIAPI on_graph_node_cloned(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || data == nullptr) return;
  auto* log = static_cast<CloneLog*>(user);
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
  uint64_t original = 0, copy = 0;
  if (graph == nullptr || cuptiGetGraphNodeId(graph->originalNode, &original) != CUPTI_SUCCESS ||
      cuptiGetGraphNodeId(graph->node, &copy) != CUPTI_SUCCESS) {
    ++log->failures;
    return;
  }
  log->clones.emplace_back(original, copy);
}

// Unsubscribes on every path (the subscription is process-wide: one subscriber at a time).
class CallbackSubscription {
 public:
  CallbackSubscription(CUpti_CallbackFunc callback, void* user) {
    if (const CUptiResult r = cuptiSubscribe(&subscriber_, callback, user); r != CUPTI_SUCCESS)
      throw Error("CUPTI graph attribution: cuptiSubscribe: " + StatusTraits<CUptiResult>::describe(r) +
                  " (another CUPTI client, e.g. a profiler, may be attached)");
  }
  ~CallbackSubscription() { MNV2_CHECK_LOG(cuptiUnsubscribe(subscriber_)); }
  CallbackSubscription(const CallbackSubscription&) = delete;
  CallbackSubscription& operator=(const CallbackSubscription&) = delete;
  CUpti_SubscriberHandle get() const { return subscriber_; }

 private:
  CUpti_SubscriberHandle subscriber_ = nullptr;
};

std::atomic<uint64_t> g_next_graph_observer{1};

// step_ns = sum of the durations of the step's kernel, memcpy and memset records: GPU-only busy time,
// without launch gaps (records on one stream do not overlap, so the sum is the busy time).
class CuptiTimingSource final : public TimingSource {
 public:
  CuptiTimingSource() = default;  // CUPTI is already on (make_cupti_timing_source)
  CuptiTimingSource(const CuptiTimingSource&) = delete;
  CuptiTimingSource& operator=(const CuptiTimingSource&) = delete;

  ~CuptiTimingSource() override {
    pop_pushed_ids(false);
    for (auto it = kActivityKinds.rbegin(); it != kActivityKinds.rend(); ++it)
      MNV2_CHECK_LOG(cuptiActivityDisable(*it));
    Shared& s = shared();
    {
      std::lock_guard lock(s.mutex);
      s.live = false;
      s.pending = Delivery{};
    }
    // Hands back the buffers CUPTI still holds (their records are discarded), then frees the spares.
    MNV2_CHECK_LOG(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::lock_guard lock(s.mutex);
    for (uint8_t* buffer : s.spare_buffers) std::free(buffer);
    s.spare_buffers.clear();
  }

  TimerKind kind() const override { return TimerKind::cupti_kernel; }
  double resolution_ns() const override { return kCuptiResolutionNs; }

  uint64_t graph_observer_id() const override { return graph_observer_id_; }

  // Records the captured nodes' steps by their CUPTI ids, then the ids of the copies the instantiation
  // makes (a copy of a copy inherits the step too). Both ids are kept: should a record carry the captured
  // node's id, it is attributed as well.
  void instantiate_graph(const GraphStepMap& map, const std::function<void()>& instantiate) override {
    for (const auto& [node, step] : map.nodes) {
      uint64_t id = 0;
      MNV2_CHECK_CUPTI(cuptiGetGraphNodeId(static_cast<CUgraphNode>(node), &id));
      node_step_[id] = step;
    }
    CloneLog log;
    {
      CallbackSubscription subscription(on_graph_node_cloned, &log);
      MNV2_CHECK_CUPTI(
          cuptiEnableCallback(1, subscription.get(), CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
      instantiate();
    }
    if (log.failures > 0)
      throw Error("CUPTI graph attribution: no node id for " + std::to_string(log.failures) + " graph node copies");
    for (const auto& [original, copy] : log.clones)
      if (auto it = node_step_.find(original); it != node_step_.end()) node_step_[copy] = it->second;
    sequence_ = map.sequence;
  }

  std::vector<std::string> warnings() const override {
    std::vector<std::string> out;
    if (dropped_ > 0)
      out.push_back("CUPTI dropped " + std::to_string(dropped_) +
                    " activity records (no buffer space): some steps' GPU time is missing");
    if (stray_ > 0)
      out.push_back(std::to_string(stray_) +
                    " GPU activity records could not be tied to a profiled run (other GPU work in this process, "
                    "or work that finished after run() returned) and were left out");
    if (forced_flushes_ > 0)
      out.push_back("CUPTI held back finished records after synchronisation in " + std::to_string(forced_flushes_) +
                    " iterations; a forced flush delivered them");
    if (positional_iterations_ > 0)
      out.push_back("CUPTI gave no graph node copies at instantiation: " + std::to_string(positional_iterations_) +
                    " graph replays were attributed to steps by node order (one stream: capture order)");
    if (no_timestamp_ > 0)
      out.push_back("CUPTI could not time " + std::to_string(no_timestamp_) +
                    " activity records (no device memory for timestamps); they were left out");
    return out;
  }

  void begin_iteration(int num_steps) override {
    if (num_steps < 0) throw UsageError("timing: step count must not be negative");
    if (static_cast<uint64_t>(num_steps) > kStepMask)
      throw UsageError("CUPTI timing: " + std::to_string(num_steps) + " steps is more than it can label");
    pop_pushed_ids(true);
    iteration_ = g_next_iteration.fetch_add(1);
    observed_.assign(static_cast<size_t>(num_steps), 0);
    run_seen_ = false;
  }

  void run_begin(void*) override {
    if (run_pushed_) pop(kRunKind, run_pushed_);
    MNV2_CHECK_CUPTI(cuptiActivityPushExternalCorrelationId(kRunKind, iteration_));
    run_pushed_ = true;
    run_seen_ = true;
  }
  void run_end(void*) override {
    if (run_pushed_) pop(kRunKind, run_pushed_);
  }
  void step_begin(int step, void*) override {
    if (step < 0 || static_cast<size_t>(step) >= observed_.size())
      throw Error("CUPTI timing: step " + std::to_string(step) + " is outside 0.." + std::to_string(observed_.size()) +
                  " (was begin_iteration() called with the prepared network's step count?)");
    if (step_pushed_) pop(kStepKind, step_pushed_);
    MNV2_CHECK_CUPTI(
        cuptiActivityPushExternalCorrelationId(kStepKind, (iteration_ << kStepBits) | static_cast<uint64_t>(step)));
    step_pushed_ = true;
    observed_[static_cast<size_t>(step)] = 1;
  }
  void step_end(int, void*) override {
    if (step_pushed_) pop(kStepKind, step_pushed_);
  }

  // The caller has synchronised, so every record of this iteration is complete and a default flush
  // delivers them all. A default flush holds back a whole buffer if any record in it is incomplete; should
  // that happen although the steps ran, a forced flush fetches the buffer rather than letting this
  // iteration's records surface in the next one.
  IterationTiming end_iteration() override {
    pop_pushed_ids(true);
    MNV2_CHECK_CUPTI(cuptiActivityFlushAll(0));
    Delivery got = take_pending();
    const bool any_step = run_seen_ || std::find(observed_.begin(), observed_.end(), 1) != observed_.end();
    if (got.records.empty() && any_step) {
      MNV2_CHECK_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
      Delivery late = take_pending();
      if (!late.records.empty()) ++forced_flushes_;
      got.append(std::move(late));
    }
    dropped_ += got.dropped;

    IterationTiming timing;
    timing.step_ns.assign(observed_.size(), -1);
    for (size_t s = 0; s < observed_.size(); ++s)
      if (observed_[s]) timing.step_ns[s] = 0;  // the step ran; GPU time adds up below
    const std::vector<int> by_position = steps_by_position(got.records);
    uint64_t first_start = std::numeric_limits<uint64_t>::max(), last_end = 0;
    for (size_t index = 0; index < got.records.size(); ++index) {
      RawRecord& r = got.records[index];
      if (r.start == 0 && r.end == 0) {
        ++no_timestamp_;
        continue;
      }
      int step = -1;
      if (const auto id = find_id(got.step_ids, r)) {
        if ((*id >> kStepBits) != iteration_) {
          ++stray_;
          continue;
        }
        step = static_cast<int>(*id & kStepMask);
      } else if (const auto run = find_id(got.run_ids, r)) {
        if (*run != iteration_) {
          ++stray_;
          continue;
        }
      } else if (run_seen_) {
        ++stray_;  // the run was labelled, this record was not part of it
        continue;
      }  // else: a backend that does not report its run boundaries; the record is taken as this run's
      if (r.graph_node != 0) {
        timing.graph_replay = true;
        if (auto node = node_step_.find(r.graph_node); node != node_step_.end() && step < 0) step = node->second;
        if (!by_position.empty() && step < 0) step = by_position[index];
        if (step >= static_cast<int>(observed_.size())) {
          ++stray_;  // a map from a network with more steps than this iteration's
          continue;
        }
        if (step >= 0 && timing.step_ns[static_cast<size_t>(step)] < 0) timing.step_ns[static_cast<size_t>(step)] = 0;
      }

      KernelRecord k;
      k.step = step;
      k.start_ns = static_cast<int64_t>(r.start);
      k.end_ns = static_cast<int64_t>(r.end);
      k.bytes = static_cast<int64_t>(r.bytes);
      k.stream = r.stream == CUPTI_INVALID_STREAM_ID ? -1 : static_cast<int64_t>(r.stream);  // synchronous copies
      k.correlation = r.correlation_id;
      switch (r.kind) {
        case RawKind::kernel:
          k.kind = "kernel";
          k.name = demangled(r.name);
          k.grid = r.grid;
          k.block = r.block;
          break;
        case RawKind::memcpy:
          k.kind = "memcpy";
          k.name = memcpy_name(r.copy_kind);
          break;
        case RawKind::memset:
          k.kind = "memset";
          k.name = "memset";
          break;
      }
      if (step >= 0) timing.step_ns[static_cast<size_t>(step)] += k.duration_ns();
      first_start = std::min(first_start, r.start);
      last_end = std::max(last_end, r.end);
      timing.records.push_back(std::move(k));
    }
    // run_ns: the GPU span of this run's activity, first record start to last record end (CUPTI clock).
    if (!timing.records.empty()) timing.run_ns = static_cast<int64_t>(last_end - first_start);
    std::stable_sort(timing.records.begin(), timing.records.end(),
                     [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
    return timing;
  }

 private:
  // Fallback when no graph record's node id is known (CUPTI reported no copies at instantiation): a graph
  // captured from one stream replays its nodes one after another in capture order, so the k-th graph record
  // by start time is the k-th captured node. Only when the counts agree; else empty (no attribution).
  std::vector<int> steps_by_position(const std::vector<RawRecord>& records) {
    std::vector<size_t> graph_records;
    for (size_t i = 0; i < records.size(); ++i) {
      if (records[i].graph_node == 0) continue;
      if (node_step_.count(records[i].graph_node) != 0) return {};  // ids work: no fallback needed
      graph_records.push_back(i);
    }
    if (graph_records.empty() || graph_records.size() != sequence_.size()) return {};
    std::stable_sort(graph_records.begin(), graph_records.end(),
                     [&](size_t a, size_t b) { return records[a].start < records[b].start; });
    std::vector<int> steps(records.size(), -1);
    for (size_t k = 0; k < graph_records.size(); ++k) steps[graph_records[k]] = sequence_[k];
    ++positional_iterations_;
    return steps;
  }

  static Delivery take_pending() {
    Delivery got;
    Shared& s = shared();
    std::lock_guard lock(s.mutex);
    std::swap(got, s.pending);
    return got;
  }

  static void pop(CUpti_ExternalCorrelationKind kind, bool& pushed) {
    pushed = false;
    MNV2_CHECK_CUPTI(cuptiActivityPopExternalCorrelationId(kind, nullptr));
  }

  // A run() that threw leaves ids pushed; they must not label later work.
  void pop_pushed_ids(bool may_throw) {
    if (may_throw) {
      if (step_pushed_) pop(kStepKind, step_pushed_);
      if (run_pushed_) pop(kRunKind, run_pushed_);
      return;
    }
    if (step_pushed_) MNV2_CHECK_LOG(cuptiActivityPopExternalCorrelationId(kStepKind, nullptr));
    if (run_pushed_) MNV2_CHECK_LOG(cuptiActivityPopExternalCorrelationId(kRunKind, nullptr));
    step_pushed_ = run_pushed_ = false;
  }

  const std::string& demangled(const std::string& mangled) {
    auto it = names_.find(mangled);
    if (it == names_.end()) it = names_.emplace(mangled, demangle(mangled)).first;
    return it->second;
  }

  const uint64_t graph_observer_id_ = g_next_graph_observer.fetch_add(1);
  std::unordered_map<uint64_t, int> node_step_;  // CUPTI graph node id (captured or copied) -> step
  std::vector<int> sequence_;                    // the step of each node in capture order (fallback)
  uint64_t positional_iterations_ = 0;           // iterations attributed by position
  uint64_t iteration_ = 0;
  std::vector<char> observed_;  // step_begin was called for this step in this iteration
  bool run_seen_ = false;
  bool step_pushed_ = false, run_pushed_ = false;
  uint64_t dropped_ = 0, stray_ = 0, no_timestamp_ = 0, forced_flushes_ = 0;
  std::unordered_map<std::string, std::string> names_;  // mangled -> demangled, kernels repeat every run
};

// The front end's cupti option (--cupti off, $MNV2_DISABLE_CUPTI).
bool cupti_disabled_by_env(std::string& why) {
  const ProcessSettings& s = process_settings();
  if (!s.cupti_off) return false;
  why = "disabled by " + (s.cupti_off_reason.empty() ? std::string("the cupti option") : s.cupti_off_reason);
  return true;
}

}  // namespace

std::unique_ptr<TimingSource> make_cupti_timing_source() {
  gpu::Shared& s = gpu::shared();
  std::string why;
  if (gpu::cupti_disabled_by_env(why)) {
    std::lock_guard lock(s.mutex);
    s.unavailable_reason = why;
    return nullptr;
  }
  {
    std::lock_guard lock(s.mutex);
    if (s.live)
      throw Error(
          "a CUPTI timing source is already live in this process (CUPTI activity tracing is process-wide): "
          "destroy it before creating another");
    s.live = true;  // claimed before CUPTI is touched, so two threads cannot both start it
    s.pending = gpu::Delivery{};
  }
  why = gpu::start_activities(s);
  if (!why.empty()) {
    std::lock_guard lock(s.mutex);
    s.live = false;
    s.unavailable_reason = why;
    return nullptr;
  }
  return std::make_unique<gpu::CuptiTimingSource>();
}

std::string cupti_unavailable_reason() {
  gpu::Shared& s = gpu::shared();
  std::lock_guard lock(s.mutex);
  return s.unavailable_reason;
}

}  // namespace gpu
}  // namespace mnv2
