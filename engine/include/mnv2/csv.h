// The one CSV quoting rule of every writer (profile, compare, bench, eval, memory, roofline).
#pragma once

#include <string>
#include <string_view>

namespace mnv2 {

// A CSV field, quoted (RFC 4180: inner quotes doubled) where it holds a comma, quote or line break.
std::string csv_quote(std::string_view text);

}  // namespace mnv2
