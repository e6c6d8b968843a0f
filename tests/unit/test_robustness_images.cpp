// Hostile image files beyond tests/unit/test_image.cpp: formats outside the supported set never reach
// OpenCV's other readers (GDCM aborted the process on a fuzzed file), headers that claim more pixels than
// the file can hold are refused before the decoder allocates them, every format's sides are checked from
// its header, and the odd-but-valid images users have (grayscale, alpha, 16-bit, 1x1, long strips, TIFF,
// WebP, PPM) go all the way through decoding and preprocessing.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/image.h"
#include "test_support.h"

#ifdef MNV2_TEST_HAVE_IMGCODECS
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace mnv2::test {
namespace {

#define SKIP_WITHOUT_DECODER() \
  if (!image_decoding_available()) GTEST_SKIP() << "this build has no image decoder"

void expect_refused(const std::string& path, const std::string& part) {
  try {
    const Image8 image = decode_image_file(path);
    ADD_FAILURE() << path << " decoded to " << image.width << "x" << image.height << "; expected '" << part << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nmissing: " << part;
  }
}

void put_le(std::string& s, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_be(std::string& s, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xFF);
}

TEST(RobustImages, OtherFormatsNeverReachTheirDecoders) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  // The fuzzer's find: 128 bytes of anything, then "DICM", made OpenCV hand the file to GDCM, which aborted.
  std::string dicom(140, '\0');
  dicom.replace(128, 4, "DICM");
  const std::vector<std::pair<std::string, std::string>> files = {
      {"scan.dcm", dicom},
      {"photo.jp2", std::string("\x00\x00\x00\x0cjP  \r\n\x87\n", 12) + std::string(64, '\0')},
      {"light.exr", std::string("\x76\x2f\x31\x01", 4) + std::string(64, '\0')},
      {"sky.hdr", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 2 +X 2\n" + std::string(16, '\0')},
      {"old.ras", std::string("\x59\xa6\x6a\x95", 4) + std::string(64, '\0')},
      {"depth.pfm", "PF\n2 2\n-1\n" + std::string(48, '\0')},
      {"image.pam", "P7\nWIDTH 2\nHEIGHT 2\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n" + std::string(12, '\0')},
  };
  for (const auto& [name, bytes] : files) {
    SCOPED_TRACE(name);
    write_file(dir.file(name), bytes);
    expect_refused(dir.file(name), "unknown or unsupported format");
  }
}

TEST(RobustImages, HeadersClaimingMoreThanTheFileHoldsAreRefusedBeforeDecoding) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  {
    // A 54-byte uncompressed BMP claiming 16000x16000 (768 MB of pixels): within the side limit, so only
    // the data-size check stops OpenCV allocating the whole image.
    std::string bmp(54, '\0');
    bmp[0] = 'B';
    bmp[1] = 'M';
    put_le(bmp, 10, 54, 4);
    put_le(bmp, 14, 40, 4);
    put_le(bmp, 18, 16000, 4);
    put_le(bmp, 22, 16000, 4);
    put_le(bmp, 26, 1, 2);
    put_le(bmp, 28, 24, 2);
    write_file(dir.file("claims.bmp"), bmp);
    expect_refused(dir.file("claims.bmp"), "truncated BMP");
  }
  {
    // A PNG header of 16000x16000 RGBA at 16 bits (2 GB) and no data: deflate cannot inflate 45 bytes that far.
    std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(37, '\0');
    put_be(png, 8, 13, 4);
    png.replace(12, 4, "IHDR");
    put_be(png, 16, 16000, 4);
    put_be(png, 20, 16000, 4);
    png[24] = 16;
    png[25] = 6;
    write_file(dir.file("claims.png"), png);
    expect_refused(dir.file("claims.png"), "cannot come from");
  }
}

TEST(RobustImages, EveryFormatsSidesAreCheckedFromItsHeader) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  write_file(dir.file("wide.ppm"), "P6\n# a comment\n20000 3\n255\n" + std::string(64, '\0'));
  expect_refused(dir.file("wide.ppm"), "20000x3, larger than the 16384-pixel limit");
  write_file(dir.file("tall.pgm"), "P5 2 99999999999 255\n" + std::string(64, '\0'));
  expect_refused(dir.file("tall.pgm"), "16384-pixel limit");

  // Little-endian TIFF whose first directory says 30000 x 10 (LONG width, SHORT length).
  std::string tiff(64, '\0');
  tiff.replace(0, 4, std::string("II\x2a\x00", 4));
  put_le(tiff, 4, 8, 4);     // first directory at 8
  put_le(tiff, 8, 2, 2);     // two entries
  put_le(tiff, 10, 256, 2);  // ImageWidth
  put_le(tiff, 12, 4, 2);    // LONG
  put_le(tiff, 14, 1, 4);
  put_le(tiff, 18, 30000, 4);
  put_le(tiff, 22, 257, 2);  // ImageLength
  put_le(tiff, 24, 3, 2);    // SHORT
  put_le(tiff, 26, 1, 4);
  put_le(tiff, 30, 10, 2);
  write_file(dir.file("wide.tif"), tiff);
  expect_refused(dir.file("wide.tif"), "30000x10");
  // The same in big-endian order.
  std::string mm(64, '\0');
  mm.replace(0, 4, std::string("MM\x00\x2a", 4));
  put_be(mm, 4, 8, 4);
  put_be(mm, 8, 2, 2);
  put_be(mm, 10, 256, 2);
  put_be(mm, 12, 3, 2);
  put_be(mm, 14, 1, 4);
  put_be(mm, 18, 12, 2);
  put_be(mm, 22, 257, 2);
  put_be(mm, 24, 4, 2);
  put_be(mm, 26, 1, 4);
  put_be(mm, 30, 50000, 4);
  write_file(dir.file("tall.tif"), mm);
  expect_refused(dir.file("tall.tif"), "12x50000");

  // WebP extended format with a 20000 x 20000 canvas.
  std::string webp(40, '\0');
  webp.replace(0, 4, "RIFF");
  put_le(webp, 4, 32, 4);
  webp.replace(8, 8, "WEBPVP8X");
  put_le(webp, 16, 10, 4);
  put_le(webp, 24, 19999, 3);
  put_le(webp, 27, 19999, 3);
  write_file(dir.file("canvas.webp"), webp);
  expect_refused(dir.file("canvas.webp"), "20000x20000");
}

// Issue 30, finding 13: a TIFF's sides in every integer type libtiff takes for them (a side given as SSHORT or SLONG
// decoded to 2.7 GB before the decoded size was refused), in either byte order, classic and BigTIFF.
TEST(RobustImages, TiffSidesAreReadInEveryIntegerType) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  struct Side {
    uint32_t type;
    int bytes;
  };
  // SSHORT (8), SLONG (9), SHORT (3), LONG (4): each as the width (20000) with a SHORT length of 10.
  for (const Side side : {Side{8, 2}, Side{9, 4}, Side{3, 2}, Side{4, 4}}) {
    for (const bool little : {true, false}) {
      SCOPED_TRACE("type " + std::to_string(side.type) + (little ? " II" : " MM"));
      auto put = [&](std::string& s, size_t at, uint32_t v, int bytes) {
        little ? put_le(s, at, v, bytes) : put_be(s, at, v, bytes);
      };
      std::string tiff(64, '\0');
      tiff.replace(0, 4, little ? std::string("II\x2a\x00", 4) : std::string("MM\x00\x2a", 4));
      put(tiff, 4, 8, 4);
      put(tiff, 8, 2, 2);
      put(tiff, 10, 256, 2);
      put(tiff, 12, side.type, 2);
      put(tiff, 14, 1, 4);
      put(tiff, 18, 20000, side.bytes);
      put(tiff, 22, 257, 2);
      put(tiff, 24, 3, 2);
      put(tiff, 26, 1, 4);
      put(tiff, 30, 10, 2);
      const std::string path = dir.file("t" + std::to_string(side.type) + (little ? "ii" : "mm") + ".tif");
      write_file(path, tiff);
      expect_refused(path, "20000x10, larger than the 16384-pixel limit");
    }
  }
  // BigTIFF (43): 8-byte counts and offsets, a SLONG8 (17) length of 40000.
  std::string big(96, '\0');
  big.replace(0, 4, std::string("II\x2b\x00", 4));
  put_le(big, 4, 8, 2);   // offset size
  put_le(big, 8, 16, 4);  // first directory at 16 (8 bytes)
  put_le(big, 16, 2, 4);  // two entries (8 bytes)
  put_le(big, 24, 256, 2);
  put_le(big, 26, 3, 2);  // SHORT width 12
  put_le(big, 28, 1, 4);
  put_le(big, 36, 12, 2);
  put_le(big, 44, 257, 2);
  put_le(big, 46, 17, 2);  // SLONG8 length 40000
  put_le(big, 48, 1, 4);
  put_le(big, 56, 40000, 4);
  write_file(dir.file("big.tif"), big);
  expect_refused(dir.file("big.tif"), "12x40000");
}

// Issue 30, finding 13: a JPEG's scans are counted before the decoder runs. 5,000 empty scans over a 16384x16384 gray
// frame took 71 s and 1.1 GB; more than 100 scans (encoders write a dozen or so) are refused from the markers alone.
TEST(RobustImages, AJpegOfTooManyScansIsRefusedBeforeDecoding) {
  SKIP_WITHOUT_DECODER();
  TempDir dir;
  auto jpeg = [](int scans) {
    std::string j("\xFF\xD8", 2);
    // SOF2 (progressive): 8-bit, 16384 x 16384, one component.
    j += std::string("\xFF\xC2\x00\x0B\x08\x40\x00\x40\x00\x01\x01\x11\x00", 13);
    for (int i = 0; i < scans; ++i) {
      // SOS: one component, spectral band 1..63, then one byte of entropy-coded data (and a stuffed 0xFF).
      j += std::string("\xFF\xDA\x00\x08\x01\x01\x00\x01\x3F\x00", 10);
      j += std::string("\x12\xFF\x00", 3);
    }
    return j + std::string("\xFF\xD9", 2);
  };
  write_file(dir.file("scans.jpg"), jpeg(101));
  expect_refused(dir.file("scans.jpg"), "a JPEG of more than 100 scans");
  // 100 scans pass the count (this file then fails in the decoder: it has no tables).
  write_file(dir.file("hundred.jpg"), jpeg(100));
  try {
    (void)decode_image_file(dir.file("hundred.jpg"));
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("scans"), std::string::npos) << e.what();
  }
}

#ifdef MNV2_TEST_HAVE_IMGCODECS

// Writes `mat` with OpenCV, then decodes and preprocesses it as the CLI does.
Image8 through_the_pipeline(const TempDir& dir, const std::string& name, const cv::Mat& mat) {
  const std::string path = dir.file(name);
  std::vector<int> params;
  if (name.find("progressive") != std::string::npos) params = {cv::IMWRITE_JPEG_PROGRESSIVE, 1};
  if (name.find("restarts") != std::string::npos) params = {cv::IMWRITE_JPEG_RST_INTERVAL, 1};
  if (!cv::imwrite(path, mat, params)) throw std::runtime_error("cv::imwrite failed for " + path);
  Image8 image = decode_image_file(path);
  const Tensor t = preprocess(image, Preprocess{});
  EXPECT_EQ(t.shape, (Shape{1, 3, 224, 224})) << name;
  for (float v : t.data) {
    if (!std::isfinite(v)) {
      ADD_FAILURE() << name << ": non-finite input value";
      break;
    }
  }
  return image;
}

// A decode that runs out of memory (here: a 4096x4096 16-bit RGBA PNG, 128 MiB of pixels, under an address-space
// limit 48 MiB above what the process already maps) says so, instead of "not a decodable image" (issue 30).
TEST(RobustImages, DecodingOutOfMemoryIsSaidAsSuch) {
  SKIP_WITHOUT_DECODER();
#ifdef MNV2_TEST_HAVE_IMGCODECS
  TempDir dir;
  {
    const cv::Mat pixels(4096, 4096, CV_16UC4, cv::Scalar(1000, 2000, 3000, 65535));
    std::vector<uint8_t> png;
    ASSERT_TRUE(cv::imencode(".png", pixels, png));
    write_file(dir.file("big.png"), std::string(png.begin(), png.end()));
  }
  const std::string path = dir.file("big.png");
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 3;
    long vm_kib = 0;
    std::ifstream status("/proc/self/status");
    for (std::string key; status >> key;)
      if (key == "VmSize:") {
        status >> vm_kib;
        break;
      }
    const rlim_t limit = static_cast<rlim_t>(vm_kib) * 1024 + (rlim_t{48} << 20);
    const rlimit lim{limit, limit};
    if (vm_kib > 0 && ::setrlimit(RLIMIT_AS, &lim) == 0) {
      try {
        (void)decode_image_file(path);
        rc = 2;  // decoded: the limit did not bite
      } catch (const Error& e) {
        const std::string msg = e.what();
        rc =
            msg.find("not enough memory to decode") != std::string::npos && msg.find(path) != std::string::npos ? 0 : 1;
        if (rc != 0) std::fprintf(stderr, "message: %s\n", msg.c_str());
      } catch (...) {
        rc = 4;
      }
    }
    ::_exit(rc);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: another message, 2: decoded, 3: no limit set, 4: another exception";
#endif
}

TEST(RobustImages, OddButValidImagesGoAllTheWay) {
  TempDir dir;
  cv::Mat rgb(5, 7, CV_8UC3), gray(5, 7, CV_8UC1), rgba(5, 7, CV_8UC4), deep(5, 7, CV_16UC3);
  cv::randu(rgb, 0, 255);
  cv::randu(gray, 0, 255);
  cv::randu(rgba, 0, 255);
  cv::randu(deep, 0, 65535);
  cv::Mat large(48, 64, CV_8UC3);
  cv::randu(large, 0, 255);
  struct Case {
    std::string name;
    cv::Mat mat;
    int width, height;
  };
  const std::vector<Case> cases = {
      {"gray.png", gray, 7, 5},
      {"alpha.png", rgba, 7, 5},
      {"deep16.png", deep, 7, 5},
      {"deep16.tif", deep, 7, 5},
      {"one_pixel.png", cv::Mat(1, 1, CV_8UC3, cv::Scalar(10, 200, 30)), 1, 1},
      {"one_pixel.jpg", cv::Mat(1, 1, CV_8UC3, cv::Scalar(10, 200, 30)), 1, 1},
      {"strip_1x4000.png", cv::Mat(4000, 1, CV_8UC3, cv::Scalar(1, 2, 3)), 1, 4000},
      {"strip_4000x1.bmp", cv::Mat(1, 4000, CV_8UC3, cv::Scalar(1, 2, 3)), 4000, 1},
      {"photo.tif", rgb, 7, 5},
      {"progressive.jpg", large, 64, 48},  // written progressive: the scan walk over a real file's scans
      {"restarts.jpg", large, 64, 48},     // a restart marker after every MCU in the entropy-coded data
      {"photo.webp", rgb, 7, 5},
      {"photo.ppm", rgb, 7, 5},
      {"gray.pgm", gray, 7, 5},
      {"gray.bmp", gray, 7, 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Image8 image = through_the_pipeline(dir, c.name, c.mat);
    EXPECT_EQ(image.width, c.width);
    EXPECT_EQ(image.height, c.height);
  }
}

#endif

}  // namespace
}  // namespace mnv2::test
