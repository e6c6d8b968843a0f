// mnv2_stage_bench: issue 33's stage prototype. One stage of the network at small batch is one inverted-residual
// block (fp16, kernels/fused_block.cu); how short can a stage be, with the synchronisation that separates it from
// the next, when the block's expanded channels are split over several blocks per tile (FusedBlockVariant::splits:
// the last block of a tile sums the splits' projections)? Per MobileNetV2 block shape and batch: the block kernel
// as the planner launches it (the chooser's tile, unsplit) and every candidate tile x split, each
//   - checked first: its output against the unsplit kernel's (max |diff| / max |reference|; a gross error exits 1)
//     and, split, the same bits on a second launch;
//   - timed as a stage: a CUDA graph of --launches back-to-back launches of it (one stream), replayed; the figure is
//     the median replay over the launches, in µs a stage, with programmatic (PDL) edges on sm_90 and newer (the
//     weights loaded before the wait, as the cuda backend does) and with plain edges.
// Then where the planner's and the fastest variant's time goes (phases: each block's %globaltimer stamps, thread 0's
// clock, in the last two launches of such a graph: the boundary between two stages and the phases of one). Then
// the network's expanding blocks (16 of them, each shape with its count) summed with the chooser's variant
// and with each shape's fastest, and the GPU's %globaltimer resolution (the clock issue 33's in-kernel stamps would
// read): one thread reads it back to back, the smallest and median non-zero steps are its tick.
//
// Last, per batch, the persistent chain (launch_fused_block_chain: one cooperative launch, a grid barrier between
// stages; chains()): each shape's fastest variant repeated in one launch, and the 16 expanding blocks in one launch
// against the same 16 launches as a PDL graph, each chain checked bit for bit against the plain launches.
//
//   mnv2_stage_bench [--batch 1,8] [--launches 32] [--warmup 10] [--iters 100] [--json PATH] [--device N]
//                    [--fastest-from JSON: an earlier run's file; time only its fastest variant and the planner's]
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../gpu/fused_block_test_cases.h"  // kMobileNetBlocks, BlockCase
#include "backends/cuda/shapes.h"           // device_caps
#include "bench_stats.h"
#include "gpu/check.h"
#include "gpu/device.h"         // read_gpu_properties
#include "gpu/graph_capture.h"  // make_programmatic_edges, instantiate_graph
#include "gpu/runtime.h"
#include "kernels/clock_probe.cuh"
#include "kernels/common.cuh"  // probe_kernel_image
#include "kernels/fused_block.cuh"
#include "kernels/layout.cuh"  // to_half_bits, half_bits_to_float
#include "mnv2/error.h"

namespace {

namespace k = mnv2::kernels;
using mnv2::Error;
using mnv2::bench::time_it;
using mnv2::bench::Timing;
using mnv2::test::BlockCase;
using nlohmann::json;
using namespace nlohmann::literals;  // _json_pointer

// How many of MobileNetV2's 16 expanding blocks have each shape of kMobileNetBlocks (blocks 2 .. 17).
constexpr int kCounts[] = {1, 1, 1, 2, 1, 3, 1, 2, 1, 2, 1};
static_assert(std::size(kCounts) == std::size(mnv2::test::kMobileNetBlocks));
constexpr const char* kNames[] = {"block2",  "block3",     "block4",  "block5-6",   "block7", "block8-10",
                                  "block11", "block12-13", "block14", "block15-16", "block17"};

struct Options {
  std::vector<int> batches{1, 8};
  int launches = 32, warmup = 10, iters = 100, device = 0;
  std::string json;
  std::string fastest_from;  // an earlier run's JSON: time only its fastest variant and the planner's a shape
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app(
      "Issue 33's stage prototype: each MobileNetV2 block shape as a stage (fp16 block kernel, every tile x "
      "split), its phases, and the persistent chain.",
      "mnv2_stage_bench");
  app.add_option("--batch", o.batches, "batches, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--launches", o.launches, "launches in one timed graph")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed replays")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--iters", o.iters, "timed replays")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--device", o.device, "CUDA device ordinal")->check(CLI::Range(0, 1023))->capture_default_str();
  app.add_option("--json", o.json, "write the results here");
  app.add_option("--fastest-from", o.fastest_from,
                 "an earlier run's JSON: time only its fastest variant and the planner's of each shape")
      ->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help: 0, after printing; a usage error: its message
    std::exit(rc == 0 ? 0 : 2);
  }
  return o;
}

// ---- %globaltimer ---------------------------------------------------------------------------------------------

json globaltimer_tick(cudaStream_t stream) {
  constexpr int kReads = 1 << 16;
  mnv2::gpu::DeviceBuffer buf(kReads * sizeof(uint64_t));
  std::vector<uint64_t> t(kReads);
  k::launch_globaltimer_reads(static_cast<uint64_t*>(buf.get()), kReads, stream);
  MNV2_CHECK_CUDA(cudaMemcpyAsync(t.data(), buf.get(), t.size() * sizeof(t[0]), cudaMemcpyDeviceToHost, stream));
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<uint64_t> steps;
  for (size_t i = 1; i < t.size(); ++i)
    if (t[i] != t[i - 1]) steps.push_back(t[i] - t[i - 1]);
  json j = {{"reads", kReads}, {"span_ns", t.back() - t.front()}, {"changes", steps.size()}};
  if (!steps.empty()) {
    std::sort(steps.begin(), steps.end());
    j["smallest_step_ns"] = steps.front();
    j["median_step_ns"] = steps[steps.size() / 2];
    j["largest_step_ns"] = steps.back();
    j["reads_per_change"] = static_cast<double>(kReads) / static_cast<double>(steps.size());
  }
  return j;
}

// ---- one block shape ------------------------------------------------------------------------------------------

// The operands of one block on the device, random (the kernel test's scales).
struct Block {
  k::FusedBlockParams p;
  mnv2::gpu::DeviceBuffer x, y, we, wp, eb, dw, db, pb;
  int64_t out_values = 0;
};

mnv2::gpu::DeviceBuffer upload(const void* data, size_t bytes) {
  mnv2::gpu::DeviceBuffer b(std::max<size_t>(bytes, 16));
  MNV2_CHECK_CUDA(cudaMemcpy(b.get(), data, bytes, cudaMemcpyHostToDevice));
  return b;
}
mnv2::gpu::DeviceBuffer upload(const std::vector<float>& v) { return upload(v.data(), v.size() * sizeof(float)); }
mnv2::gpu::DeviceBuffer upload_half(const std::vector<float>& v) {
  const std::vector<uint16_t> bits = k::to_half_bits(v);
  return upload(bits.data(), bits.size() * 2);
}

Block make_block(const BlockCase& c, uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto random = [&](size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(gen);
    return v;
  };
  Block b;
  b.p = c.params();
  const k::FusedBlockShape& s = b.p.shape;
  const int E = c.expanded;
  const float se = 3.0f / std::sqrt(static_cast<float>(c.cin)), sp = 2.0f / std::sqrt(static_cast<float>(E));
  const std::vector<float> x = random(static_cast<size_t>(c.batch) * c.h * c.w * c.cin, -1, 1);
  const k::FusedBlockWeights w =
      k::fused_block_pack(s, k::fused_block_padding(s), random(static_cast<size_t>(E) * c.cin, -se, se),
                          random(E, -1, 1), random(static_cast<size_t>(E) * 9, -0.5f, 0.5f), random(E, -1, 1),
                          random(static_cast<size_t>(c.cout) * E, -sp, sp), random(c.cout, -1, 1));
  b.out_values = static_cast<int64_t>(c.batch) * s.out_h * s.out_w * c.cout;
  b.x = upload_half(x);
  b.y = mnv2::gpu::DeviceBuffer(static_cast<size_t>(b.out_values) * 2);
  b.we = upload_half(w.expand);
  b.wp = upload_half(w.project);
  b.eb = upload(w.expand_bias);
  b.dw = upload(w.dw);
  b.db = upload(w.dw_bias);
  b.pb = upload(w.project_bias);
  mnv2::test::set_operands(b.p, b.x.get(), b.we.get(), static_cast<const float*>(b.eb.get()),
                           static_cast<const float*>(b.dw.get()), static_cast<const float*>(b.db.get()), b.wp.get(),
                           static_cast<const float*>(b.pb.get()), b.y.get());
  b.p.weights_before_wait = true;  // the weights are constants here, as in the cuda backend's graphs
  return b;
}

std::vector<float> output(const Block& b) {
  std::vector<uint16_t> bits(static_cast<size_t>(b.out_values));
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
  MNV2_CHECK_CUDA(cudaMemcpy(bits.data(), b.y.get(), bits.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = k::half_bits_to_float(bits[i]);
  return v;
}

// What enqueue() puts on `stream`, captured as a graph and instantiated, its kernel edges programmatic (PDL) or plain.
template <class Enqueue>
mnv2::gpu::GraphExec capture(cudaStream_t stream, bool programmatic, const Enqueue& enqueue) {
  MNV2_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  enqueue();
  cudaGraph_t raw = nullptr;
  MNV2_CHECK_CUDA(cudaStreamEndCapture(stream, &raw));
  mnv2::gpu::Graph graph(raw);
  if (programmatic) mnv2::gpu::make_programmatic_edges(graph.get(), [](cudaGraphNode_t) { return true; });
  return mnv2::gpu::instantiate_graph(graph.get(), stream);
}

// A graph's replays timed: warm-up and timed replays (cudaEvent pair each).
Timing time_graph(cudaStream_t stream, const Options& o, const mnv2::gpu::GraphExec& exec) {
  return time_it(stream, o.warmup, o.iters, [&] { MNV2_CHECK_CUDA(cudaGraphLaunch(exec.get(), stream)); });
}

// A graph of `launches` launches of `launch` on `stream`, its kernel edges programmatic or plain, timed by replays:
// the median replay over the launches, µs.
template <class Launch>
std::pair<double, Timing> stage_us(cudaStream_t stream, const Options& o, bool programmatic, const Launch& launch) {
  const mnv2::gpu::GraphExec exec = capture(stream, programmatic, [&] {
    for (int i = 0; i < o.launches; ++i) launch();
  });
  const Timing t = time_graph(stream, o, exec);
  return {t.median_ms * 1e3 / o.launches, t};
}

// ---- where a stage's time goes -----------------------------------------------------------------------------

// The per-block phase stamps (FusedBlockParams::stamps) of the last two launches of a stage graph as stage_us times
// it: launches alternate between two stamp buffers, so after a replay one holds the last launch's and the other
// the launch before it. In µs:
//   boundary: from the previous launch's last stamp (its last store) to this launch's first release from the PDL
//             wait (plain edges: to its first entry): the synchronisation between two stages;
//   span: from that first release to this launch's last stamp;
//   early: how long before the first release the first block had started (PDL's head start);
//   and per phase (k = FusedBlockStamp) the median and the largest over the blocks that reached both ends:
//   wait (entry -> released), land (-> window and chunk 0 in shared memory), compute (-> chunks done), arrive (->
//   partial stored and counted; unsplit: nothing), sum (-> the splits summed, the tile's last block), store;
//   release_skew: from the first block's release to the last one's; critical_path: for the tile that stored last,
//   when its latest split passed each boundary and when its last block summed and stored (µs from that release).
json phases(cudaStream_t stream, const Options& o, bool programmatic, const k::FusedBlockParams& p,
            const k::FusedBlockVariant& v) {
  const size_t n = static_cast<size_t>(k::fused_block_blocks(p.shape, v) * v.splits) * k::kFusedBlockStamps;
  mnv2::gpu::DeviceBuffer bufs[2] = {mnv2::gpu::DeviceBuffer(n * 8), mnv2::gpu::DeviceBuffer(n * 8)};
  for (auto& b : bufs) MNV2_CHECK_CUDA(cudaMemset(b.get(), 0, n * 8));
  const mnv2::gpu::GraphExec exec = capture(stream, programmatic, [&] {
    for (int i = 0; i < o.launches; ++i) {
      k::FusedBlockParams q = p;
      q.stamps = static_cast<unsigned long long*>(bufs[i % 2].get());
      k::launch_fused_block(q, v, stream);
    }
  });
  for (int i = 0; i < std::max(o.warmup, 1) + 1; ++i) MNV2_CHECK_CUDA(cudaGraphLaunch(exec.get(), stream));
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<uint64_t> st[2];
  for (int i = 0; i < 2; ++i) {
    st[i].resize(n);
    MNV2_CHECK_CUDA(cudaMemcpy(st[i].data(), bufs[i].get(), n * 8, cudaMemcpyDeviceToHost));
  }
  const std::vector<uint64_t>& last = st[(o.launches - 1) % 2];
  const std::vector<uint64_t>& prev = st[o.launches % 2];
  const size_t blocks = n / k::kFusedBlockStamps, tiles = blocks / static_cast<size_t>(v.splits);
  // A stamp of this launch, or 0: a block that is not its tile's last this time keeps the summed and stored stamps of
  // an earlier launch it was last in (older than its entry: not this launch's).
  auto at = [&](const std::vector<uint64_t>& s, size_t b, int k) {
    const uint64_t t = s[b * k::kFusedBlockStamps + k];
    return t >= s[b * k::kFusedBlockStamps + k::kStampEntry] ? t : uint64_t{0};
  };
  uint64_t first_entry = UINT64_MAX, first_release = UINT64_MAX, last_release = 0, last_stamp = 0, prev_last = 0;
  size_t last_block = 0;
  for (size_t b = 0; b < blocks; ++b) {
    first_entry = std::min(first_entry, at(last, b, k::kStampEntry));
    first_release = std::min(first_release, at(last, b, k::kStampReleased));
    last_release = std::max(last_release, at(last, b, k::kStampReleased));
    for (int k = 0; k < k::kFusedBlockStamps; ++k) {
      if (at(last, b, k) > last_stamp) {
        last_stamp = at(last, b, k);
        last_block = b;
      }
      prev_last = std::max(prev_last, at(prev, b, k));
    }
  }
  const uint64_t start = programmatic ? first_release : first_entry;
  auto us = [](double ns) { return ns / 1e3; };
  auto since = [&](uint64_t t) { return us(static_cast<double>(t) - static_cast<double>(start)); };
  json j = {{"blocks", blocks},
            {"boundary_us", o.launches > 1 ? us(static_cast<double>(start) - static_cast<double>(prev_last)) : 0.0},
            {"span_us", since(last_stamp)},
            {"early_us", us(static_cast<double>(first_release - first_entry))},
            {"release_skew_us", us(static_cast<double>(last_release - first_release))}};
  const char* names[] = {"wait", "land", "compute", "arrive", "sum", "store"};
  for (int k = 1; k < k::kFusedBlockStamps; ++k) {
    std::vector<double> d;
    for (size_t b = 0; b < blocks; ++b) {
      const uint64_t a = at(last, b, k - 1), e = at(last, b, k);
      if (a != 0 && e != 0) d.push_back(us(static_cast<double>(e) - static_cast<double>(a)));
    }
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    j[names[k - 1]] = {{"median_us", d[d.size() / 2]}, {"max_us", d.back()}, {"blocks", d.size()}};
  }
  // The critical path: the tile that stored last, each boundary as its latest split passed it (µs from start), then
  // its summing block's sum and store.
  const size_t tile = last_block % tiles;
  json path;
  for (int k = k::kStampReleased; k <= k::kStampArrived; ++k) {
    uint64_t t = 0;
    for (size_t q = 0; q < static_cast<size_t>(v.splits); ++q) t = std::max(t, at(last, q * tiles + tile, k));
    path[names[k - 1]] = since(t);
  }
  path["sum"] = since(at(last, last_block, k::kStampSummed));
  path["store"] = since(at(last, last_block, k::kStampStored));
  j["critical_path_us"] = path;
  return j;
}

// ---- the persistent chain (launch_fused_block_chain) ------------------------------------------------------------

// The partials and arrival counters a stage of variant v needs (zeroed counters).
struct SplitBuffers {
  mnv2::gpu::DeviceBuffer partials, counters;
  SplitBuffers(const k::FusedBlockShape& s, const k::FusedBlockVariant& v)
      : partials(static_cast<size_t>(std::max<int64_t>(k::fused_block_partials_floats(s, v), 4)) * sizeof(float)),
        counters(static_cast<size_t>(k::fused_block_blocks(s, v)) * sizeof(unsigned)) {
    MNV2_CHECK_CUDA(cudaMemset(counters.get(), 0, counters.bytes()));
  }
  k::FusedBlockParams with(k::FusedBlockParams p) const {
    p.partials = static_cast<float*>(partials.get());
    p.tile_counters = static_cast<unsigned*>(counters.get());
    return p;
  }
};

// A chain launch, timed: the median of o.iters launches (cudaEvent pair each) after o.warmup, ms.
Timing time_chain(cudaStream_t stream, const Options& o, const k::FusedBlockChain& c) {
  return time_it(stream, o.warmup, o.iters, [&] { k::launch_fused_block_chain(c, stream); });
}

// Per batch, each shape's fastest variant as a stage of a persistent chain (the chain kernel: one cooperative
// launch, a grid barrier between stages) against the same stage in the PDL graph above:
//   repeated: o.launches copies of the stage in one chain launch, median launch / o.launches = µs a stage (one launch's
//             start-up spread over the copies, as the graph's is);
//   network: the 16 expanding blocks in the network's order (each shape times its count, each with its own operands:
//            the timing, not the data flow, is the network's) as one chain launch, against the same 16 launches as a
//            CUDA graph with programmatic edges (plain where not pdl), and the chain's per-stage spans from its stamps.
// Each chain's output is checked against the plain launch's, bit for bit (a difference sets gross).
json chains(cudaStream_t stream, const Options& o, bool pdl, std::vector<Block>& blocks,
            const std::vector<k::FusedBlockVariant>& fastest, json& shapes, bool& gross) {
  json j = {{"timing",
             "chain: one cooperative launch of the stages, the median of iters launches (cudaEvent pair) after warmup; "
             "repeated: launches_per_graph copies of one stage a launch, µs a stage; network: the 16 expanding "
             "blocks, µs a launch, beside the same launches as a graph (PDL edges where pdl)"}};
  mnv2::gpu::DeviceBuffer stage_mem(k::fused_block_chain_bytes(std::max(o.launches, 16)));
  for (size_t si = 0; si < blocks.size(); ++si) {
    const k::FusedBlockVariant& v = fastest[si];
    if (v.items != 2) continue;  // the chain kernel runs 2-item variants
    Block& b = blocks[si];
    const SplitBuffers sb(b.p.shape, v);
    const k::FusedBlockParams p = sb.with(b.p);
    k::launch_fused_block(p, v, stream);
    const std::vector<float> plain = output(b);
    const k::FusedBlockChain c =
        k::prepare_fused_block_chain(std::vector<k::FusedBlockParams>(o.launches, p),
                                     std::vector<k::FusedBlockVariant>(o.launches, v), stage_mem.get());
    MNV2_CHECK_CUDA(cudaMemset(b.y.get(), 0, b.y.bytes()));
    k::launch_fused_block_chain(c, stream);
    const bool same = output(b) == plain;
    if (!same) {
      gross = true;
      std::printf("  GROSS ERROR %s: the chain's output differs from the plain launch's\n", kNames[si]);
    }
    const Timing t = time_chain(stream, o, c);
    const double us = t.median_ms * 1e3 / o.launches;
    shapes[si]["chain_repeated"] = {
        {"variant", k::to_string(v)}, {"grid", c.grid}, {"us", us}, {"cv", t.cv}, {"same_bits_as_plain", same}};
    std::printf("  %-10s %-40s chain %6.2f us a stage (grid %d) | graph %6.2f\n", kNames[si], k::to_string(v).c_str(),
                us, c.grid, shapes[si]["best_us"].get<double>());
  }

  // The 16 expanding blocks.
  std::vector<k::FusedBlockParams> stages;
  std::vector<k::FusedBlockVariant> variants;
  std::vector<std::string> names;
  std::vector<SplitBuffers> buffers;
  buffers.reserve(blocks.size());
  for (size_t si = 0; si < blocks.size(); ++si) {
    buffers.emplace_back(blocks[si].p.shape, fastest[si]);
    for (int n = 0; n < kCounts[si]; ++n) {
      stages.push_back(buffers.back().with(blocks[si].p));
      variants.push_back(fastest[si]);
      names.push_back(kNames[si]);
    }
  }
  for (const auto& v : variants)
    if (v.items != 2) return j;  // not every block runs a 2-item variant: no network chain at this batch
  std::vector<std::vector<float>> plain;
  for (size_t i = 0; i < stages.size(); ++i) k::launch_fused_block(stages[i], variants[i], stream);
  for (const Block& b : blocks) plain.push_back(output(b));
  // The graph of the 16 launches.
  const mnv2::gpu::GraphExec exec = capture(stream, pdl, [&] {
    for (size_t i = 0; i < stages.size(); ++i) k::launch_fused_block(stages[i], variants[i], stream);
  });
  const Timing tg = time_graph(stream, o, exec);
  // The chain, checked, timed, then stamped.
  const k::FusedBlockChain c = k::prepare_fused_block_chain(stages, variants, stage_mem.get());
  for (Block& b : blocks) MNV2_CHECK_CUDA(cudaMemset(b.y.get(), 0, b.y.bytes()));
  k::launch_fused_block_chain(c, stream);
  bool same = true;
  for (size_t si = 0; si < blocks.size(); ++si) same = same && output(blocks[si]) == plain[si];
  if (!same) {
    gross = true;
    std::printf("  GROSS ERROR: the 16-block chain's outputs differ from the plain launches'\n");
  }
  const Timing tc = time_chain(stream, o, c);
  std::vector<mnv2::gpu::DeviceBuffer> stamp_bufs;
  std::vector<size_t> counts;
  for (size_t i = 0; i < stages.size(); ++i) {
    counts.push_back(static_cast<size_t>(k::fused_block_blocks(stages[i].shape, variants[i]) * variants[i].splits) *
                     k::kFusedBlockStamps);
    stamp_bufs.emplace_back(counts.back() * 8);
    MNV2_CHECK_CUDA(cudaMemset(stamp_bufs.back().get(), 0, counts.back() * 8));
    stages[i].stamps = static_cast<unsigned long long*>(stamp_bufs.back().get());
  }
  const k::FusedBlockChain cs = k::prepare_fused_block_chain(stages, variants, stage_mem.get());
  for (int i = 0; i < std::max(o.warmup, 1); ++i) k::launch_fused_block_chain(cs, stream);
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  json spans = json::array();
  uint64_t prev_end = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    std::vector<uint64_t> st(counts[i]);
    MNV2_CHECK_CUDA(cudaMemcpy(st.data(), stamp_bufs[i].get(), counts[i] * 8, cudaMemcpyDeviceToHost));
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t q = 0; q < st.size(); q += k::kFusedBlockStamps) {
      first = std::min(first, st[q + k::kStampEntry]);
      for (int kk = 0; kk < k::kFusedBlockStamps; ++kk) last = std::max(last, st[q + kk]);
    }
    spans.push_back(
        {{"stage", names[i]},
         {"variant", k::to_string(variants[i])},
         {"span_us", (static_cast<double>(last) - static_cast<double>(first)) / 1e3},
         {"from_previous_end_us", i == 0 ? 0.0 : (static_cast<double>(first) - static_cast<double>(prev_end)) / 1e3}});
    prev_end = last;
  }
  j["network"] = {{"stages", stages.size()},
                  {"grid", c.grid},
                  {"smem", c.smem},
                  {"graph_us", tg.median_ms * 1e3},
                  {"graph_cv", tg.cv},
                  {"graph_edges", pdl ? "programmatic" : "plain"},
                  {"chain_us", tc.median_ms * 1e3},
                  {"chain_cv", tc.cv},
                  {"same_bits_as_plain", same},
                  {"stage_spans", spans}};
  std::printf(
      "  the 16 expanding blocks, fastest variants: graph of 16 launches %.1f us, one chain launch %.1f us "
      "(grid %d)\n",
      tg.median_ms * 1e3, tc.median_ms * 1e3, c.grid);
  return j;
}

int code_arch() {
  k::KernelImage image;
  MNV2_CHECK_CUDA(k::probe_kernel_image(&image));
  return image.ptx_version;
}

int run(const Options& o) {
  MNV2_CHECK_CUDA(cudaSetDevice(o.device));
  const mnv2::GpuProperties gpu = mnv2::gpu::read_gpu_properties(o.device);
  const k::DeviceCaps caps = mnv2::cuda_backend::device_caps(gpu);
  const int arch = code_arch();
  const bool pdl = gpu.cc_major >= 9 && arch >= 90;
  std::printf("device %d: %s, %d SMs, kernels compute_%d; %d launches a graph, median of %d replays after %d\n",
              o.device, gpu.name.c_str(), gpu.sm_count, arch, o.launches, o.iters, o.warmup);
  if (arch < 80)
    throw Error("the fp16 block kernel needs code for compute_80 or newer; this build runs " + std::to_string(arch));
  mnv2::gpu::Stream stream = mnv2::gpu::make_stream();
  json out = {{"program", "mnv2_stage_bench"},
              {"gpu", gpu.name},
              {"sms", gpu.sm_count},
              {"code_arch", arch},
              {"launches_per_graph", o.launches},
              {"warmup", o.warmup},
              {"iters", o.iters},
              {"pdl", pdl},
              {"timing",
               "a CUDA graph of launches_per_graph launches of one kernel on one stream, replayed: the "
               "median replay (cudaEvent pair) over the launches, µs a stage; programmatic edges (PDL, "
               "weights before the wait) where pdl, else plain"},
              {"phases",
               "per shape, the planner's and the best variant's %globaltimer stamps (thread 0 of each block) in the "
               "last two launches of such a graph: boundary_us from the previous launch's last stamp to the first "
               "release from the PDL wait (plain: first entry), span_us from there to the last stamp, per phase the "
               "median and largest over the blocks"}};
  out["globaltimer"] = globaltimer_tick(stream.get());
  std::printf("globaltimer: %s\n", out["globaltimer"].dump().c_str());

  bool gross = false;
  json batches = json::array();
  json earlier;
  if (!o.fastest_from.empty()) {
    std::ifstream f(o.fastest_from);
    if (!f) throw Error("mnv2_stage_bench: cannot read " + o.fastest_from);
    earlier = json::parse(f);
    out["fastest_from"] = o.fastest_from;
  }
  // The earlier run's fastest variant of a shape at a batch (tile and split), or none.
  auto earlier_best = [&](int batch, const std::string& name) -> std::optional<std::tuple<int, int, int>> {
    if (earlier.is_null()) return std::nullopt;
    for (const json& b : earlier.at("batches"))
      if (b.at("batch") == batch)
        for (const json& sh : b.at("shapes"))
          if (sh.at("name") == name)
            for (const json& c : sh.at("candidates"))
              if (c.at("variant") == sh.at("best_variant"))
                return std::tuple{c.at("tile_h").get<int>(), c.at("tile_w").get<int>(), c.at("splits").get<int>()};
    throw Error("mnv2_stage_bench: " + o.fastest_from + " has no fastest variant of " + name + " at batch " +
                std::to_string(batch));
  };
  for (const int batch : o.batches) {
    std::printf("\nbatch %d: µs a stage (%s edges), the planner's variant and the fastest candidate\n", batch,
                pdl ? "PDL" : "plain");
    json shapes = json::array();
    double sum_chosen = 0, sum_best = 0;
    std::vector<Block> kept;  // each shape's operands and fastest variant, for the chains below
    std::vector<k::FusedBlockVariant> fastest;
    for (size_t si = 0; si < std::size(mnv2::test::kMobileNetBlocks); ++si) {
      BlockCase c = mnv2::test::kMobileNetBlocks[si];
      c.batch = batch;
      Block b = make_block(c, 1000 + si);
      const k::FusedBlockShape& s = b.p.shape;
      std::string why;
      const k::FusedBlockVariant chosen = k::choose_fused_block_variant(s, caps, arch, &why);
      if (!why.empty()) throw Error(std::string(kNames[si]) + ": " + why);
      const int chunks = k::fused_block_layout(s, 1, 1).e_pad / k::kFusedBlockChunk;
      // Candidate tiles: the chooser's and square/row tiles that fit; every split count up to the chunks.
      std::vector<std::pair<int, int>> tiles{{chosen.tile_h, chosen.tile_w}};
      for (const auto& t :
           std::vector<std::pair<int, int>>{{1, 7}, {2, 2}, {2, 7}, {4, 4}, {4, 7}, {7, 7}, {8, 8}, {7, 14}, {14, 14}})
        if (t != tiles.front() && t.first <= s.out_h && t.second <= s.out_w) tiles.push_back(t);
      std::vector<int> split_counts;
      for (const int n : {1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 18, 24, 30})
        if (n <= chunks) split_counts.push_back(n);

      k::launch_fused_block(b.p, chosen, stream.get());
      const std::vector<float> ref = output(b);
      double ref_max = 0;
      for (float v : ref) ref_max = std::max(ref_max, static_cast<double>(std::fabs(v)));

      json candidates = json::array();
      double chosen_us = 0, best_us = 0;
      std::string best_name;
      k::FusedBlockVariant best_variant = chosen;
      for (const auto& [th, tw] : tiles) {
        const k::FusedBlockLayout l = k::fused_block_layout(s, th, tw);
        const int items = k::fused_block_items(s, th, tw);
        if (items > k::kFusedBlockMaxItems || l.m2 > 256 || l.total > caps.smem_per_block_optin) continue;
        for (const int splits : split_counts) {
          if (const auto e = earlier_best(batch, kNames[si]);
              e && std::tuple{th, tw, splits} != *e && !(th == chosen.tile_h && tw == chosen.tile_w && splits == 1))
            continue;  // --fastest-from: that file's fastest and the planner's only
          k::FusedBlockVariant v{th, tw, items <= 2 ? 2 : items <= 4 ? 4 : 6, k::FusedBlockMath::f16, splits};
          if (th == chosen.tile_h && tw == chosen.tile_w && splits == 1) v = chosen;
          const SplitBuffers sb(s, v);
          const k::FusedBlockParams p = sb.with(b.p);
          auto launch = [&] { k::launch_fused_block(p, v, stream.get()); };
          launch();
          const std::vector<float> got = output(b);
          double diff = 0;
          for (size_t i = 0; i < got.size(); ++i)
            diff = std::max(diff, static_cast<double>(std::fabs(got[i] - ref[i])));
          if (!std::isfinite(diff)) diff = INFINITY;
          launch();
          const bool same_bits = output(b) == got;
          const double rel = ref_max > 0 ? diff / ref_max : diff;
          if (rel > 1e-2 || !same_bits) {
            gross = true;
            std::printf("  GROSS ERROR %s %s: max |diff| / max |ref| %.3g, same bits on a second launch: %s\n",
                        kNames[si], k::to_string(v).c_str(), rel, same_bits ? "yes" : "no");
          }
          const auto [us, t] = stage_us(stream.get(), o, pdl, launch);
          const double plain_us = pdl ? stage_us(stream.get(), o, false, launch).first : us;
          candidates.push_back({{"variant", k::to_string(v)},
                                {"tile_h", th},
                                {"tile_w", tw},
                                {"splits", splits},
                                {"blocks", k::fused_block_blocks(s, v) * splits},
                                {"us", us},
                                {"plain_us", plain_us},
                                {"replay_cv", t.cv},
                                {"max_rel_diff_vs_unsplit", rel},
                                {"same_bits_twice", same_bits}});
          if (v.tile_h == chosen.tile_h && v.tile_w == chosen.tile_w && splits == 1) chosen_us = us;
          if (best_name.empty() || us < best_us) {
            best_us = us;
            best_name = k::to_string(v);
            best_variant = v;
          }
        }
      }
      // Where the planner's and the fastest variant's stage time goes (their own partials and counters again).
      json breakdown;
      for (const auto& [what, v] : {std::pair{"planner", chosen}, std::pair{"best", best_variant}}) {
        const SplitBuffers sb(s, v);
        breakdown[what] = phases(stream.get(), o, pdl, sb.with(b.p), v);
        breakdown[what]["variant"] = k::to_string(v);
      }
      const json& bp = breakdown["best"];
      const json& cp = bp["critical_path_us"];
      std::printf(
          "  %-10s best: boundary %.2f us, then its last tile's path (us after release): released %.2f, landed "
          "%.2f, computed %.2f, arrived %.2f, summed %.2f, stored %.2f\n",
          kNames[si], bp["boundary_us"].get<double>(), cp["wait"].get<double>(), cp["land"].get<double>(),
          cp["compute"].get<double>(), cp["arrive"].get<double>(), cp["sum"].get<double>(), cp["store"].get<double>());
      kept.push_back(std::move(b));
      fastest.push_back(best_variant);
      sum_chosen += kCounts[si] * chosen_us;
      sum_best += kCounts[si] * best_us;
      std::printf("  %-10s x%d %4d->%4d->%4d %3dx%-3d chunks %2d: planner %-32s %6.2f us | best %-40s %6.2f us\n",
                  kNames[si], kCounts[si], c.cin, c.expanded, c.cout, c.h, c.w, chunks, k::to_string(chosen).c_str(),
                  chosen_us, best_name.c_str(), best_us);
      shapes.push_back({{"name", kNames[si]},
                        {"count", kCounts[si]},
                        {"cin", c.cin},
                        {"expanded", c.expanded},
                        {"cout", c.cout},
                        {"map", std::to_string(c.h) + "x" + std::to_string(c.w)},
                        {"stride", c.stride},
                        {"chunks", chunks},
                        {"planner_variant", k::to_string(chosen)},
                        {"planner_us", chosen_us},
                        {"best_variant", best_name},
                        {"best_us", best_us},
                        {"phases", breakdown},
                        {"candidates", candidates}});
    }
    std::printf("  the 16 expanding blocks: planner %.1f us, each shape's fastest %.1f us (%.2f us a block)\n",
                sum_chosen, sum_best, sum_best / 16);
    const json chain = chains(stream.get(), o, pdl, kept, fastest, shapes, gross);
    batches.push_back({{"batch", batch},
                       {"blocks_planner_us", sum_chosen},
                       {"blocks_best_us", sum_best},
                       {"shapes", shapes},
                       {"chain", chain}});
  }
  out["batches"] = batches;
  out["gross_error"] = gross;
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << out.dump(1) << "\n";
    if (!f) throw Error("mnv2_stage_bench: cannot write " + o.json);
  }
  if (gross) std::printf("\nFAILED: a variant's result is grossly wrong or differs between launches\n");
  return gross ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnv2_stage_bench: %s\n", e.what());
    return 2;
  }
}
