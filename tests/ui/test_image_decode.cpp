// The GUI's image decoding: QImage (the GPU machine's build has no OpenCV codecs) against OpenCV imgcodecs
// and the golden input tensors, on the shared photographs; bad files give errors naming the file.
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

#include "image_input.h"
#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/tensor.h"
#include "ui_test_support.h"

using namespace mnv2::ui;

namespace {

struct PixelDiff {
  int maxAbs = 0;
  qint64 differing = 0;  // samples (R, G or B) that differ
};

PixelDiff comparePixels(const mnv2::Image8& a, const mnv2::Image8& b) {
  PixelDiff d;
  for (size_t i = 0; i < a.rgb.size() && i < b.rgb.size(); ++i) {
    const int x = std::abs(int(a.rgb[i]) - int(b.rgb[i]));
    d.maxAbs = std::max(d.maxAbs, x);
    d.differing += x ? 1 : 0;
  }
  return d;
}

double maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

std::vector<float> goldenInput(const QString& stem) {
  const QString path = test::sharedPath(QStringLiteral("golden/%1.input.f32").arg(stem));
  return mnv2::read_tensor_file(path.toStdString(), mnv2::Shape{1, 3, 224, 224}).data;
}

// A BMP file header and info header claiming `side` x `side` 24-bit pixels, and no pixels: a file whose
// header alone would make a decoder allocate gigabytes.
QByteArray bmpHeaderClaiming(quint32 side) {
  QByteArray b("BM", 2);
  auto le = [&b](quint32 v, int bytes) {
    for (int i = 0; i < bytes; ++i) b.append(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  le(54, 4);  // file size: the headers only
  le(0, 4);   // reserved
  le(54, 4);  // pixel data offset
  le(40, 4);  // BITMAPINFOHEADER
  le(side, 4);
  le(side, 4);
  le(1, 2);                              // planes
  le(24, 2);                             // bits per pixel
  for (int i = 0; i < 6; ++i) le(0, 4);  // no compression, sizes, resolution, palette
  return b;
}

// A well-formed PNG start (signature, IHDR for `side` x `side` 8-bit RGB, a tiny IDAT) whose header is
// all a reader needs to learn the size.
QByteArray pngHeaderClaiming(quint32 side) {
  auto be = [](QByteArray& b, quint32 v) {
    for (int shift = 24; shift >= 0; shift -= 8) b.append(static_cast<char>((v >> shift) & 0xff));
  };
  auto chunk = [&be](QByteArray& out, const QByteArray& typeAndData) {
    quint32 crc = 0xffffffffu;  // CRC-32 (ISO 3309) over type and data, as PNG requires
    for (char c : typeAndData) {
      crc ^= static_cast<quint8>(c);
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    be(out, static_cast<quint32>(typeAndData.size() - 4));
    out += typeAndData;
    be(out, crc ^ 0xffffffffu);
  };
  QByteArray ihdr("IHDR", 4);
  be(ihdr, side);
  be(ihdr, side);
  ihdr.append("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, no filter, not interlaced
  QByteArray png("\x89PNG\r\n\x1a\n", 8);
  chunk(png, ihdr);
  chunk(png, QByteArray("IDAT\x78\x9c\x03\x00\x00\x00\x00\x01", 12));
  return png;
}

}  // namespace

class ImageDecodeTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sharedPhotos_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("golden");
    QTest::newRow("cat.bmp") << "cat.bmp"
                             << "cat";
    QTest::newRow("grace_hopper.bmp") << "grace_hopper.bmp"
                                      << "grace_hopper";
    QTest::newRow("cat_720p.jpg") << "cat_720p.jpg"
                                  << "cat_720p";
    QTest::newRow("hot_dog.jpg") << "hot_dog.jpg"
                                 << "hot_dog";
    QTest::newRow("parrot.jpg") << "parrot.jpg"
                                << "parrot";
  }

  // QImage decoding + the engine's preprocess against OpenCV decoding + preprocess and the golden input.
  void sharedPhotos() {
    QFETCH(QString, file);
    QFETCH(QString, golden);
    const QString path = test::imagePath(file);
    const mnv2::Model& model = test::mainModel();
    const mnv2::Image8 qt = decodeWithQImage(path);
    QVERIFY(qt.width > 0 && qt.height > 0);
    const mnv2::Tensor qtTensor = mnv2::preprocess(qt, model.preprocess);
    const double qtVsGolden = maxAbsDiff(qtTensor.data, goldenInput(golden));
    QString line = QStringLiteral("%1 %2x%3: QImage tensor vs golden max abs %4")
                       .arg(file)
                       .arg(qt.width)
                       .arg(qt.height)
                       .arg(qtVsGolden, 0, 'g', 3);
    if (mnv2::image_decoding_available()) {
      const mnv2::Image8 cv = mnv2::decode_image_file(path.toStdString());
      QCOMPARE(qt.width, cv.width);
      QCOMPARE(qt.height, cv.height);
      const PixelDiff pixels = comparePixels(qt, cv);
      const mnv2::Tensor cvTensor = mnv2::preprocess(cv, model.preprocess);
      const double tensors = maxAbsDiff(qtTensor.data, cvTensor.data);
      line += QStringLiteral("; vs OpenCV: %1 of %2 samples differ (max %3 levels), tensors %4 (max abs %5)")
                  .arg(pixels.differing)
                  .arg(qt.rgb.size())
                  .arg(pixels.maxAbs)
                  .arg(tensors == 0 ? QStringLiteral("bit-identical") : QStringLiteral("differ"))
                  .arg(tensors, 0, 'g', 3);
      if (file.endsWith(QLatin1String(".bmp"))) QCOMPARE(tensors, 0.0);  // uncompressed: exactly the same
    }
    qInfo().noquote() << line;
    // The golden README's bound for the project's preprocessing: within 1e-5 of the golden input. Qt and
    // OpenCV both decode JPEG with the system's libjpeg(-turbo) here, so JPEGs meet it too.
    QVERIFY2(qtVsGolden < 1e-5, qPrintable(line));
  }

  void formatsConvertLikeOpenCv() {
    // Grayscale, alpha and 16-bit PNGs made here, decoded both ways.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QImage gray(37, 23, QImage::Format_Grayscale8);
    QImage rgba(37, 23, QImage::Format_RGBA8888);
    QImage deep(37, 23, QImage::Format_RGBA64);
    for (int y = 0; y < 23; ++y) {
      for (int x = 0; x < 37; ++x) {
        gray.setPixel(x, y, qRgb(x * 7 % 256, x * 7 % 256, x * 7 % 256));
        rgba.setPixelColor(x, y, QColor(x * 6, y * 11, (x * y) % 256, (x * 13) % 256));
        deep.setPixelColor(x, y, QColor::fromRgba64(x * 1771, y * 2849, (x * y * 97) % 65536, 65535));
      }
    }
    const std::pair<QString, QImage> cases[] = {
        {QStringLiteral("gray.png"), gray}, {QStringLiteral("alpha.png"), rgba}, {QStringLiteral("deep.png"), deep}};
    for (const auto& [name, image] : cases) {
      const QString path = dir.filePath(name);
      QVERIFY(image.save(path));
      const mnv2::Image8 qt = decodeWithQImage(path);
      QCOMPARE(qt.width, 37);
      QCOMPARE(qt.height, 23);
      if (!mnv2::image_decoding_available()) continue;
      const mnv2::Image8 cv = mnv2::decode_image_file(path.toStdString());
      const PixelDiff d = comparePixels(qt, cv);
      QVERIFY2(d.maxAbs == 0,
               qPrintable(QStringLiteral("%1: %2 samples differ, max %3").arg(name).arg(d.differing).arg(d.maxAbs)));
    }
  }

  void badFilesGiveErrorsNamingTheFile_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    QTest::newRow("empty") << "bad.png" << QByteArray() << "empty file";
    QTest::newRow("garbage") << "bad.png" << QByteArray("this is not an image at all") << "not a decodable image";
    QTest::newRow("truncated bmp") << "bad.png" << QByteArray("BM\x36\x00\x00\x00\x00\x00", 8)
                                   << "not a decodable image";
    // Refused from the header, before anything the size of the claimed image is allocated: Qt already
    // refuses a BMP whose file cannot hold what its header claims; a PNG's size is checked against the limit.
    QTest::newRow("huge bmp header") << "huge.bmp" << bmpHeaderClaiming(50000) << "not a decodable image";
    QTest::newRow("huge png header") << "huge.png" << pngHeaderClaiming(50000) << "larger than the 16384-pixel limit";
  }

  void badFilesGiveErrorsNamingTheFile() {
    QFETCH(QString, name);
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString path = dir.filePath(name);
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
    f.close();
    for (ImageDecoder d : {ImageDecoder::QtImage, ImageDecoder::Auto}) {
      try {
        decodeImageFile(path, d);
        QFAIL("no error");
      } catch (const mnv2::Error& e) {
        const QString message = QString::fromUtf8(e.what());
        QVERIFY2(message.contains(path), qPrintable(message));
        if (d == ImageDecoder::QtImage) QVERIFY2(message.contains(expected), qPrintable(message));
      }
    }
  }

  void missingFileAndDirectory() {
    for (const QString& path : {QStringLiteral("/nonexistent/cat.png"), QDir::tempPath()}) {
      try {
        decodeWithQImage(path);
        QFAIL("no error");
      } catch (const mnv2::Error& e) {
        QVERIFY(QString::fromUtf8(e.what()).startsWith(path));
      }
    }
  }

  void roundTripToQImage() {
    mnv2::Image8 img;
    img.width = 5;
    img.height = 3;
    for (int i = 0; i < 45; ++i) img.rgb.push_back(static_cast<uint8_t>(i * 5));
    const QImage q = toQImage(img);
    QCOMPARE(q.pixelColor(1, 0), QColor(15, 20, 25));
    const mnv2::Image8 back = image8FromQImage(q);
    QVERIFY(back.rgb == img.rgb);
  }
};

MNV2_UI_SUITE(ImageDecodeTest);
#include "test_image_decode.moc"
