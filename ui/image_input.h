// Image files to the engine's 8-bit RGB pixels for the GUI: the engine's own decoder (OpenCV imgcodecs)
// when this build has it, else Qt's QImage, so the app also opens images on the GPU machine, whose build
// has no OpenCV codecs (MNV2_WITH_OPENCV_CODECS=OFF). Either way the engine's preprocess() makes the tensor.
#pragma once

#include <QImage>
#include <QString>

#include "mnv2/image.h"
#include "run_types.h"

namespace mnv2::ui {

// Auto: OpenCV when mnv2::image_decoding_available(), else QImage.
ImageDecoder effectiveDecoder(ImageDecoder requested);
QString decoderName(ImageDecoder decoder);  // "OpenCV imgcodecs", "QImage"

// Throws mnv2::Error naming the file for missing, empty, unreadable, undecodable or oversized files
// (sides over mnv2::kMaxImageSide), and for OpenCv in a build without it.
mnv2::Image8 decodeImageFile(const QString& path, ImageDecoder decoder = ImageDecoder::Auto);

// QImage decoding alone: EXIF orientation applied (as OpenCV does), grayscale / alpha / 16-bit images
// converted to 8-bit RGB (alpha dropped, 16-bit rounded to nearest).
mnv2::Image8 decodeWithQImage(const QString& path);

mnv2::Image8 image8FromQImage(const QImage& image);
QImage toQImage(const mnv2::Image8& image);  // deep copy, Format_RGB888

}  // namespace mnv2::ui
