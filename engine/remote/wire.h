// The agent protocol's messages on the wire (docs/REMOTE.md "The protocol"): one JSON object per line, every
// string that may hold any bytes (file names, arguments, the study's output) in base64, files in chunks.
// Internal to engine/remote.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "remote/process.h"

namespace mnv2::remote {

inline constexpr size_t kChunk = size_t{3} << 20;           // raw bytes of one "data" message (4 MiB of base64)
inline constexpr int64_t kMaxFileBytes = int64_t{4} << 30;  // a model (2 GiB) or an input tensor

// Writes `message` as one line; false when the reader is gone.
bool send(int fd, const json::Json& message);
// The next message from `reader` before `deadline`: nullopt at end of input. Throws Error on a line that is
// not a JSON object with a string "type", and TimeoutError at the deadline. `tick`, when given, runs every
// 200 ms while waiting and may throw to stop the wait (a cancel).
struct TimeoutError : Error {
  using Error::Error;
};
std::optional<json::Json> receive(LineReader& reader, Clock::time_point deadline,
                                  const std::function<void()>& tick = {});

// Sends the file open on `fd` (`size` bytes) as "data" messages and an "end"; `sent` is told the bytes so far.
bool send_file_data(int out_fd, int fd, int64_t size, const std::function<void(int64_t)>& sent = {});
// Receives "data" messages into `fd` until "end": exactly `size` bytes, or Error. Returns the SHA-256 (hex).
std::string receive_file_data(LineReader& reader, int fd, int64_t size, Clock::time_point deadline,
                              const std::function<void()>& tick = {});

}  // namespace mnv2::remote
