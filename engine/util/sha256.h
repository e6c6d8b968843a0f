// SHA-256 through OpenSSL's libcrypto, as `sha256sum` prints it (64 lower-case hex digits): of bytes in memory,
// and of a whole file streamed through its descriptor. Internal to the engine.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace mnv2 {

std::string sha256_hex(std::span<const std::byte> bytes);
std::string sha256_hex(std::string_view bytes);

// Of the file open on `fd`, from its first byte to its end, read in chunks with pread (the descriptor's
// offset is left where it was). `what` names the file in the Error thrown when a read fails.
std::string sha256_fd_hex(int fd, const std::string& what);

}  // namespace mnv2
