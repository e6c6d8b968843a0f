// CSV quoting and reading (see mnv2/csv.h).
#include "mnv2/csv.h"

#include "mnv2/error.h"

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

std::vector<std::vector<std::string>> read_csv(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  size_t line = 1, i = 0;
  const auto fail = [&](const std::string& what) { throw Error("csv: " + what + " on line " + std::to_string(line)); };
  while (i < text.size()) {
    // One field, at the start of a record or after a comma.
    field.clear();
    if (text[i] == '"') {
      const size_t opened = line;
      ++i;
      for (;;) {
        if (i >= text.size()) {
          line = opened;
          fail("a quoted field is not closed");
        }
        const char c = text[i++];
        if (c == '"') {
          if (i < text.size() && text[i] == '"') {
            field += '"';
            ++i;
            continue;
          }
          break;
        }
        if (c == '\n') ++line;
        field += c;
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n' &&
          !(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n'))
        fail("text after a closing quote");
    } else {
      while (i < text.size() && text[i] != ',' && text[i] != '\n' &&
             !(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
        if (text[i] == '"') fail("a quote inside an unquoted field");
        field += text[i++];
      }
    }
    record.push_back(std::move(field));
    if (i >= text.size()) break;
    if (text[i] == ',') {
      ++i;
      if (i == text.size()) record.emplace_back();  // "a,b," ends with an empty field
      continue;
    }
    i += text[i] == '\r' ? 2 : 1;
    ++line;
    records.push_back(std::move(record));
    record.clear();
  }
  if (!record.empty()) records.push_back(std::move(record));
  return records;
}

}  // namespace mnv2
