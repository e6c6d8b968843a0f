// The agent protocol's wire (wire.h).
#include "remote/wire.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "mnv2/error.h"
#include "mnv2/remote.h"

namespace mnv2::remote {

using json::Json;

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0)
    throw Error("bad base64: length " + std::to_string(text.size()) + " is not a multiple of 4");
  if (text.empty()) return {};
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) throw Error("bad base64");
  size_t pad = 0;
  if (text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

bool send(int fd, const Json& message) { return write_all(fd, json::dump(message) + "\n"); }

std::optional<Json> receive(LineReader& reader, Clock::time_point deadline, const std::function<void()>& tick) {
  for (;;) {
    if (auto line = reader.take_line()) {
      Json j;
      try {
        j = json::parse(*line);
      } catch (const Error& e) {
        throw Error(std::string("not the agent protocol: ") + e.what());
      }
      if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        throw Error("not the agent protocol: a message without a type");
      return j;
    }
    if (reader.eof()) return std::nullopt;
    if (tick) tick();
    if (Clock::now() >= deadline) throw TimeoutError("no answer in time");
    if (wait_readable({reader.fd()}, deadline) == 0 && !reader.fill() && reader.eof()) return std::nullopt;
  }
}

bool send_file_data(int out_fd, int fd, int64_t size, const std::function<void(int64_t)>& sent) {
  std::string chunk(kChunk, '\0');
  int64_t done = 0;
  while (done < size) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(kChunk), size - done));
    const ssize_t got = ::pread(fd, chunk.data(), want, done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw Error(std::string("cannot read the file to send: ") + (got < 0 ? std::strerror(errno) : "it shrank"));
    if (!send(out_fd,
              Json{{"type", "data"}, {"b64", base64_encode(std::string_view(chunk.data(), static_cast<size_t>(got)))}}))
      return false;
    done += got;
    if (sent) sent(done);
  }
  return send(out_fd, Json{{"type", "end"}});
}

std::string receive_file_data(LineReader& reader, int fd, int64_t size, Clock::time_point deadline,
                              const std::function<void()>& tick) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sha(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!sha || EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1) throw Error("SHA-256: cannot start");
  int64_t got = 0;
  for (;;) {
    auto m = receive(reader, deadline, tick);
    if (!m) throw Error("the input ended in the middle of a file");
    const std::string type = (*m)["type"];
    if (type == "end") break;
    if (type != "data") throw Error("expected file data, got '" + type + "'");
    const std::string bytes = base64_decode(json::string_at(*m, "b64"));
    got += static_cast<int64_t>(bytes.size());
    if (got > size) throw Error("a file is longer than announced (" + std::to_string(size) + " bytes)");
    EVP_DigestUpdate(sha.get(), bytes.data(), bytes.size());
    if (fd >= 0 && !write_all(fd, bytes))
      throw Error(std::string("cannot write the received file: ") + std::strerror(errno));
  }
  if (got != size)
    throw Error("a file is shorter than announced (" + std::to_string(got) + " of " + std::to_string(size) + " bytes)");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  EVP_DigestFinal_ex(sha.get(), digest, &digest_size);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < digest_size; ++i) {
    const unsigned char c = digest[i];
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

}  // namespace mnv2::remote
