// The whole inverted-residual block in one kernel (kernels/fused_block.cu, fp16) against a float64 reference on
// fresh random data: the real MobileNetV2 block shapes at batch 1 and 3, odd maps (13x13, 9x11, 5x7), expanded
// channel counts that are not multiples of the 32-channel chunk (and one not a multiple of 8), stride 1 and 2,
// symmetric and TF-style pads, with and without residual and clips; the tile the chooser picks and forced ones
// (partial tiles at the edges, a 1x1 tile, whole maps, tiles whose depthwise items take a thread several passes
// with a carry between rows: 12x11 and 16x9); and the expanded channels split over several blocks per tile. The
// phase stamps (the stage bench's) change no bit and come in order.
//
// Tolerance, derived: the reference takes the operands as the device holds them (half input and 1x1 weights,
// half depthwise weights and bias, float32 expansion and projection biases) and rounds the expanded and
// depthwise maps to half where the kernel does. The kernel's 1x1 convolutions differ by their float32
// accumulation (<= (k + 2) 2^-24 sum |terms|, tiny) and, where that moves a value across a half rounding
// boundary, by one half ulp (<= 2u |v|, u = 2^-11) in an expanded value. The depthwise accumulates in half, from
// the bias, one rounding per tap: <= 9u m with m = |bias| + sum_t |w_t| |ex_t|, plus the expanded values' flips
// (<= 2u m) and its own rounding flip (<= 2u |d|): <= 2u (|d| + 6 m). Carried through the projection that is
// at most 2u sum_e |wp_e| (|d_e| + 6 m_e), plus the output's own rounding u |y|: the per-element bound.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <cmath>
#include <memory>

#include "fused_block_test_cases.h"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

std::vector<float> round_half(const std::vector<float>& v) { return TypedArray::rounded(k::DType::f16, v); }

class HalfBits {
 public:
  explicit HalfBits(const std::vector<uint16_t>& bits) : buffer_(std::max<size_t>(bits.size(), 1) * 2) {
    MNV2_CHECK_CUDA(cudaMemcpy(buffer_.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
  const void* get() const { return buffer_.get(); }

 private:
  gpu::DeviceBuffer buffer_;
};

int ptx_version() {
  k::KernelImage image;
  if (k::probe_kernel_image(&image) != cudaSuccess) return 0;
  return image.ptx_version;
}

// A launch of v with phase stamps (FusedBlockParams::stamps) gives the bits `expected` (the launch without), and every
// block's stamps are in the order it passes them: each block reaches kStampArrived, and one block per tile (its last
// split) sums and stores.
void expect_stamps_in_order(k::FusedBlockParams p, const k::FusedBlockVariant& v, TypedArray& dy,
                            const std::vector<float>& expected) {
  const int64_t tiles = k::fused_block_blocks(p.shape, v), blocks = tiles * v.splits;
  const size_t n = static_cast<size_t>(blocks) * k::kFusedBlockStamps;
  gpu::DeviceBuffer stamps(n * sizeof(uint64_t));
  MNV2_CHECK_CUDA(cudaMemset(stamps.get(), 0, n * sizeof(uint64_t)));
  p.stamps = static_cast<unsigned long long*>(stamps.get());
  dy.poison();
  k::launch_fused_block(p, v, nullptr);
  EXPECT_TRUE(dy.download() == expected) << "stamping changed the output";
  std::vector<uint64_t> st(n);
  MNV2_CHECK_CUDA(cudaMemcpy(st.data(), stamps.get(), n * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  int64_t stored = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t* t = st.data() + b * k::kFusedBlockStamps;
    ASSERT_NE(t[k::kStampEntry], 0u) << "block " << b << " stamped nothing";
    for (int i = k::kStampReleased; i <= k::kStampArrived; ++i)
      ASSERT_GE(t[i], t[i - 1]) << "block " << b << ": stamp " << i << " before stamp " << i - 1;
    if (t[k::kStampStored] == 0) {
      ASSERT_EQ(t[k::kStampSummed], 0u) << "block " << b << " summed but did not store";
      continue;
    }
    ++stored;
    ASSERT_GE(t[k::kStampSummed], t[k::kStampArrived]) << "block " << b;
    ASSERT_GE(t[k::kStampStored], t[k::kStampSummed]) << "block " << b;
  }
  EXPECT_EQ(stored, tiles) << "not one storing block per tile";
}

void run_case(const BlockCase& c) {
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE(c.str(seed));
  const int oh = c.out_h(), ow = c.out_w();
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  const int E = c.expanded, cin = c.cin, cout = c.cout;
  const int64_t in_px = static_cast<int64_t>(c.batch) * c.h * c.w, out_px = static_cast<int64_t>(c.batch) * oh * ow;
  // Scales: the expansion's sums reach a few units (the clip at 6 cuts some, not most), the rest stays O(1).
  const float se = 3.0f / std::sqrt(static_cast<float>(cin)), sp = 2.0f / std::sqrt(static_cast<float>(E));
  const std::vector<float> x = round_half(random_vector(gen, static_cast<size_t>(in_px * cin)));  // NHWC
  const std::vector<float> we = random_vector(gen, static_cast<size_t>(E) * cin, -se, se);        // [E][cin]
  const std::vector<float> eb = random_vector(gen, static_cast<size_t>(E));
  const std::vector<float> dw = random_vector(gen, static_cast<size_t>(E) * 9, -0.5f, 0.5f);  // [E][3][3]
  const std::vector<float> db = random_vector(gen, static_cast<size_t>(E));
  const std::vector<float> dwh = round_half(dw), dbh = round_half(db);  // as the kernel computes with them
  const std::vector<float> wp = random_vector(gen, static_cast<size_t>(cout) * E, -sp, sp);  // [cout][E]
  const std::vector<float> pb = random_vector(gen, static_cast<size_t>(cout));
  const std::vector<float> weh = round_half(we), wph = round_half(wp);
  auto clip = [&](double v) { return c.clip ? std::min(std::max(v, 0.0), 6.0) : v; };

  // Expansion (NHWC), rounded to half as the kernel stores it.
  std::vector<float> ex(static_cast<size_t>(in_px) * E);
  for (int64_t p = 0; p < in_px; ++p)
    for (int e = 0; e < E; ++e) {
      double v = eb[static_cast<size_t>(e)];
      for (int q = 0; q < cin; ++q)
        v += static_cast<double>(x[static_cast<size_t>(p * cin + q)]) * weh[static_cast<size_t>(e) * cin + q];
      ex[static_cast<size_t>(p * E + e)] = static_cast<float>(clip(v));
    }
  ex = round_half(ex);
  // Depthwise (NHWC), rounded; and each value's magnitude for the bound.
  std::vector<float> d(static_cast<size_t>(out_px) * E);
  std::vector<double> dmag(d.size());
  for (int n = 0; n < c.batch; ++n)
    for (int y = 0; y < oh; ++y)
      for (int xo = 0; xo < ow; ++xo)
        for (int e = 0; e < E; ++e) {
          double v = dbh[static_cast<size_t>(e)], mag = std::fabs(v);
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int ih = y * c.stride - c.pad_top + ky, iw = xo * c.stride - c.pad_left + kx;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              const double a = ex[((static_cast<size_t>(n) * c.h + ih) * c.w + iw) * E + e];
              const double w = dwh[static_cast<size_t>(e) * 9 + ky * 3 + kx];
              v += a * w;
              mag += std::fabs(a * w);
            }
          const size_t at = ((static_cast<size_t>(n) * oh + y) * ow + xo) * E + e;
          d[at] = static_cast<float>(clip(v));
          dmag[at] = mag;
        }
  d = round_half(d);
  // Projection + bias (+ residual).
  std::vector<double> ref(static_cast<size_t>(out_px) * cout), bound(ref.size());
  for (int64_t p = 0; p < out_px; ++p)
    for (int o = 0; o < cout; ++o) {
      double v = pb[static_cast<size_t>(o)], flips = 0, terms = std::fabs(v);
      for (int e = 0; e < E; ++e) {
        const double w = wph[static_cast<size_t>(o) * E + e], a = d[static_cast<size_t>(p * E + e)];
        v += a * w;
        terms += std::fabs(a * w);
        flips += std::fabs(w) * (std::fabs(a) + 6.0 * dmag[static_cast<size_t>(p * E + e)]);
      }
      if (c.residual) {
        const double r = x[static_cast<size_t>(p * cin + o)];  // stride 1, same map: pixel p of the input
        v += r;
        terms += std::fabs(r);
      }
      ref[static_cast<size_t>(p * cout + o)] = v;
      bound[static_cast<size_t>(p * cout + o)] =
          2.0 * kU16 * flips + kU16 * std::fabs(v) + (E + cin + 4) * kU32 * (terms + flips) + 1e-7;
    }

  k::FusedBlockParams p = c.params();
  const k::FusedBlockShape& s = p.shape;
  const k::FusedBlockWeights pw = k::fused_block_pack(s, k::fused_block_padding(s), we, eb, dw, db, wp, pb);
  TypedArray dx(k::DType::f16, x), dy(k::DType::f16, static_cast<size_t>(out_px) * cout);
  HalfBits dwe(k::to_half_bits(pw.expand)), dwp(k::to_half_bits(pw.project));
  DeviceArray deb(pw.expand_bias), ddw(pw.dw), ddb(pw.dw_bias), dpb(pw.project_bias);
  set_operands(p, dx.get(), dwe.get(), deb.get(), ddw.get(), ddb.get(), dwp.get(), dpb.get(), dy.get());

  int device = 0;
  MNV2_CHECK_CUDA(cudaGetDevice(&device));
  const k::DeviceCaps caps = device_caps(device);
  std::string why;
  std::vector<k::FusedBlockVariant> variants{k::choose_fused_block_variant(s, caps, ptx_version(), &why)};
  ASSERT_EQ(why, "");
  for (const auto& [th, tw] :
       std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {4, 4}, {7, 7}, {12, 11}, {16, 9}, {oh, ow}}) {
    const int items = k::fused_block_items(s, th, tw);
    if (th > 16 || tw > 16 || items > k::kFusedBlockMaxItems || k::fused_block_layout(s, th, tw).m2 > 256 ||
        k::fused_block_layout(s, th, tw).total > caps.smem_per_block_optin)
      continue;
    variants.push_back({th, tw, items <= 2 ? 2 : items <= 4 ? 4 : 6});
  }
  for (const k::FusedBlockVariant& v : variants) {
    SCOPED_TRACE(k::to_string(v));
    dy.poison();
    k::launch_fused_block(p, v, nullptr);
    const std::vector<float> got = dy.download();
    const BoundCheck b = check_within(got, ref, bound);
    EXPECT_TRUE(b.ok()) << b.str();
    const Agreement a = agreement(got, ref);
    EXPECT_EQ(a.non_finite, 0) << a.str();
    EXPECT_LT(a.rel_l2, 2e-3) << a.str();  // the output's own half rounding alone gives about 3e-4
    EXPECT_GE(k::fused_block_recompute_factor(s, v), 1.0 - 1e-12);
    if (&v == &variants.front()) expect_stamps_in_order(p, v, dy, got);
  }

  // The expanded channels split over 2, 3 and every chunk (one block per chunk), with the chooser's tile and a 4x4
  // one (several tiles, so several arrival counters): the same bound (the partial projections are float32 sums
  // of the same terms in another order, inside the bound's accumulation term), the same bits on a second launch
  // (the last block sums the splits in split order, whichever it is), and every counter back at zero.
  const int chunks = k::fused_block_layout(s, 1, 1).e_pad / k::kFusedBlockChunk;
  std::vector<k::FusedBlockVariant> split_tiles{variants.front()};
  if (const int items = k::fused_block_items(s, 4, 4); items <= k::kFusedBlockMaxItems && oh >= 4 && ow >= 4)
    split_tiles.push_back({4, 4, items <= 2 ? 2 : items <= 4 ? 4 : 6});
  for (k::FusedBlockVariant v : split_tiles) {
    for (const int splits : {2, 3, 9, chunks}) {  // 9: the last block's sum loads 8 splits at a time
      if (splits > chunks || (splits == 9 && chunks == 9)) continue;
      v.splits = splits;
      SCOPED_TRACE(k::to_string(v));
      DeviceArray partials(static_cast<size_t>(k::fused_block_partials_floats(s, v)));
      DeviceArray counters(static_cast<size_t>(k::fused_block_blocks(s, v)));  // unsigned, zero bits
      MNV2_CHECK_CUDA(cudaMemset(counters.get(), 0, counters.size() * sizeof(float)));
      partials.poison();  // every value read is one a split wrote in this launch
      k::FusedBlockParams ps = p;
      ps.partials = partials.get();
      ps.tile_counters = reinterpret_cast<unsigned*>(counters.get());
      dy.poison();
      k::launch_fused_block(ps, v, nullptr);
      const std::vector<float> got = dy.download();
      const BoundCheck b = check_within(got, ref, bound);
      EXPECT_TRUE(b.ok()) << b.str();
      const Agreement a = agreement(got, ref);
      EXPECT_EQ(a.non_finite, 0) << a.str();
      EXPECT_LT(a.rel_l2, 2e-3) << a.str();
      dy.poison();
      k::launch_fused_block(ps, v, nullptr);
      EXPECT_TRUE(dy.download() == got) << "a second launch gave other bits";
      for (const float c : counters.download()) ASSERT_EQ(c, 0.0f) << "an arrival counter was left non-zero";
      expect_stamps_in_order(ps, v, dy, got);
    }
  }
}

TEST(KernelFusedBlock, MatchesTheReferenceOverBlockShapes) {
  MNV2_SKIP_WITHOUT_GPU();
  if (ptx_version() < 80) GTEST_SKIP() << "the kernels run compute_" << ptx_version() << " code: fused_block needs 80";
  for (BlockCase c : kMobileNetBlocks) {
    run_case(c);
    c.batch = 3;
    run_case(c);
  }
  for (const BlockCase& c : kOddTensorCoreBlocks) run_case(c);
}

// The split launches of small maps only (a 7x7 block of 30 chunks, a 3x3 map of 9): quick enough for the sanitizers
// (scripts/device-run.sh, section stage).
TEST(KernelFusedBlock, SplitLaunchesOfSmallMaps) {
  MNV2_SKIP_WITHOUT_GPU();
  if (ptx_version() < 80) GTEST_SKIP() << "the kernels run compute_" << ptx_version() << " code: fused_block needs 80";
  run_case(kMobileNetBlocks[9]);
  run_case(kOddTensorCoreBlocks[4]);
}

// The persistent chain (launch_fused_block_chain): stages that read what the one before wrote, split and unsplit,
// stride 1 and 2, give the plain launches' bits in every output (the grid barrier orders each stage's writes before
// the next stage's reads; the split's counters come back to zero between stages); a variant the chain does not run
// is refused by name.
TEST(KernelFusedBlock, ChainGivesThePlainLaunchesBits) {
  MNV2_SKIP_WITHOUT_GPU();
  if (ptx_version() < 80) GTEST_SKIP() << "the kernels run compute_" << ptx_version() << " code: fused_block needs 80";
  std::mt19937_64 gen(kernel_test_seed());
  // Block 8's shape (64 -> 384 -> 64, 14x14, residual) three times in a row, then block 14's (96 <- 64 would not
  // chain): x -> a -> b -> c, the middle one split 8 ways; and block 7's (stride 2) on its own input beside them.
  BlockCase c8 = kMobileNetBlocks[5], c7 = kMobileNetBlocks[4];
  c8.batch = c7.batch = 2;
  struct Operands {
    k::FusedBlockParams p;
    std::vector<std::unique_ptr<HalfBits>> halves;
    std::vector<std::unique_ptr<DeviceArray>> floats;
  };
  auto operands = [&](const BlockCase& c, const void* input, void* output) {
    Operands o;
    o.p = c.params();
    const k::FusedBlockShape& s = o.p.shape;
    const float se = 3.0f / std::sqrt(static_cast<float>(c.cin)), sp = 2.0f / std::sqrt(static_cast<float>(c.expanded));
    const k::FusedBlockWeights w = k::fused_block_pack(
        s, k::fused_block_padding(s), random_vector(gen, static_cast<size_t>(c.expanded) * c.cin, -se, se),
        random_vector(gen, c.expanded), random_vector(gen, static_cast<size_t>(c.expanded) * 9, -0.5f, 0.5f),
        random_vector(gen, c.expanded), random_vector(gen, static_cast<size_t>(c.cout) * c.expanded, -sp, sp),
        random_vector(gen, c.cout));
    o.halves.push_back(std::make_unique<HalfBits>(k::to_half_bits(w.expand)));
    o.halves.push_back(std::make_unique<HalfBits>(k::to_half_bits(w.project)));
    for (const auto* v : {&w.expand_bias, &w.dw, &w.dw_bias, &w.project_bias})
      o.floats.push_back(std::make_unique<DeviceArray>(*v));
    set_operands(o.p, input, o.halves[0]->get(), o.floats[0]->get(), o.floats[1]->get(), o.floats[2]->get(),
                 o.halves[1]->get(), o.floats[3]->get(), output);
    return o;
  };
  const size_t n8 = static_cast<size_t>(c8.batch) * c8.h * c8.w * c8.cin;
  TypedArray x(k::DType::f16, round_half(random_vector(gen, n8))), a(k::DType::f16, n8), b(k::DType::f16, n8),
      c(k::DType::f16, n8);
  const size_t n7 = static_cast<size_t>(c7.batch) * c7.h * c7.w * c7.cin;
  TypedArray x7(k::DType::f16, round_half(random_vector(gen, n7))),
      y7(k::DType::f16, static_cast<size_t>(c7.batch) * c7.out_h() * c7.out_w() * c7.cout);
  std::vector<Operands> ops;
  ops.push_back(operands(c8, x.get(), a.get()));
  ops.push_back(operands(c8, a.get(), b.get()));
  ops.push_back(operands(c7, x7.get(), y7.get()));
  ops.push_back(operands(c8, b.get(), c.get()));
  const std::vector<k::FusedBlockVariant> variants{
      {1, 7, 2}, {1, 7, 2, k::FusedBlockMath::f16, 8}, {1, 7, 2}, {2, 7, 2, k::FusedBlockMath::f16, 3}};
  std::vector<std::unique_ptr<DeviceArray>> split_mem;
  std::vector<k::FusedBlockParams> stages;
  for (size_t i = 0; i < ops.size(); ++i) {
    k::FusedBlockParams p = ops[i].p;
    if (variants[i].splits > 1) {
      split_mem.push_back(
          std::make_unique<DeviceArray>(static_cast<size_t>(k::fused_block_partials_floats(p.shape, variants[i]))));
      split_mem.back()->poison();
      p.partials = split_mem.back()->get();
      split_mem.push_back(
          std::make_unique<DeviceArray>(static_cast<size_t>(k::fused_block_blocks(p.shape, variants[i]))));
      MNV2_CHECK_CUDA(cudaMemset(split_mem.back()->get(), 0, split_mem.back()->size() * sizeof(float)));
      p.tile_counters = reinterpret_cast<unsigned*>(split_mem.back()->get());
    }
    stages.push_back(p);
  }
  for (size_t i = 0; i < stages.size(); ++i) k::launch_fused_block(stages[i], variants[i], nullptr);
  const std::vector<float> want_a = a.download(), want_b = b.download(), want_c = c.download(), want7 = y7.download();
  gpu::DeviceBuffer mem(k::fused_block_chain_bytes(static_cast<int>(stages.size())));
  const k::FusedBlockChain chain = k::prepare_fused_block_chain(stages, variants, mem.get());
  EXPECT_GE(chain.grid, 1);
  for (int round = 0; round < 3; ++round) {
    a.poison();
    b.poison();
    c.poison();
    y7.poison();
    k::launch_fused_block_chain(chain, nullptr);
    EXPECT_TRUE(a.download() == want_a) << "round " << round << ": stage 1";
    EXPECT_TRUE(b.download() == want_b) << "round " << round << ": stage 2 (split 8 ways)";
    EXPECT_TRUE(y7.download() == want7) << "round " << round << ": stage 3 (stride 2)";
    EXPECT_TRUE(c.download() == want_c) << "round " << round << ": stage 4 (split 3 ways)";
  }
  for (const size_t counters : {1, 3})  // split_mem: partials and counters of stage 2, then of stage 4
    for (const float v : split_mem[counters]->download()) ASSERT_EQ(v, 0.0f) << "an arrival counter was left non-zero";
  std::vector<k::FusedBlockVariant> four = variants;
  four[2].items = 4;
  try {
    (void)k::prepare_fused_block_chain(stages, four, mem.get());
    ADD_FAILURE() << "a 4-item variant in a chain was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 items"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)k::prepare_fused_block_chain(stages, {}, mem.get()), Error);
}

TEST(KernelFusedBlock, RefusesWhatItCannotRun) {
  MNV2_SKIP_WITHOUT_GPU();
  TypedArray buf(k::DType::f16, 1 << 16), out(k::DType::f16, 1 << 16);
  DeviceArray fbuf(1 << 14);
  k::FusedBlockParams p;
  p.shape = k::FusedBlockShape{1, 16, 64, 16, 8, 8, 8, 8, 1, 1, 1, true};
  p.input = buf.get();
  p.expand_weight = buf.get();
  p.expand_bias = fbuf.get();
  p.dw_weight = fbuf.get();
  p.dw_bias = fbuf.get();
  p.project_weight = buf.get();
  p.project_bias = fbuf.get();
  p.output = out.get();
  const k::FusedBlockVariant ok{4, 4, 2};
  if (ptx_version() < 80) {  // older code: every launch refuses, naming the architecture
    EXPECT_THROW(k::launch_fused_block(p, ok, nullptr), Error);
    GTEST_SKIP() << "the kernels run compute_" << ptx_version() << " code: the fused block refuses it";
  }
  k::FusedBlockParams bad = p;
  bad.shape.in_channels = bad.shape.out_channels = 12;  // not multiples of 8
  EXPECT_THROW(k::launch_fused_block(bad, ok, nullptr), Error);
  EXPECT_NE(k::fused_block_shape_refusal(bad.shape, 90).find("multiples of 8"), std::string::npos);
  bad = p;
  bad.output = buf.get();  // the input itself
  EXPECT_THROW(k::launch_fused_block(bad, ok, nullptr), Error);
  bad = p;
  bad.shape.stride = 3;
  EXPECT_THROW(k::launch_fused_block(bad, ok, nullptr), Error);
  bad = p;
  bad.shape.out_channels = 160;  // 8x8 pixels x 160 channels: 3 projection items per warp
  bad.shape.residual = false;
  EXPECT_THROW(k::launch_fused_block(bad, k::FusedBlockVariant{8, 8, 2}, nullptr), Error);
  EXPECT_THROW(k::launch_fused_block(p, k::FusedBlockVariant{4, 4, 3}, nullptr), Error);  // not built
  k::FusedBlockVariant split = ok;
  split.splits = 2;  // no partials or counters given
  EXPECT_THROW(k::launch_fused_block(p, split, nullptr), Error);
  split.splits = 3;  // 64 expanded channels: 2 chunks
  k::FusedBlockParams with = p;
  with.partials = fbuf.get();
  with.tile_counters = reinterpret_cast<unsigned*>(fbuf.get());
  EXPECT_THROW(k::launch_fused_block(with, split, nullptr), Error);
  split.splits = 0;
  EXPECT_THROW(k::launch_fused_block(with, split, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  k::launch_fused_block(p, ok, nullptr);  // the refusals left nothing behind
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelFusedBlock, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
