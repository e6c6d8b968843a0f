// CSV: the one quoting rule of every writer (profile, compare, bench, eval, memory, roofline), and the one strict
// reader (RFC 4180) for what others write (Nsight Compute's --csv pages).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mnv2 {

// A CSV field, quoted (RFC 4180: inner quotes doubled) where it holds a comma, quote or line break.
std::string csv_quote(std::string_view text);

// Records of RFC 4180 text: fields split at commas, a quoted field may hold commas, line breaks and doubled quotes;
// records end at LF or CRLF; a last record without a line break counts, an empty text has none. Strict: a quote
// inside an unquoted field, text after a closing quote, or an unterminated quote throws Error naming the line.
// (Debian's libcsv is C with callbacks and unreleased since 2013; fast-cpp-csv-parser fixes the column count at
// compile time; ncu's raw page has hundreds of columns.)
std::vector<std::vector<std::string>> read_csv(std::string_view text);

}  // namespace mnv2
