// Bounded JSON parsing, writing and checked access on nlohmann::ordered_json (see mnv2/json_io.h).
#include "mnv2/json_io.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "mnv2/error.h"

namespace mnv2::json {

namespace {

[[noreturn]] void type_error(const char* want) { throw Error(std::string("json: expected ") + want); }

struct TooDeep {};  // thrown out of the parser callback; becomes an Error below

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." without the
// exception id and the line/column (the byte offset follows instead).
std::string parse_error_reason(const std::string& what) {
  const size_t at = what.find("parse error");
  const size_t colon = what.find(": ", at == std::string::npos ? 0 : at);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

constexpr double kExactDoubleLimit = 9007199254740992.0;  // 2^53

template <class Get>
decltype(auto) typed_at(const Json& object, const std::string& key, Get get) {
  const Json& v = at(object, key);
  try {
    return get(v);
  } catch (const Error& e) {
    throw Error(named_error(key, e.what()));
  }
}

}  // namespace

Json parse(std::string_view text) {
  // The callback sees every container as it opens, with the number of containers around it: input nested
  // deeper than kMaxDepth is refused there, before more of it is built.
  const Json::parser_callback_t bound_depth = [](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) && depth >= kMaxDepth)
      throw TooDeep{};
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), bound_depth);
  } catch (const TooDeep&) {
    throw Error("json: nesting deeper than " + std::to_string(kMaxDepth));
  } catch (const Json::parse_error& e) {
    // nlohmann counts the bytes read, the offending one included: the offset is one less.
    throw Error("json: " + parse_error_reason(e.what()) + " at byte " + std::to_string(e.byte > 0 ? e.byte - 1 : 0));
  } catch (const Json::out_of_range&) {  // a number beyond double's range (1e999)
    throw Error("json: number out of range");
  } catch (const Json::exception& e) {
    throw Error(std::string("json: ") + e.what());
  }
}

Json parse_file(const std::string& path, uintmax_t max_bytes) {
  // A FIFO or a device would block or never end; a JSON file is a plain file.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) throw Error(path + ": cannot open (no such file)");
  if (std::filesystem::is_directory(status)) throw Error(path + ": cannot open (it is a directory)");
  if (!ec && !std::filesystem::is_regular_file(status)) throw Error(path + ": cannot open (not a regular file)");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw Error(path + ": " + std::to_string(size) + " bytes is more than this file can be (at most " +
                std::to_string(max_bytes) + " bytes)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path + ": read failed");
  try {
    return parse(ss.str());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

std::string dump(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

bool as_bool(const Json& v) {
  if (!v.is_boolean()) type_error("a boolean");
  return v.get<bool>();
}

double as_number(const Json& v) {
  if (!v.is_number()) type_error("a number");
  return v.get<double>();
}

int64_t as_int(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) type_error("an integer");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  const double d = as_number(v);
  // A number written with a fraction or exponent is an integer when it is one exactly.
  if (d != std::floor(d) || std::fabs(d) > kExactDoubleLimit) type_error("an integer");
  return static_cast<int64_t>(d);
}

const std::string& as_string(const Json& v) {
  if (!v.is_string()) type_error("a string");
  return v.get_ref<const std::string&>();
}

const Json& as_array(const Json& v) {
  if (!v.is_array()) type_error("an array");
  return v;
}

const Json& as_object(const Json& v) {
  if (!v.is_object()) type_error("an object");
  return v;
}

const Json* find(const Json& object, const std::string& key) {
  const auto it = as_object(object).find(key);
  return it == object.end() ? nullptr : &*it;
}

const Json& at(const Json& object, const std::string& key) {
  const Json* v = find(object, key);
  if (!v) throw Error("json: missing key '" + key + "'");
  return *v;
}

bool bool_at(const Json& object, const std::string& key) { return typed_at(object, key, as_bool); }
double number_at(const Json& object, const std::string& key) { return typed_at(object, key, as_number); }
int64_t int_at(const Json& object, const std::string& key) { return typed_at(object, key, as_int); }
const std::string& string_at(const Json& object, const std::string& key) {
  return typed_at(object, key, [](const Json& v) -> const std::string& { return as_string(v); });
}
const Json& array_at(const Json& object, const std::string& key) {
  return typed_at(object, key, [](const Json& v) -> const Json& { return as_array(v); });
}

std::string named_error(const std::string& what, const std::string& message) {
  static const std::string prefix = "json: ";
  if (message.rfind(prefix, 0) == 0) return prefix + "'" + what + "': " + message.substr(prefix.size());
  return what + ": " + message;
}

}  // namespace mnv2::json
