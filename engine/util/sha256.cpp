// SHA-256 (see sha256.h): libcrypto's EVP interface, one context per digest.
#include "util/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "mnv2/error.h"

namespace mnv2 {
namespace {

// Bytes read per pread: large enough that the system calls cost nothing next to the hashing, small enough to
// stay in the cache.
constexpr size_t kChunkBytes = size_t{1} << 20;

struct ContextDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Context = std::unique_ptr<EVP_MD_CTX, ContextDeleter>;

[[noreturn]] void fail(const char* call) { throw Error(std::string("SHA-256: libcrypto's ") + call + " failed"); }

Context start() {
  Context c(EVP_MD_CTX_new());
  if (!c) fail("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr) != 1) fail("EVP_DigestInit_ex");
  return c;
}

void update(EVP_MD_CTX* c, const void* data, size_t size) {
  if (EVP_DigestUpdate(c, data, size) != 1) fail("EVP_DigestUpdate");
}

std::string finish(EVP_MD_CTX* c) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(c, digest.data(), &size) != 1) fail("EVP_DigestFinal_ex");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::span<const std::byte> bytes) {
  Context c = start();
  update(c.get(), bytes.data(), bytes.size());
  return finish(c.get());
}

std::string sha256_hex(std::string_view bytes) { return sha256_hex(std::as_bytes(std::span(bytes))); }

std::string sha256_fd_hex(int fd, const std::string& what) {
  Context c = start();
  std::vector<unsigned char> chunk(kChunkBytes);
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, chunk.data(), chunk.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(what + ": cannot be read for its checksum (" + std::strerror(errno) + ")");
    if (n == 0) break;
    update(c.get(), chunk.data(), static_cast<size_t>(n));
    at += n;
  }
  return finish(c.get());
}

}  // namespace mnv2
