// Image files to 8-bit RGB pixels with OpenCV imgcodecs, with the size limit checked from the file header
// before any pixel memory is allocated. Builds without imgcodecs keep the API and say why they cannot decode.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/input_files.h"

#ifdef MNV2_HAVE_IMGCODECS
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace mnv2 {

#ifdef MNV2_HAVE_IMGCODECS

namespace {

// cv::imdecode takes the bytes as one cv::Mat row, whose width is an int.

[[noreturn]] void fail_undecodable(const std::string& path) {
  throw Error(path + ": not a decodable image (truncated or unsupported format)");
}

// An allocation that failed while decoding (OpenCV's own "insufficient memory", or std::bad_alloc) is the
// machine's limit, not the file's fault: said as such.
[[noreturn]] void fail_memory(const std::string& path) {
  throw Error(path + ": not enough memory to decode this image (a memory limit such as ulimit -v, or the machine's)");
}

[[noreturn]] void fail_decoding(const std::string& path, const cv::Exception& e) {
  if (e.code == cv::Error::StsNoMem) fail_memory(path);
  fail_undecodable(path);
}

void check_sides(const std::string& path, int64_t width, int64_t height) {
  if (width > kMaxImageSide || height > kMaxImageSide) {
    throw Error(path + ": image is " + std::to_string(width) + "x" + std::to_string(height) + ", larger than the " +
                std::to_string(kMaxImageSide) + "-pixel limit per side");
  }
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::vector<uint8_t> bytes = read_input_bytes(path, inputs::kImage);  // a regular file within its budget
  if (bytes.empty()) throw Error(path + ": empty file, not an image");
  return bytes;
}

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }
uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | uint32_t(p[1]); }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }

// BMP: BITMAPCOREHEADER (12 bytes) has 16-bit sides; later headers have signed 32-bit sides, a negative
// height meaning rows stored top-down. Uncompressed pixels have an exact size, so a file that cannot hold
// them is refused here: the decoder would allocate the whole image before finding the data missing.
void check_bmp_header(const std::string& path, const std::vector<uint8_t>& b) {
  if (b.size() < 26) return;
  const uint32_t dib_size = le32(&b[14]);
  int64_t w = 0, h = 0, bits = 0, compression = 0;
  if (dib_size == 12) {
    w = le16(&b[18]);
    h = le16(&b[20]);
    if (b.size() >= 26) bits = le16(&b[24]);
  } else if (dib_size >= 16) {
    w = static_cast<int32_t>(le32(&b[18]));
    h = static_cast<int32_t>(le32(&b[22]));
    w = w < 0 ? -w : w;
    h = h < 0 ? -h : h;
    if (b.size() >= 30) bits = le16(&b[28]);
    if (dib_size >= 20 && b.size() >= 34) compression = le32(&b[30]);
  } else {
    return;
  }
  check_sides(path, w, h);
  // BI_RGB (0) and BI_BITFIELDS (3) store every row, padded to 4 bytes; RLE and embedded JPEG/PNG do not.
  if ((compression == 0 || compression == 3) && bits > 0 && bits <= 32) {
    // Some writers leave out the padding of the last row.
    const uint64_t row_bits = static_cast<uint64_t>(w) * static_cast<uint64_t>(bits);
    const uint64_t row = (row_bits + 31) / 32 * 4;
    const uint64_t rows = static_cast<uint64_t>(h);
    const uint64_t need = static_cast<uint64_t>(le32(&b[10])) + (rows == 0 ? 0 : row * (rows - 1) + (row_bits + 7) / 8);
    if (need > b.size())
      throw Error(path + ": not a decodable image (truncated BMP: its " + std::to_string(w) + "x" + std::to_string(h) +
                  " pixels need " + std::to_string(need) + " bytes, the file has " + std::to_string(b.size()) + ")");
  }
}

// PNG: the IHDR chunk must come first, right after the 8-byte signature. Deflate cannot compress by more
// than 1032:1, so a file far too small for the pixels its header claims is corrupt; refusing it here saves
// the decoder allocating the whole image first.
void check_png_header(const std::string& path, const std::vector<uint8_t>& b) {
  if (b.size() < 26 || std::memcmp(&b[12], "IHDR", 4) != 0) return;
  const uint64_t w = be32(&b[16]), h = be32(&b[20]);
  check_sides(path, w, h);
  const uint64_t bit_depth = b[24];
  const uint64_t channels = b[25] == 2 ? 3 : b[25] == 4 ? 2 : b[25] == 6 ? 4 : 1;  // RGB, gray+alpha, RGBA
  // Filtered scanlines: one filter byte per row; interlacing adds at most a few rows and bytes per pass.
  const uint64_t raw = h * (1 + (w * channels * bit_depth + 7) / 8);
  constexpr uint64_t kMaxDeflateRatio = 1032, kSlack = 64 * 1024;
  if (raw > kMaxDeflateRatio * b.size() + kSlack)
    throw Error(path + ": not a decodable image (corrupt or truncated PNG: " + std::to_string(w) + "x" +
                std::to_string(h) + " pixels cannot come from " + std::to_string(b.size()) + " bytes)");
}

// PNM (PBM/PGM/PPM, "P1".."P6"): ASCII width and height after the magic number, comments allowed.
void check_pnm_header(const std::string& path, const std::vector<uint8_t>& b) {
  size_t pos = 2;
  int64_t sides[2] = {0, 0};
  for (int64_t& side : sides) {
    for (;;) {
      while (pos < b.size() && std::isspace(b[pos])) ++pos;
      if (pos < b.size() && b[pos] == '#') {
        while (pos < b.size() && b[pos] != '\n' && b[pos] != '\r') ++pos;
        continue;
      }
      break;
    }
    if (pos >= b.size() || !std::isdigit(b[pos])) return;  // malformed: the decoder reports it
    while (pos < b.size() && std::isdigit(b[pos]) && side <= kMaxImageSide) side = side * 10 + (b[pos++] - '0');
  }
  check_sides(path, sides[0], sides[1]);
}

// WebP: lossy (VP8) and lossless (VP8L) frames have 14-bit sides, below the limit; the extended format
// (VP8X) has a 24-bit canvas.
void check_webp_header(const std::string& path, const std::vector<uint8_t>& b) {
  if (b.size() >= 30 && std::memcmp(&b[12], "VP8X", 4) == 0) {
    const uint32_t w = 1 + (uint32_t(b[24]) | uint32_t(b[25]) << 8 | uint32_t(b[26]) << 16);
    const uint32_t h = 1 + (uint32_t(b[27]) | uint32_t(b[28]) << 8 | uint32_t(b[29]) << 16);
    check_sides(path, w, h);
  }
}

// TIFF (classic and BigTIFF): ImageWidth (256) and ImageLength (257) in the first directory, in every integer type
// libtiff takes for them: BYTE (1), SHORT (3), LONG (4), SBYTE (6), SSHORT (8), SLONG (9), LONG8 (16), SLONG8 (17).
// A side given as SSHORT or SLONG once slipped past this check and decoded to 2.7 GB before the decoded size was
// refused. A negative side is libtiff's to refuse; a tag given twice counts with its larger value.
void check_tiff_header(const std::string& path, const std::vector<uint8_t>& b) {
  const bool little = b[0] == 'I';
  auto get = [&](size_t at, int bytes) -> uint64_t {
    if (at > b.size() || static_cast<size_t>(bytes) > b.size() - at) return 0;
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(b[at + (little ? i : bytes - 1 - i)]) << (8 * i);
    return v;
  };
  const bool big = get(2, 2) == 43;
  const uint64_t ifd = big ? get(8, 8) : get(4, 4);
  const uint64_t count = big ? get(ifd, 8) : get(ifd, 2);
  const size_t first = static_cast<size_t>(ifd) + (big ? 8 : 2), entry = big ? 20 : 12;
  uint64_t w = 0, h = 0;
  for (uint64_t i = 0; i < count && i < 4096; ++i) {
    const size_t at = first + static_cast<size_t>(i) * entry;
    if (at >= b.size()) break;
    const uint64_t tag = get(at, 2), type = get(at + 2, 2);
    if (tag != 256 && tag != 257) continue;
    const size_t value_at = at + (big ? 12 : 8);
    int bytes = 0;
    bool is_signed = false;
    switch (type) {
      case 6:
        is_signed = true;
        [[fallthrough]];
      case 1:
        bytes = 1;
        break;
      case 8:
        is_signed = true;
        [[fallthrough]];
      case 3:
        bytes = 2;
        break;
      case 9:
        is_signed = true;
        [[fallthrough]];
      case 4:
        bytes = 4;
        break;
      case 17:
        is_signed = true;
        [[fallthrough]];
      case 16:
        bytes = 8;
        break;
      default:
        continue;  // not an integer type: libtiff refuses the directory
    }
    uint64_t value = get(value_at, bytes);
    if (is_signed && bytes < 8 && (value >> (8 * bytes - 1)) != 0) continue;  // negative
    if (is_signed && bytes == 8 && (value >> 63) != 0) continue;
    uint64_t& side = tag == 256 ? w : h;
    side = std::max(side, value);
  }
  check_sides(path, static_cast<int64_t>(std::min<uint64_t>(w, INT64_MAX)),
              static_cast<int64_t>(std::min<uint64_t>(h, INT64_MAX)));
}

// The most scans (SOS markers) a JPEG may hold. A progressive decoder passes over every coefficient block of a
// component once per scan, so a file of empty scans makes its work grow with no data to show for it: 5,000 empty
// AC scans in 50 KB (16384x16384 gray) took 71 s and 1.1 GB. Encoders write far fewer: libjpeg's progressive
// script 10 for colour and 6 for gray, mozjpeg's scan optimisation at most 64 candidates of which it keeps about
// a dozen; a sequential file has one per component at most.
inline constexpr int kMaxJpegScans = 100;

// JPEG: walk every marker segment to the end-of-image marker, checking the frame header (SOFn) and counting the
// scans; between a scan's header and the next marker lies its entropy-coded data, in which 0xFF is always
// followed by 0x00 (a stuffed byte), a restart marker or fill. libjpeg decodes a file cut short inside the
// entropy-coded data into a grey-padded image with only a warning, so a file without an end-of-image marker
// after its first scan is rejected here as truncated. Thumbnails with their own markers live in APPn segments
// before the first scan and are skipped with them.
void check_jpeg(const std::string& path, const std::vector<uint8_t>& b) {
  const size_t n = b.size();
  size_t pos = 2;
  size_t scan_start = 0;
  int scans = 0;
  bool walked_to_end = false;  // the walk reached the end-of-image marker
  while (pos < n) {
    if (b[pos] != 0xFF) {  // not a marker where one must be: before a scan, the decoder reports it
      if (scan_start == 0) return;
      break;
    }
    while (pos < n && b[pos] == 0xFF) ++pos;  // fill bytes may precede a marker
    if (pos >= n) break;
    const uint8_t marker = b[pos++];
    const bool standalone = marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8);
    if (standalone) continue;
    if (marker == 0xD9) {
      walked_to_end = true;
      break;
    }
    if (pos + 2 > n) break;
    const size_t length = be16(&b[pos]);  // counts its own two bytes
    if (length < 2) {
      if (scan_start == 0) return;
      break;
    }
    const bool is_sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (is_sof && length >= 7 && pos + 7 <= n) {
      // Height 0 means "given later by a DNL marker"; the decoder's own limits cover that rare case.
      check_sides(path, be16(&b[pos + 5]), be16(&b[pos + 3]));
    }
    pos += length;
    if (marker != 0xDA) continue;
    if (scan_start == 0) scan_start = pos;
    if (++scans > kMaxJpegScans)
      throw Error(path + ": not a decodable image (a JPEG of more than " + std::to_string(kMaxJpegScans) +
                  " scans; encoders write at most a few dozen, and each scan makes the decoder pass over the whole "
                  "image again)");
    // The entropy-coded data: up to the next marker that is neither a stuffed byte nor a restart marker.
    while (pos + 1 < n &&
           !(b[pos] == 0xFF && b[pos + 1] != 0x00 && b[pos + 1] != 0xFF && !(b[pos + 1] >= 0xD0 && b[pos + 1] <= 0xD7)))
      ++pos;
    if (pos + 1 >= n) break;
  }
  if (scan_start == 0 || scan_start >= n) fail_undecodable(path);
  if (walked_to_end) return;
  // The walk stopped early (a malformed segment after the first scan): the end-of-image marker is then looked
  // for from the end, where FF D9 can only be the real end.
  for (size_t i = n - 1; i > scan_start; --i) {
    if (b[i] == 0xD9 && b[i - 1] == 0xFF) return;
  }
  throw Error(path + ": not a decodable image (truncated JPEG: no end-of-image marker)");
}

// Only these formats reach the decoder. OpenCV's build also carries DICOM (GDCM), JPEG 2000, OpenEXR,
// Radiance HDR, Sun raster and PFM readers, chosen by signature; a hostile file picked one of them and GDCM
// aborted the process on an assertion (tests/fuzz/regressions/image_decode). None of them is a photograph
// a user classifies, and each is more code that trusts the file.
void check_header(const std::string& path, const std::vector<uint8_t>& b) {
  static const uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  auto starts = [&](std::string_view magic, size_t at = 0) {
    return b.size() >= at + magic.size() && std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
  };
  using namespace std::string_view_literals;
  if (starts("BM")) {
    check_bmp_header(path, b);
  } else if (b.size() >= 8 && std::memcmp(b.data(), kPngSignature, 8) == 0) {
    check_png_header(path, b);
  } else if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    check_jpeg(path, b);
  } else if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && std::isspace(b[2])) {
    check_pnm_header(path, b);
  } else if (starts("RIFF") && starts("WEBP", 8)) {
    check_webp_header(path, b);
  } else if (b.size() >= 16 &&
             (starts("II\x2a\x00"sv) || starts("MM\x00\x2a"sv) || starts("II\x2b\x00"sv) || starts("MM\x00\x2b"sv))) {
    check_tiff_header(path, b);
  } else {
    throw Error(path +
                ": not a decodable image (unknown or unsupported format; mnv2 reads BMP, PNG, JPEG, TIFF, "
                "WebP and PBM/PGM/PPM)");
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
  } catch (const cv::Exception& e) {
    fail_decoding(path, e);
  } catch (const std::bad_alloc&) {
    fail_memory(path);
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
  } catch (const cv::Exception& e) {
    fail_decoding(path, e);
  } catch (const std::bad_alloc&) {
    fail_memory(path);
  }
  return image;
}

bool image_decoding_available() { return true; }

#else  // no imgcodecs in this build

Image8 decode_image_file(const std::string& path) {
  // What is wrong with the file itself (missing, a FIFO, a device, a folder, too large) is said first, as in a
  // build that decodes: the same file gives the same refusal in both builds.
  const OpenedInput opened = open_input_file(path, inputs::kImage);
  ::close(opened.fd);
  throw Error(path +
              ": this build decodes no image files (built without OpenCV imgcodecs); pass a preprocessed tensor "
              "with --tensor");
}

bool image_decoding_available() { return false; }

#endif

}  // namespace mnv2
