// Tests of the image pipeline: decoding files (odd formats and hostile bytes), preprocessing against the
// golden inputs, odd sizes, channel order, and batching.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#ifdef MNV2_TEST_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif

#include "mnv2/error.h"
#include "mnv2/image.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// The main model's convention (shared/weights/README.md), written out so these tests do not need the importer.
Preprocess main_model_preprocess() {
  Preprocess p;
  p.color = "RGB";
  p.resize = 256;
  p.crop = 224;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.5f, 0.5f, 0.5f};
  return p;
}

Image8 solid_image(int width, int height, uint8_t r, uint8_t g, uint8_t b) {
  Image8 image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < image.rgb.size(); i += 3) {
    image.rgb[i] = r;
    image.rgb[i + 1] = g;
    image.rgb[i + 2] = b;
  }
  return image;
}

Image8 random_image(int width, int height, uint32_t seed) {
  std::mt19937 rng(seed);
  Image8 image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<size_t>(width) * height * 3);
  for (uint8_t& v : image.rgb) v = static_cast<uint8_t>(rng() & 0xFF);
  return image;
}

float normalised(uint8_t v, float mean, float std) { return static_cast<float>((v / 255.0 - mean) / std); }

// Runs `fn`, expecting mnv2::Error whose message names `path` and contains `fragment`.
template <class Fn>
void expect_error_naming(const std::string& path, const std::string& fragment, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no error for " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << "message does not name the file: " << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << message;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an mnv2::Error for " << path << ": " << e.what();
  }
}

#define SKIP_WITHOUT_DECODER()                                                  \
  do {                                                                          \
    if (!image_decoding_available()) GTEST_SKIP() << "built without imgcodecs"; \
  } while (0)

// ---- preprocessing ----

TEST(ImagePreprocess, ReproducesGoldenInputs) {
  SKIP_WITHOUT_DECODER();
  for (const std::string& name : golden_image_names()) {
    SCOPED_TRACE(name);
    const Golden golden = read_golden(name);
    ASSERT_FALSE(golden.image.empty());
    const Image8 image = decode_image_file(shared_path("images/" + golden.image));
    Image8 crop;
    const Tensor t = preprocess(image, main_model_preprocess(), &crop);
    ASSERT_EQ(t.shape, (Shape{1, 3, 224, 224}));
    ASSERT_EQ(t.data.size(), golden.input.size());
    double max_abs = 0.0;
    for (size_t i = 0; i < t.data.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(t.data[i]) - golden.input[i]));
    }
    std::printf("[ golden   ] %-13s %4dx%-4d max abs diff %.3g\n", name.c_str(), image.width, image.height, max_abs);
    RecordProperty(name + "_max_abs", std::to_string(max_abs));
    EXPECT_LT(max_abs, 1e-5);

    // The 8-bit crop is what the tensor was made from.
    ASSERT_EQ(crop.width, 224);
    ASSERT_EQ(crop.height, 224);
    ASSERT_EQ(crop.rgb.size(), 224u * 224u * 3u);
    for (int c = 0; c < 3; ++c) {
      for (int i : {0, 1000, 224 * 112 + 112, 224 * 224 - 1}) {
        EXPECT_EQ(t.data[c * 224 * 224 + i], normalised(crop.rgb[i * 3 + c], 0.5f, 0.5f));
      }
    }
  }
}

TEST(ImagePreprocess, TinyAndExtremeAspectRatiosGiveTheCropSize) {
  const Preprocess p = main_model_preprocess();
  // 16384x4 would resize to 1048576x256 (768 MiB); only its crop window is computed.
  const std::vector<std::pair<int, int>> sizes = {{1, 1},     {3000, 10}, {10, 3000}, {224, 224},
                                                  {225, 223}, {16384, 4}, {2, 16384}};
  for (auto [w, h] : sizes) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const Image8 image = solid_image(w, h, 10, 128, 250);
    Image8 crop;
    const Tensor t = preprocess(image, p, &crop);
    ASSERT_EQ(t.shape, (Shape{1, 3, 224, 224}));
    ASSERT_EQ(crop.width, 224);
    ASSERT_EQ(crop.height, 224);
    // A solid colour stays that colour through a bilinear resize.
    const uint8_t rgb[3] = {10, 128, 250};
    for (int c = 0; c < 3; ++c) {
      const float want = normalised(rgb[c], 0.5f, 0.5f);
      for (size_t i = 0; i < 224 * 224; ++i) ASSERT_EQ(t.data[c * 224 * 224 + i], want) << "c " << c << " i " << i;
    }
  }
}

// Long thin images skip the full resize and compute only the crop window; that must still be exactly
// cv::resize followed by the centre crop, as the reference does it.
TEST(ImagePreprocess, LongThinImagesMatchAFullResize) {
  const Preprocess p = main_model_preprocess();
  const std::vector<std::pair<int, int>> sizes = {{3000, 10}, {10, 3000}, {2500, 9}, {7, 2711}};
  for (auto [w, h] : sizes) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const Image8 image = random_image(w, h, static_cast<uint32_t>(w * 31 + h));
    const double s = 256.0 / std::min(w, h);
    const int new_w = std::max(224, static_cast<int>(std::nearbyint(w * s)));
    const int new_h = std::max(224, static_cast<int>(std::nearbyint(h * s)));
    ASSERT_GT(int64_t{new_w} * new_h, int64_t{1} << 24) << "this size no longer takes the crop-window path";
    cv::Mat resized;
    cv::resize(cv::Mat(h, w, CV_8UC3, const_cast<uint8_t*>(image.rgb.data())), resized, cv::Size(new_w, new_h), 0, 0,
               cv::INTER_LINEAR);
    const cv::Mat want = resized(cv::Rect((new_w - 224) / 2, (new_h - 224) / 2, 224, 224));
    Image8 crop;
    preprocess(image, p, &crop);
    int differing = 0;
    for (int y = 0; y < 224; ++y) {
      for (int x = 0; x < 224 * 3; ++x)
        differing += crop.rgb[static_cast<size_t>(y) * 224 * 3 + x] != want.at<uint8_t>(y, x);
    }
    EXPECT_EQ(differing, 0);
  }
}

TEST(ImagePreprocess, ExtremeAspectRatioKeepsTheCentre) {
  // Left half red, right half blue: the centre crop straddles the edge, red on its left, blue on its right.
  Image8 image = solid_image(16384, 4, 255, 0, 0);
  for (int y = 0; y < 4; ++y) {
    for (int x = 8192; x < 16384; ++x) {
      uint8_t* px = &image.rgb[(static_cast<size_t>(y) * 16384 + x) * 3];
      px[0] = 0;
      px[2] = 255;
    }
  }
  Image8 crop;
  preprocess(image, main_model_preprocess(), &crop);
  for (int y : {0, 111, 223}) {
    const uint8_t* left = &crop.rgb[static_cast<size_t>(y) * 224 * 3];
    const uint8_t* right = &crop.rgb[(static_cast<size_t>(y) * 224 + 223) * 3];
    EXPECT_EQ(left[0], 255);
    EXPECT_EQ(left[2], 0);
    EXPECT_EQ(right[0], 0);
    EXPECT_EQ(right[2], 255);
  }
}

TEST(ImagePreprocess, BgrOrderSwapsChannelsAndTheirMeanStd) {
  Preprocess rgb;
  rgb.mean = {0.1f, 0.5f, 0.9f};
  rgb.std = {0.2f, 0.3f, 0.4f};
  Preprocess bgr = rgb;
  bgr.color = "BGR";
  const Image8 image = random_image(300, 280, 7);
  const Tensor a = preprocess(image, rgb);
  const Tensor b = preprocess(image, bgr);
  ASSERT_EQ(a.shape, b.shape);
  const size_t plane = 224 * 224;
  for (int c = 0; c < 3; ++c) {
    for (size_t i = 0; i < plane; ++i) {
      ASSERT_EQ(b.data[c * plane + i], a.data[(2 - c) * plane + i]) << "BGR channel " << c << " index " << i;
    }
  }
}

TEST(ImagePreprocess, ImagenetDefaultsNormalisePerChannel) {
  const Preprocess p;  // ImageNet mean/std, RGB
  const Tensor t = preprocess(solid_image(500, 400, 0, 128, 255), p);
  const size_t plane = 224 * 224;
  EXPECT_NEAR(t.data[0], (0.0 - 0.485) / 0.229, 1e-5);
  EXPECT_NEAR(t.data[plane + 5], (128 / 255.0 - 0.456) / 0.224, 1e-5);
  EXPECT_NEAR(t.data[2 * plane + 77], (1.0 - 0.406) / 0.225, 1e-5);
}

TEST(ImagePreprocess, OtherResizeAndCropSizes) {
  Preprocess p = main_model_preprocess();
  p.resize = 160;
  p.crop = 160;  // crop == resize is allowed: the short side is kept whole
  Image8 crop;
  const Tensor t = preprocess(random_image(640, 480, 3), p, &crop);
  EXPECT_EQ(t.shape, (Shape{1, 3, 160, 160}));
  EXPECT_EQ(crop.width, 160);
}

TEST(ImagePreprocess, RejectsBadImagesAndSettings) {
  const Image8 good = solid_image(32, 32, 1, 2, 3);
  const Preprocess p = main_model_preprocess();

  EXPECT_THROW(preprocess(Image8{}, p), Error);
  Image8 short_buffer = good;
  short_buffer.rgb.pop_back();
  EXPECT_THROW(preprocess(short_buffer, p), Error);
  Image8 negative = good;
  negative.width = -32;
  EXPECT_THROW(preprocess(negative, p), Error);

  auto with = [&](auto change) {
    Preprocess q = p;
    change(q);
    return q;
  };
  // Preprocessing parameters are the model's: a bad one is an Error, never a UsageError (the user's fault).
  const auto refused = [&](const Preprocess& q) {
    try {
      (void)preprocess(good, q);
    } catch (const UsageError& e) {
      return std::string("UsageError: ") + e.what();
    } catch (const Error&) {
      return std::string("Error");
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(with([](Preprocess& q) { q.resize = 0; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.resize = -5; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.crop = 0; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.crop = 300; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.resize = 1 << 20; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.color = "rgb "; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.std[1] = 0.0f; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.mean[2] = NAN; })), "Error");
  // Finite but absurd: (v/255 - 1e38) / 1e-38 is -Inf in float, and every class came out "nan%".
  EXPECT_EQ(refused(with([](Preprocess& q) { q.mean = {1e38f, 1e38f, 1e38f}; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.std = {1e-38f, 1e-38f, 1e-38f}; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) { q.std[0] = 1e7f; })), "Error");
  EXPECT_EQ(refused(with([](Preprocess& q) {
              q.mean = {1e6f, -1e6f, 0.0f}, q.std = {1e-6f, 1e6f, 1.0f};
            })),
            "accepted");
}

// ---- batching ----

TEST(ImageBatch, StacksImagesInOrder) {
  Tensor a(Shape{1, 3, 4, 4});
  Tensor b(Shape{2, 3, 4, 4});
  std::fill(a.data.begin(), a.data.end(), 1.0f);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>(i);
  const Tensor s = stack_batch({a, b});
  EXPECT_EQ(s.shape, (Shape{3, 3, 4, 4}));
  ASSERT_EQ(s.data.size(), 3u * 48u);
  EXPECT_EQ(s.data[47], 1.0f);
  EXPECT_EQ(s.data[48], 0.0f);
  EXPECT_EQ(s.data[48 + 95], 95.0f);
}

TEST(ImageBatch, RejectsEmptyAndMismatchedShapes) {
  EXPECT_THROW(stack_batch({}), Error);
  EXPECT_THROW(stack_batch({Tensor(Shape{1, 3, 4, 4}), Tensor(Shape{1, 3, 4, 5})}), Error);
  EXPECT_THROW(stack_batch({Tensor(Shape{1, 3, 4, 4}), Tensor(Shape{1, 1, 4, 4})}), Error);
  Tensor bad(Shape{1, 3, 4, 4});
  bad.data.pop_back();
  EXPECT_THROW(stack_batch({Tensor(Shape{1, 3, 4, 4}), bad}), Error);
}

// ---- decoding ----

TEST(ImageDecode, ReportsWhetherThisBuildDecodes) {
  if (image_decoding_available()) {
    const Image8 image = decode_image_file(shared_path("images/cat.bmp"));
    EXPECT_EQ(image.width, 512);
    EXPECT_EQ(image.height, 341);
    EXPECT_EQ(image.rgb.size(), 512u * 341u * 3u);
  } else {
    expect_error_naming(shared_path("images/cat.bmp"), "--tensor",
                        [] { decode_image_file(shared_path("images/cat.bmp")); });
  }
}

TEST(ImageDecode, RejectsBadFilesNamingThem) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  const std::string hot_dog = read_file(shared_path("images/hot_dog.jpg"));

  expect_error_naming(dir.file("missing.png"), "cannot open", [&] { decode_image_file(dir.file("missing.png")); });
  expect_error_naming(dir.path(), "directory", [&] { decode_image_file(dir.path()); });

  write_file(dir.file("empty.jpg"), "");
  expect_error_naming(dir.file("empty.jpg"), "empty", [&] { decode_image_file(dir.file("empty.jpg")); });

  // Cut inside the EXIF header, and cut in the middle of the compressed data (which libjpeg alone would
  // decode into a half-grey picture with only a warning).
  write_file(dir.file("head.jpg"), hot_dog.substr(0, 100));
  expect_error_naming(dir.file("head.jpg"), "not a decodable image", [&] { decode_image_file(dir.file("head.jpg")); });
  write_file(dir.file("half.jpg"), hot_dog.substr(0, hot_dog.size() / 2));
  expect_error_naming(dir.file("half.jpg"), "truncated", [&] { decode_image_file(dir.file("half.jpg")); });

  std::mt19937 rng(42);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(rng() & 0xFF);
  write_file(dir.file("noise.png"), noise);
  expect_error_naming(dir.file("noise.png"), "not a decodable image",
                      [&] { decode_image_file(dir.file("noise.png")); });

  write_file(dir.file("notes.jpg"), "This is a text file, not a photograph.\n");
  expect_error_naming(dir.file("notes.jpg"), "not a decodable image",
                      [&] { decode_image_file(dir.file("notes.jpg")); });
}

// Little-endian helpers for hand-made headers.
void put_le(std::string& s, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_be(std::string& s, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xFF);
}

TEST(ImageDecode, RejectsOversizedHeadersBeforeDecoding) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;

  // A 54-byte BMP claiming 40000x40000 (4.8 GB of pixels); 20000x20000 is under OpenCV's own pixel cap, so
  // OpenCV would allocate 1.2 GB before noticing the data is missing.
  for (uint32_t side : {40000u, 20000u}) {
    std::string bmp(54, '\0');
    bmp[0] = 'B';
    bmp[1] = 'M';
    put_le(bmp, 2, 54, 4);
    put_le(bmp, 10, 54, 4);
    put_le(bmp, 14, 40, 4);  // BITMAPINFOHEADER
    put_le(bmp, 18, side, 4);
    put_le(bmp, 22, side, 4);
    put_le(bmp, 26, 1, 2);   // planes
    put_le(bmp, 28, 24, 2);  // bits per pixel
    const std::string path = dir.file("huge" + std::to_string(side) + ".bmp");
    write_file(path, bmp);
    const std::string dims = std::to_string(side) + "x" + std::to_string(side);
    expect_error_naming(path, "image is " + dims + ", larger than the 16384-pixel limit per side",
                        [&] { decode_image_file(path); });
  }

  // Top-down BMP (negative height) of 16385 rows.
  {
    std::string bmp(54, '\0');
    bmp[0] = 'B';
    bmp[1] = 'M';
    put_le(bmp, 14, 40, 4);
    put_le(bmp, 18, 10, 4);
    put_le(bmp, 22, static_cast<uint32_t>(-16385), 4);
    write_file(dir.file("tall.bmp"), bmp);
    expect_error_naming(dir.file("tall.bmp"), "10x16385", [&] { decode_image_file(dir.file("tall.bmp")); });
  }

  // PNG signature and an IHDR of 16385x1.
  {
    std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(25, '\0');
    put_be(png, 8, 13, 4);
    png.replace(12, 4, "IHDR");
    put_be(png, 16, 16385, 4);
    put_be(png, 20, 1, 4);
    png[24] = 8;  // bit depth
    png[25] = 2;  // RGB
    write_file(dir.file("wide.png"), png);
    expect_error_naming(dir.file("wide.png"), "16385x1", [&] { decode_image_file(dir.file("wide.png")); });
  }

  // JPEG with an APP0 segment, then a baseline frame header of 30000x100 (no scan at all).
  {
    std::string jpeg = std::string("\xFF\xD8\xFF\xE0\x00\x04\x00\x00", 8);
    std::string sof = std::string("\xFF\xC0", 2) + std::string(11, '\0');
    put_be(sof, 2, 11, 2);     // segment length
    sof[4] = 8;                // precision
    put_be(sof, 5, 100, 2);    // height
    put_be(sof, 7, 30000, 2);  // width
    sof[9] = 1;                // one component
    write_file(dir.file("wide.jpg"), jpeg + sof);
    expect_error_naming(dir.file("wide.jpg"), "30000x100", [&] { decode_image_file(dir.file("wide.jpg")); });
  }
}

TEST(ImageDecode, HostileBytesThrowOrDecodeButNeverCrash) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  const std::vector<std::string> seeds = {read_file(shared_path("images/hot_dog.jpg")),
                                          read_file(shared_path("images/cat.bmp"))};
  std::mt19937 rng(1234);
  int decoded = 0, rejected = 0;
  for (size_t seed = 0; seed < seeds.size(); ++seed) {
    const std::string& original = seeds[seed];
    for (int round = 0; round < 24; ++round) {
      std::string bytes = original;
      if (round % 3 == 0) {
        bytes.resize(rng() % bytes.size() + 1);  // truncated anywhere
      } else {
        const int flips = 1 + static_cast<int>(rng() % 16);  // corrupted anywhere, headers included
        for (int f = 0; f < flips; ++f) {
          const size_t at = (round % 3 == 1) ? rng() % std::min<size_t>(bytes.size(), 1024) : rng() % bytes.size();
          bytes[at] = static_cast<char>(rng() & 0xFF);
        }
      }
      const std::string path = dir.file("fuzz" + std::to_string(round) + (seed == 0 ? ".jpg" : ".bmp"));
      write_file(path, bytes);
      try {
        const Image8 image = decode_image_file(path);
        ASSERT_GT(image.width, 0);
        ASSERT_GT(image.height, 0);
        ASSERT_LE(image.width, kMaxImageSide);
        ASSERT_LE(image.height, kMaxImageSide);
        ASSERT_EQ(image.rgb.size(), static_cast<size_t>(image.width) * image.height * 3);
        ++decoded;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        ++rejected;
      }
    }
  }
  std::printf("[ fuzz     ] %d decoded, %d rejected\n", decoded, rejected);
  EXPECT_GT(rejected, 0);
}

#ifdef MNV2_TEST_HAVE_IMGCODECS

// Writes `mat` (OpenCV's BGR/BGRA/gray channel order) with cv::imwrite and decodes it back.
Image8 round_trip(const TempDir& dir, const std::string& name, const cv::Mat& mat) {
  const std::string path = dir.file(name);
  if (!cv::imwrite(path, mat)) throw std::runtime_error("cv::imwrite failed for " + path);
  return decode_image_file(path);
}

const uint8_t* pixel(const Image8& image, int x, int y) {
  return &image.rgb[(static_cast<size_t>(y) * image.width + x) * 3];
}

TEST(ImageDecode, GrayscaleBecomesRgb) {
  TempDir dir;
  cv::Mat gray(17, 23, CV_8UC1);
  for (int y = 0; y < gray.rows; ++y)
    for (int x = 0; x < gray.cols; ++x) gray.at<uint8_t>(y, x) = static_cast<uint8_t>(x * 11 + y * 3);
  for (const char* name : {"gray.png", "gray.bmp"}) {
    SCOPED_TRACE(name);
    const Image8 image = round_trip(dir, name, gray);
    ASSERT_EQ(image.width, 23);
    ASSERT_EQ(image.height, 17);
    for (int y = 0; y < gray.rows; ++y) {
      for (int x = 0; x < gray.cols; ++x) {
        const uint8_t g = gray.at<uint8_t>(y, x);
        const uint8_t* px = pixel(image, x, y);
        ASSERT_EQ(px[0], g);
        ASSERT_EQ(px[1], g);
        ASSERT_EQ(px[2], g);
      }
    }
  }
}

TEST(ImageDecode, BgraDropsAlphaAndBecomesRgb) {
  TempDir dir;
  cv::Mat bgra(9, 14, CV_8UC4);
  for (int y = 0; y < bgra.rows; ++y) {
    for (int x = 0; x < bgra.cols; ++x) {
      // Alpha runs from fully transparent to opaque: the colour must not be premultiplied or blended.
      bgra.at<cv::Vec4b>(y, x) = cv::Vec4b(static_cast<uint8_t>(x * 17), static_cast<uint8_t>(y * 25),
                                           static_cast<uint8_t>(200 - x), static_cast<uint8_t>((x + y) * 11));
    }
  }
  const Image8 image = round_trip(dir, "bgra.png", bgra);
  ASSERT_EQ(image.width, 14);
  ASSERT_EQ(image.height, 9);
  for (int y = 0; y < bgra.rows; ++y) {
    for (int x = 0; x < bgra.cols; ++x) {
      const cv::Vec4b v = bgra.at<cv::Vec4b>(y, x);
      const uint8_t* px = pixel(image, x, y);
      ASSERT_EQ(px[0], v[2]) << x << "," << y;  // R
      ASSERT_EQ(px[1], v[1]) << x << "," << y;  // G
      ASSERT_EQ(px[2], v[0]) << x << "," << y;  // B
    }
  }
}

TEST(ImageDecode, SixteenBitRoundsToEightBit) {
  TempDir dir;
  // Values around the rounding edges of v / 257: 128 -> 0.498, 129 -> 0.502.
  const uint16_t samples[] = {0, 1, 128, 129, 257, 25700 + 128, 25700 + 129, 32767, 32768, 65407, 65535};
  const int n = static_cast<int>(std::size(samples));
  cv::Mat bgr16(1, n, CV_16UC3), gray16(1, n, CV_16UC1);
  for (int x = 0; x < n; ++x) {
    bgr16.at<cv::Vec3w>(0, x) = cv::Vec3w(samples[x], samples[n - 1 - x], 1000);
    gray16.at<uint16_t>(0, x) = samples[x];
  }
  auto expected = [](uint16_t v) { return static_cast<uint8_t>(std::lround(v / 257.0)); };
  const Image8 color = round_trip(dir, "color16.png", bgr16);
  const Image8 gray = round_trip(dir, "gray16.png", gray16);
  ASSERT_EQ(color.width, n);
  ASSERT_EQ(gray.width, n);
  for (int x = 0; x < n; ++x) {
    SCOPED_TRACE(samples[x]);
    EXPECT_EQ(pixel(color, x, 0)[0], expected(1000));
    EXPECT_EQ(pixel(color, x, 0)[1], expected(samples[n - 1 - x]));
    EXPECT_EQ(pixel(color, x, 0)[2], expected(samples[x]));
    for (int c = 0; c < 3; ++c) EXPECT_EQ(pixel(gray, x, 0)[c], expected(samples[x]));
  }
}

TEST(ImageDecode, ColourJpegComesOutRgb) {
  TempDir dir;
  cv::Mat bgr(32, 32, CV_8UC3, cv::Scalar(255, 0, 0));  // pure blue in OpenCV's BGR
  const Image8 image = round_trip(dir, "blue.jpg", bgr);
  const uint8_t* px = pixel(image, 16, 16);
  EXPECT_LT(px[0], 10);
  EXPECT_LT(px[1], 10);
  EXPECT_GT(px[2], 245);
}

TEST(ImageDecode, JpegExifOrientationIsApplied) {
  // 40 wide, 20 tall: left half black, right half white. EXIF orientation 6 says "rotate 90 degrees
  // clockwise to display", which puts the stored left half on top of a 20x40 picture.
  cv::Mat stored(20, 40, CV_8UC3, cv::Scalar(0, 0, 0));
  stored(cv::Rect(20, 0, 20, 20)).setTo(cv::Scalar(255, 255, 255));
  std::vector<uint8_t> encoded;
  ASSERT_TRUE(cv::imencode(".jpg", stored, encoded, {cv::IMWRITE_JPEG_QUALITY, 95}));
  // APP1 "Exif": little-endian TIFF header, one IFD entry (Orientation, SHORT, 1 value = 6).
  const std::string app1 = std::string(
      "\xFF\xE1\x00\x22"
      "Exif\x00\x00"
      "II\x2A\x00\x08\x00\x00\x00"
      "\x01\x00"
      "\x12\x01\x03\x00\x01\x00\x00\x00\x06\x00\x00\x00"
      "\x00\x00\x00\x00",
      36);
  std::string bytes(encoded.begin(), encoded.end());
  bytes.insert(2, app1);
  TempDir dir;
  write_file(dir.file("rotated.jpg"), bytes);
  const Image8 image = decode_image_file(dir.file("rotated.jpg"));
  ASSERT_EQ(image.width, 20);
  ASSERT_EQ(image.height, 40);
  EXPECT_LT(pixel(image, 10, 10)[0], 30);
  EXPECT_GT(pixel(image, 10, 30)[0], 225);
}

#endif  // MNV2_TEST_HAVE_IMGCODECS

}  // namespace
}  // namespace mnv2::test
