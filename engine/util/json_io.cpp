// Bounded JSON parsing, writing and checked access on nlohmann::ordered_json (see mnv2/json_io.h).
#include "mnv2/json_io.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

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

namespace {

// Walks a document without building it, adding up what nlohmann::ordered_json would allocate for it (libstdc++,
// 64-bit): a value is 16 bytes in its parent (arrays grow by doubling: up to 32 per element); an object member
// is a pair of key and value (48 bytes, up to 96 with the spare capacity) and its key's characters past the
// 15 kept inline; a container or a string on the heap costs its header and the allocator's 16. It stops as
// soon as a bound is passed, so a hostile file costs one pass over its text and nothing more.
class SizeScan : public nlohmann::json_sax<Json> {
 public:
  explicit SizeScan(const InputBudget* budget) : budget_(budget) {}

  bool null() override { return value(0); }
  bool boolean(bool) override { return value(0); }
  bool number_integer(number_integer_t) override { return value(0); }
  bool number_unsigned(number_unsigned_t) override { return value(0); }
  bool number_float(number_float_t, const string_t&) override { return value(0); }
  bool string(string_t& s) override { return text(s, "string") && value(kHeap + 32 + heap_chars(s.size())); }
  bool binary(binary_t&) override { return value(0); }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override { return text(k, "key") && add(96 - 32 + heap_chars(k.size())); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    malformed = true;
    return false;
  }

  int64_t bytes = 16;  // the root
  bool malformed = false;
  std::string over;  // why the scan stopped early, if a bound was passed

 private:
  static constexpr int64_t kHeap = 16;  // malloc's header and rounding, per allocation
  static int64_t heap_chars(size_t n) { return n > 15 ? static_cast<int64_t>(n) + 1 + kHeap : 0; }

  bool add(int64_t n) {
    bytes += n;
    if (budget_ && budget_->max_parsed_bytes && static_cast<uint64_t>(bytes) > budget_->max_parsed_bytes) {
      over = "would take more than " + std::to_string(budget_->max_parsed_bytes >> 20) +
             " MiB of memory once parsed (at most that for a " + budget_->what + ")";
      return false;
    }
    return true;
  }
  // A value's slot in its container (an object's slot was counted with its key), then its own heap.
  bool value(int64_t heap) { return add((!objects_.empty() && !objects_.back() ? 32 : 0) + heap); }
  bool text(const string_t& s, const char* what) {
    if (budget_ && budget_->max_string_bytes && s.size() > budget_->max_string_bytes) {
      over = std::string("holds a ") + what + " of " + std::to_string(s.size()) + " bytes (at most " +
             std::to_string(budget_->max_string_bytes) + " in a " + budget_->what + ")";
      return false;
    }
    return true;
  }
  bool open(bool object) {
    if (objects_.size() >= static_cast<size_t>(kMaxDepth)) {
      over = "nesting deeper than " + std::to_string(kMaxDepth);
      return false;
    }
    if (!value(kHeap + 24)) return false;
    objects_.push_back(object);
    return true;
  }
  bool close() {
    objects_.pop_back();
    return true;
  }

  const InputBudget* budget_;
  std::vector<bool> objects_;  // the open containers: true for an object
};

}  // namespace

int64_t parsed_size(std::string_view text) {
  SizeScan scan(nullptr);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &scan);
  return ok ? scan.bytes : -1;
}

Json parse(std::string_view text, const InputBudget& budget) {
  SizeScan scan(&budget);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &scan);
  if (!ok && !scan.malformed) throw Error("json: " + scan.over);
  return parse(text);  // a malformed document is refused here, with the parser's own message
}

Json parse_file(const std::string& path, const InputBudget& budget) {
  const std::string text = read_input_file(path, budget);
  try {
    return parse(text, budget);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": not enough memory to parse the " + std::to_string(text.size()) + "-byte " + budget.what);
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
