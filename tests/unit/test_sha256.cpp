// The SHA-256 helper (engine/util/sha256.h) against FIPS 180-2's vectors and libcrypto's one-shot digest.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "mnv2/error.h"
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

}  // namespace
}  // namespace mnv2::test
