// CSV quoting (see mnv2/csv.h).
#include "mnv2/csv.h"

namespace mnv2 {

std::string csv_quote(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    quoted += c;
    if (c == '"') quoted += '"';
  }
  return quoted + "\"";
}

}  // namespace mnv2
