// The 8-bit input path (issue 17 item 3): resize_crop + normalise_u8 are preprocess() in two halves, the
// normaliser's table reproduces the golden inputs, PreparedNet::run_u8's host default equals run() per
// sub-batch, and the bench's --u8 figures are written and read back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/model.h"
#include "mnv2/report.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

Preprocess main_model_preprocess() {  // shared/weights/README.md
  Preprocess p;
  p.resize = 256;
  p.crop = 224;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.5f, 0.5f, 0.5f};
  return p;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng() & 0xFF);
  return v;
}

TEST(ImageU8, GoldenInputsAreTheNormalisersTableOfTheirBytes) {
  const InputNormaliser n = make_input_normaliser(main_model_preprocess());
  for (const std::string& name : golden_image_names()) {
    SCOPED_TRACE(name);
    const Golden g = read_golden(name);
    double max_abs = -1;
    const std::vector<uint8_t> bytes = bytes_of_normalised(g.input, 224, 224, n, &max_abs);
    EXPECT_LE(max_abs, 1e-6);  // the bound issue 17 states for the GPU conversion
    std::vector<float> again(g.input.size());
    normalise_u8(bytes.data(), 1, 224, 224, n, again.data());
    double worst = 0;
    for (size_t i = 0; i < again.size(); ++i) worst = std::max(worst, std::fabs(double(again[i]) - g.input[i]));
    EXPECT_LE(worst, 1e-6);
    std::printf("[ u8       ] %-13s golden input from its bytes: max abs %.3g\n", name.c_str(), worst);
  }
}

TEST(ImageU8, ResizeCropThenNormaliseIsPreprocess) {
  const Preprocess p = main_model_preprocess();
  const InputNormaliser n = make_input_normaliser(p);
  for (auto [w, h] : std::vector<std::pair<int, int>>{{300, 200}, {224, 224}, {257, 513}, {31, 17}}) {
    Image8 image;
    image.width = w;
    image.height = h;
    image.rgb = random_bytes(static_cast<size_t>(w) * h * 3, static_cast<uint32_t>(w * 7 + h));
    Image8 crop_out;
    const Tensor t = preprocess(image, p, &crop_out);
    const Image8 crop = resize_crop(image, p);
    ASSERT_EQ(crop.width, 224);
    ASSERT_EQ(crop.height, 224);
    EXPECT_EQ(crop.rgb, crop_out.rgb);
    std::vector<float> mine(t.data.size());
    normalise_u8(crop.rgb.data(), 1, 224, 224, n, mine.data());
    EXPECT_EQ(mine, t.data) << w << "x" << h;  // bit for bit
  }
}

TEST(ImageU8, NormaliserFollowsChannelOrderMeanAndStd) {
  Preprocess p = main_model_preprocess();
  p.color = "BGR";
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  const InputNormaliser n = make_input_normaliser(p);
  EXPECT_EQ(n.source, (std::array<int, 3>{2, 1, 0}));
  // Output channel 0 reads the blue byte, normalised with the blue mean/std (given in RGB order).
  EXPECT_EQ(n.value[0][255], static_cast<float>((1.0 - 0.406f) / 0.225f));
  const uint8_t px[3] = {10, 20, 200};  // R, G, B
  float out[3];
  normalise_u8(px, 1, 1, 1, n, out);
  EXPECT_EQ(out[0], n.value[0][200]);
  EXPECT_EQ(out[2], n.value[2][10]);
  p.std[1] = 0;
  EXPECT_THROW(make_input_normaliser(p), Error);
  p = main_model_preprocess();
  p.color = "YUV";
  EXPECT_THROW(make_input_normaliser(p), Error);
}

// The host default of run_u8 (the cpu backends): normalise, then run() per sub-batch, logits in order.
TEST(RunU8, HostDefaultIsRunPerSubBatch) {
  const Model model = builtin_mobilenet_v2();
  auto backend = make_backend("cpu");
  if (!backend->availability().available) GTEST_SKIP() << "cpu backend: " << backend->availability().reason;
  PrepareConfig pc;
  pc.batch = 2;
  pc.height = 40;
  pc.width = 48;
  auto net = backend->prepare(model, pc);
  const InputNormaliser n = make_input_normaliser(main_model_preprocess());
  const int64_t images = 6;
  const size_t per_image = size_t{3} * 40 * 48;
  const std::vector<uint8_t> bytes = random_bytes(per_image * images, 7);
  EXPECT_EQ(net->u8_path().rfind("host", 0), 0u);
  const Tensor all = net->run_u8(bytes.data(), images, n);
  ASSERT_EQ(all.shape.n, images);
  const int64_t classes = all.shape.per_image();
  for (int64_t k = 0; k < images / 2; ++k) {
    Tensor sub(Shape{2, 3, 40, 48});
    normalise_u8(bytes.data() + k * 2 * per_image, 2, 40, 48, n, sub.data.data());
    const Tensor logits = net->run(sub);
    const std::vector<float> part(all.data.begin() + k * 2 * classes, all.data.begin() + (k + 1) * 2 * classes);
    EXPECT_EQ(part, logits.data) << "sub-batch " << k;
  }
  EXPECT_THROW(net->run_u8(bytes.data(), 3, n), UsageError);  // not a whole number of sub-batches
  EXPECT_THROW(net->run_u8(nullptr, 2, n), UsageError);
}

TEST(RunU8, BenchTimesTheU8PathAndTheFileKeepsIt) {
  const Model model = builtin_mobilenet_v2();
  BenchConfig c;
  c.backend = "cpu";
  c.batch = 4;
  c.height = 32;
  c.width = 32;
  c.warmup = 0;
  c.iters = 2;
  c.u8_input = true;
  c.sub_batch = 2;
  const BenchResult r = run_bench(model, c);
  ASSERT_TRUE(r.u8_ms.has_value());
  EXPECT_GT(r.u8_ms->median, 0);
  EXPECT_NEAR(r.u8_images_per_s, 4 * 1000.0 / r.u8_ms->median, 1e-6 * r.u8_images_per_s);
  EXPECT_EQ(r.config.sub_batch, 2);
  EXPECT_FALSE(r.u8_path.empty());
  TempDir tmp;
  write_file(tmp.file("b.json"), bench_json({r}, report_model(model, "test")));
  const BenchFile f = read_bench_file(tmp.file("b.json"));
  ASSERT_EQ(f.results.size(), 1u);
  const BenchResult& back = f.results.front();
  ASSERT_TRUE(back.u8_ms.has_value());
  EXPECT_DOUBLE_EQ(back.u8_ms->median, r.u8_ms->median);
  EXPECT_EQ(back.config.sub_batch, 2);
  EXPECT_EQ(back.u8_path, r.u8_path);

  c.sub_batch = 3;  // does not divide 4
  EXPECT_THROW(run_bench(model, c), UsageError);
  c.sub_batch = 2;
  c.u8_input = false;  // a sub-batch without the u8 path
  EXPECT_THROW(run_bench(model, c), UsageError);
}

}  // namespace
}  // namespace mnv2::test
