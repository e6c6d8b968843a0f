// Image decoding for the GUI (see image_input.h).
#include "image_input.h"

#include <QFileInfo>
#include <QImageReader>
#include <cstring>

#include "mnv2/error.h"

namespace mnv2::ui {

namespace {

[[noreturn]] void fail(const QString& path, const QString& why) {
  throw mnv2::Error((path + ": " + why).toStdString());
}

void checkSides(const QString& path, QSize size) {
  if (size.width() > mnv2::kMaxImageSide || size.height() > mnv2::kMaxImageSide) {
    fail(path, QStringLiteral("image is %1x%2, larger than the %3-pixel limit per side")
                   .arg(size.width())
                   .arg(size.height())
                   .arg(mnv2::kMaxImageSide));
  }
}

}  // namespace

ImageDecoder effectiveDecoder(ImageDecoder requested) {
  if (requested != ImageDecoder::Auto) return requested;
  return mnv2::image_decoding_available() ? ImageDecoder::OpenCv : ImageDecoder::QtImage;
}

QString decoderName(ImageDecoder decoder) {
  return effectiveDecoder(decoder) == ImageDecoder::OpenCv ? QStringLiteral("OpenCV imgcodecs")
                                                           : QStringLiteral("QImage");
}

mnv2::Image8 decodeImageFile(const QString& path, ImageDecoder decoder) {
  if (effectiveDecoder(decoder) == ImageDecoder::OpenCv) return mnv2::decode_image_file(path.toStdString());
  return decodeWithQImage(path);
}

mnv2::Image8 decodeWithQImage(const QString& path) {
  const QFileInfo info(path);
  if (!info.exists()) fail(path, QStringLiteral("cannot open image file (no such file)"));
  if (info.isDir()) fail(path, QStringLiteral("cannot open image file (it is a directory)"));
  // FIFOs and devices could block or never end; an image is a plain file.
  if (!info.isFile()) fail(path, QStringLiteral("cannot open image file (not a regular file)"));
  if (info.size() == 0) fail(path, QStringLiteral("empty file, not an image"));
  if (!info.isReadable()) fail(path, QStringLiteral("cannot open image file for reading (permission denied?)"));

  QImageReader reader(path);
  reader.setAutoTransform(true);  // EXIF orientation, as OpenCV's imread applies it
  // Qt refuses images over 256 MiB by default; the side limit below is the real bound (16384^2 RGBA).
  reader.setAllocationLimit(1100);
  if (const QSize size = reader.size(); size.isValid()) checkSides(path, size);
  QImage image = reader.read();
  if (image.isNull()) {
    fail(path, QStringLiteral("not a decodable image (%1)").arg(reader.errorString()));
  }
  checkSides(path, image.size());
  return image8FromQImage(image);
}

mnv2::Image8 image8FromQImage(const QImage& source) {
  // RGB888 drops alpha without blending (as OpenCV's BGRA2RGB does), replicates gray, and maps 16-bit
  // samples to 8 bits rounded to nearest (as the engine's 1/257 scaling does).
  QImage rgb;
  if (source.format() == QImage::Format_RGB888) {
    rgb = source;
  } else if (source.hasAlphaChannel()) {
    // Through a straight-alpha format first: a premultiplied one would darken translucent pixels.
    rgb = source.convertToFormat(source.depth() > 32 ? QImage::Format_RGBA64 : QImage::Format_RGBA8888)
              .convertToFormat(QImage::Format_RGB888);
  } else {
    rgb = source.convertToFormat(QImage::Format_RGB888);
  }
  mnv2::Image8 out;
  out.width = rgb.width();
  out.height = rgb.height();
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  const size_t row = static_cast<size_t>(out.width) * 3;
  for (int y = 0; y < out.height; ++y) std::memcpy(out.rgb.data() + y * row, rgb.constScanLine(y), row);
  return out;
}

QImage toQImage(const mnv2::Image8& image) {
  QImage out(image.width, image.height, QImage::Format_RGB888);
  const size_t row = static_cast<size_t>(image.width) * 3;
  for (int y = 0; y < image.height; ++y) std::memcpy(out.scanLine(y), image.rgb.data() + y * row, row);
  return out;
}

}  // namespace mnv2::ui
