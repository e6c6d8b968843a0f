// The SHA-256 helper (engine/util/sha256.h) against FIPS 180-2's vectors and libcrypto's one-shot digest, and
// the model checksums built on it: what `sha256sum` prints for the .onnx file and for each external data file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/model_summary.h"
#include "onnx_builder.h"
#include "test_support.h"
#include "util/sha256.h"

namespace mnv2::test {
namespace {

// The file's digest as `sha256sum` prints it, or "" where the tool cannot be run.
std::string sha256sum_of(const std::string& path) {
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  if (!p) return {};
  char buf[65] = {};
  const size_t n = std::fread(buf, 1, 64, p);
  ::pclose(p);
  return n == 64 ? std::string(buf, 64) : std::string();
}

std::string hash_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  std::string h;
  try {
    h = sha256_fd_hex(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return h;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// A file of a few MB that is not a whole number of the helper's chunks, streamed through its descriptor, against
// libcrypto's one-shot EVP_Digest of the same bytes held in memory; the descriptor's offset is left alone.
TEST(Sha256, FileStreamedInChunksMatchesOneShot) {
  TempDir dir;
  std::string bytes(3 * 1024 * 1024 + 12345, '\0');
  uint32_t x = 12345;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  write_file(dir.file("blob.bin"), bytes);

  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  ASSERT_EQ(EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr), 1);
  std::string want;
  for (unsigned int i = 0; i < size; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", digest[i]);
    want += hex;
  }
  EXPECT_EQ(hash_file(dir.file("blob.bin")), want);
  EXPECT_EQ(sha256_hex(bytes), want);
  const std::string tool = sha256sum_of(dir.file("blob.bin"));
  if (!tool.empty()) EXPECT_EQ(tool, want);

  const int fd = ::open(dir.file("blob.bin").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::lseek(fd, 100, SEEK_SET), 100);
  EXPECT_EQ(sha256_fd_hex(fd, "blob.bin"), want);  // from the first byte whatever the offset
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 100);
  ::close(fd);
  EXPECT_THROW((void)sha256_fd_hex(-1, "nothing"), Error);
}

// The model checksum is what `sha256sum` prints for the file (verified with it; the shared file is fixed).
TEST(ModelChecksum, MainModelIsItsFilesSha256) {
  const Model m = load_onnx(main_model_path());
  EXPECT_EQ(m.checksum, "sha256:c29da1d5a35febf4084409fa92f1c495a39e39e1da57dda26e5a3930b83f94dd");
  const std::string tool = sha256sum_of(main_model_path());
  if (!tool.empty()) EXPECT_EQ(m.checksum, "sha256:" + tool);
  // `mnv2 info`'s line reads like sha256sum's: digits, two spaces, the path.
  bool found = false;
  for (const auto& [key, value] : model_summary_rows(m, ""))
    if (key == "sha256") {
      EXPECT_EQ(value, m.checksum.substr(7) + "  " + main_model_path());
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(model_summary_json(m, "").at("checksum").get<std::string>(), m.checksum);
}

// A model with its weights in two external files: the .onnx file's checksum covers its own bytes only, and each
// data file has its own, in the order first used, whole (not only the ranges read).
TEST(ModelChecksum, OnePerExternalDataFile) {
  TempDir dir;
  OnnxBuilder b(20, 10);
  b.input("x", {-1, 2, 4, 4});
  b.init("w", {3, 2, 1, 1}, ramp(6));
  b.init("bias", {3}, ramp(3, 0.5f));
  b.node("Conv", {"x", "w", "bias"}, {"y"}, "conv");
  b.output("y");
  b.externalize("w", "w.bin");
  b.externalize("bias", "sub/bias.bin");
  b.save(dir.file("m.onnx"));
  // Bytes after the tensor's range: read by no tensor, covered by the file's checksum all the same.
  write_file(dir.file("w.bin"), read_file(dir.file("w.bin")) + "trailing");

  const Model m = load_onnx(dir.file("m.onnx"));
  EXPECT_EQ(m.checksum, "sha256:" + sha256_hex(read_file(dir.file("m.onnx"))));
  ASSERT_EQ(m.file.external_files.size(), 2u);
  EXPECT_EQ(m.file.external_files[0].location, "w.bin");
  EXPECT_EQ(m.file.external_files[0].checksum, "sha256:" + sha256_hex(read_file(dir.file("w.bin"))));
  EXPECT_EQ(m.file.external_files[1].location, "sub/bias.bin");
  EXPECT_EQ(m.file.external_files[1].checksum, "sha256:" + sha256_hex(read_file(dir.file("sub/bias.bin"))));
  const std::string tool = sha256sum_of(dir.file("w.bin"));
  if (!tool.empty()) EXPECT_EQ(m.file.external_files[0].checksum, "sha256:" + tool);

  std::vector<std::string> lines;
  for (const auto& [key, value] : model_summary_rows(m, ""))
    if (key == "sha256") lines.push_back(value);
  const std::vector<std::string> want = {m.checksum.substr(7) + "  " + dir.file("m.onnx"),
                                         m.file.external_files[0].checksum.substr(7) + "  " + dir.file("w.bin"),
                                         m.file.external_files[1].checksum.substr(7) + "  " + dir.file("sub/bias.bin")};
  EXPECT_EQ(lines, want);
  const json::Json j = model_summary_json(m, "").at("external_data").at("checksums");
  EXPECT_EQ(j.at("w.bin").get<std::string>(), m.file.external_files[0].checksum);
  EXPECT_EQ(j.at("sub/bias.bin").get<std::string>(), m.file.external_files[1].checksum);
}

TEST(ModelChecksum, MatchNamesTheAlgorithm) {
  const std::string a = "sha256:" + std::string(64, 'a'), b = "sha256:" + std::string(64, 'b');
  EXPECT_EQ(match_checksums(a, a), ChecksumMatch::same);
  EXPECT_EQ(match_checksums(a, b), ChecksumMatch::different);
  EXPECT_EQ(match_checksums("fnv1a64:dba58d2a476a8c2e", a), ChecksumMatch::unknown);
  EXPECT_EQ(match_checksums("fnv1a64:dba58d2a476a8c2e", "fnv1a64:dba58d2a476a8c2f"), ChecksumMatch::different);
  EXPECT_EQ(match_checksums("ffff", "ffff"), ChecksumMatch::unknown);  // no algorithm named
  EXPECT_EQ(match_checksums("", a), ChecksumMatch::unknown);
}

}  // namespace
}  // namespace mnv2::test
