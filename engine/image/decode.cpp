// Image files to 8-bit RGB pixels with OpenCV imgcodecs, with the size limit checked from the file header
// before any pixel memory is allocated. Builds without imgcodecs keep the API and say why they cannot decode.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/image.h"

#ifdef MNV2_HAVE_IMGCODECS
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace mnv2 {

#ifdef MNV2_HAVE_IMGCODECS

namespace {

// cv::imdecode takes the bytes as one cv::Mat row, whose width is an int.
constexpr uint64_t kMaxFileBytes = 0x7fffffffu;

[[noreturn]] void fail_undecodable(const std::string& path) {
  throw Error(path + ": not a decodable image (truncated or unsupported format)");
}

void check_sides(const std::string& path, int64_t width, int64_t height) {
  if (width > kMaxImageSide || height > kMaxImageSide) {
    throw Error(path + ": image is " + std::to_string(width) + "x" + std::to_string(height) + ", larger than the " +
                std::to_string(kMaxImageSide) + "-pixel limit per side");
  }
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw Error(path + ": cannot open image file (no such file)");
  if (ec) throw Error(path + ": cannot open image file (" + ec.message() + ")");
  if (fs::is_directory(st)) throw Error(path + ": cannot open image file (it is a directory)");
  // FIFOs and devices could block or never end; an image is a plain file.
  if (!fs::is_regular_file(st)) throw Error(path + ": cannot open image file (not a regular file)");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot open image file (" + ec.message() + ")");
  if (size == 0) throw Error(path + ": empty file, not an image");
  if (size > kMaxFileBytes) {
    throw Error(path + ": file is " + std::to_string(size) + " bytes, more than the " + std::to_string(kMaxFileBytes) +
                " an image file may have");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open image file for reading (permission denied?)");
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  // The file may have shrunk between stat and read; keep what was read and let the decoder judge it.
  bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  if (bytes.empty()) throw Error(path + ": cannot read image file");
  return bytes;
}

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }
uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | uint32_t(p[1]); }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }

// BMP: BITMAPCOREHEADER (12 bytes) has 16-bit sides; later headers have signed 32-bit sides, a negative
// height meaning rows stored top-down.
void check_bmp_header(const std::string& path, const std::vector<uint8_t>& b) {
  if (b.size() < 26) return;
  const uint32_t dib_size = le32(&b[14]);
  if (dib_size == 12) {
    check_sides(path, le16(&b[18]), le16(&b[20]));
  } else if (dib_size >= 16) {
    const int64_t w = static_cast<int32_t>(le32(&b[18]));
    const int64_t h = static_cast<int32_t>(le32(&b[22]));
    check_sides(path, w < 0 ? -w : w, h < 0 ? -h : h);
  }
}

// PNG: the IHDR chunk must come first, right after the 8-byte signature.
void check_png_header(const std::string& path, const std::vector<uint8_t>& b) {
  if (b.size() < 24 || std::memcmp(&b[12], "IHDR", 4) != 0) return;
  check_sides(path, be32(&b[16]), be32(&b[20]));
}

// JPEG: walk the marker segments up to the first scan, checking the frame header (SOFn). libjpeg decodes a
// file cut short inside the entropy-coded data into a grey-padded image with only a warning, so a file
// without an end-of-image marker after its first scan is rejected here as truncated. Thumbnails with their
// own markers live in APPn segments before the scan and are skipped with them.
void check_jpeg(const std::string& path, const std::vector<uint8_t>& b) {
  const size_t n = b.size();
  size_t pos = 2;
  size_t scan_start = 0;
  while (pos < n) {
    if (b[pos] != 0xFF) return;               // not a marker where one must be; the decoder reports it
    while (pos < n && b[pos] == 0xFF) ++pos;  // fill bytes may precede a marker
    if (pos >= n) break;
    const uint8_t marker = b[pos++];
    const bool standalone = marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8);
    if (standalone) continue;
    if (marker == 0xD9) break;
    if (pos + 2 > n) break;
    const size_t length = be16(&b[pos]);  // counts its own two bytes
    if (length < 2) return;
    const bool is_sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (is_sof && length >= 7 && pos + 7 <= n) {
      // Height 0 means "given later by a DNL marker"; the decoder's own limits cover that rare case.
      check_sides(path, be16(&b[pos + 5]), be16(&b[pos + 3]));
    }
    if (marker == 0xDA) {
      scan_start = pos + length;
      break;
    }
    pos += length;
  }
  if (scan_start == 0 || scan_start >= n) fail_undecodable(path);
  // Inside entropy-coded data 0xFF is always followed by 0x00 or a restart marker, so FF D9 is the real end.
  for (size_t i = n - 1; i > scan_start; --i) {
    if (b[i] == 0xD9 && b[i - 1] == 0xFF) return;
  }
  throw Error(path + ": not a decodable image (truncated JPEG: no end-of-image marker)");
}

void check_header(const std::string& path, const std::vector<uint8_t>& b) {
  static const uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') {
    check_bmp_header(path, b);
  } else if (b.size() >= 8 && std::memcmp(b.data(), kPngSignature, 8) == 0) {
    check_png_header(path, b);
  } else if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    check_jpeg(path, b);
  }
}

}  // namespace

Image8 decode_image_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  check_header(path, bytes);

  cv::Mat decoded;
  try {
    const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
    // ANYDEPTH keeps 16-bit samples for our own rounding; ANYCOLOR keeps grayscale as one channel and drops
    // alpha. Unlike IMREAD_UNCHANGED, these flags let OpenCV apply the EXIF orientation, as the default
    // IMREAD_COLOR ("decode to 8-bit BGR" in the reference steps) does: phone photos are not fed sideways.
    decoded = cv::imdecode(buffer, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR);
  } catch (const cv::Exception&) {
    fail_undecodable(path);
  }
  if (decoded.empty() || decoded.dims != 2) fail_undecodable(path);
  check_sides(path, decoded.cols, decoded.rows);

  Image8 image;
  try {
    cv::Mat pixels8;
    if (decoded.depth() == CV_8U) {
      pixels8 = decoded;
    } else if (decoded.depth() == CV_16U) {
      // 65535 / 257 = 255: the 16-bit range maps onto the 8-bit range, rounded to nearest.
      decoded.convertTo(pixels8, CV_8U, 1.0 / 257.0);
    } else {
      throw Error(path + ": unsupported pixel format (only 8- and 16-bit integer samples are decoded)");
    }

    int code = -1;
    switch (pixels8.channels()) {
      case 1:
        code = cv::COLOR_GRAY2RGB;
        break;
      case 3:
        code = cv::COLOR_BGR2RGB;
        break;
      case 4:
        code = cv::COLOR_BGRA2RGB;
        break;
      default:
        throw Error(path + ": unsupported pixel format (" + std::to_string(pixels8.channels()) + " channels)");
    }
    image.width = pixels8.cols;
    image.height = pixels8.rows;
    image.rgb.resize(static_cast<size_t>(image.width) * image.height * 3);
    // A destination of the right size and type is written in place, so the pixels land in image.rgb.
    cv::Mat rgb(image.height, image.width, CV_8UC3, image.rgb.data());
    cv::cvtColor(pixels8, rgb, code);
    if (rgb.data != image.rgb.data()) throw Error(path + ": internal error converting pixels to RGB");
  } catch (const cv::Exception&) {
    fail_undecodable(path);
  }
  return image;
}

bool image_decoding_available() { return true; }

#else  // no imgcodecs in this build

Image8 decode_image_file(const std::string& path) {
  throw Error(path +
              ": this build decodes no image files (built without OpenCV imgcodecs); pass a preprocessed tensor "
              "with --tensor");
}

bool image_decoding_available() { return false; }

#endif

}  // namespace mnv2
