// Terminal-safe text (see mnv2/printable.h).
#include "mnv2/printable.h"

#include <cstdint>
#include <cstdio>

namespace mnv2 {

namespace {

// The length of the valid UTF-8 sequence at `s[i]` (1..4), or 0 when it is not one (overlong forms,
// surrogates and code points past U+10FFFF are not valid).
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

void hex_escape(std::string& out, const char* format, unsigned value) {
  char buf[8];
  std::snprintf(buf, sizeof buf, format, value);
  out += buf;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    switch (c) {
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      hex_escape(out, "\\x%02x", c);
      ++i;
      continue;
    }
    const size_t n = utf8_length(text, i);
    if (n == 0) {
      hex_escape(out, "\\x%02x", c);
      ++i;
      continue;
    }
    if (n == 2 && c == 0xC2 && static_cast<uint8_t>(text[i + 1]) < 0xA0) {  // U+0080..U+009F: C1 controls
      hex_escape(out, "\\u%04x", static_cast<uint8_t>(text[i + 1]));
      i += 2;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace mnv2
