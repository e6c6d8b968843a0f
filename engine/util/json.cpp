// JSON parser and writer (see mnv2/json.h).
#include "mnv2/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mnv2/error.h"

namespace mnv2::json {

namespace {

[[noreturn]] void type_error(const char* want) { throw Error(std::string("json: expected ") + want); }

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  Value parse_document() {
    skip_ws();
    Value v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("trailing characters after the value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 512;
  const std::string& s_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("json: " + what + " at byte " + std::to_string(pos_));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool consume_word(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }

  Value parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 512");
    if (pos_ >= s_.size()) fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Value(parse_string());
    if (consume_word("true")) return Value(true);
    if (consume_word("false")) return Value(false);
    if (consume_word("null")) return Value();
    if (c == '-' || (c >= '0' && c <= '9')) return Value(parse_number());
    fail(std::string("unexpected character '") + c + "'");
  }

  Value parse_object(int depth) {
    expect('{');
    Object obj;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return Value(std::move(obj));
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      obj.emplace_back(std::move(key), parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return Value(std::move(obj));
    }
  }

  Value parse_array(int depth) {
    expect('[');
    Array arr;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return Value(std::move(arr));
    }
    for (;;) {
      skip_ws();
      arr.push_back(parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return Value(std::move(arr));
    }
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!consume_word("\\u")) fail("lone high surrogate");
            unsigned lo = parse_hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  double parse_number() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("bad number");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("bad fraction");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("bad exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    // from_chars: locale-independent (the Qt app may set a locale with a decimal comma) and reports range.
    double v = 0;
    const auto [end, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, v);
    if (ec != std::errc() || end != s_.data() + pos_ || !std::isfinite(v)) fail("number out of range");
    return v;
  }
};

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

void write_number(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  if (d == std::floor(d) && std::fabs(d) < 9.007199254740992e15) {
    out += std::to_string(static_cast<int64_t>(d));
    return;
  }
  // Shortest text that reads back to the same double, independent of the locale.
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, ec == std::errc() ? end : buf);
}

void write(std::string& out, const Value& v, int indent, int level) {
  auto newline = [&](int lvl) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  if (v.is_null()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_number()) {
    write_number(out, v.as_number());
  } else if (v.is_string()) {
    write_string(out, v.as_string());
  } else if (v.is_array()) {
    const Array& a = v.as_array();
    out += '[';
    // Arrays of plain numbers stay on one line: logits and shapes read better that way.
    bool flat = true;
    for (const Value& x : a) flat = flat && (x.is_number() || x.is_null() || x.is_bool());
    for (size_t i = 0; i < a.size(); ++i) {
      if (i) out += indent >= 0 && flat ? ", " : ",";
      if (!flat) newline(level + 1);
      write(out, a[i], indent, level + 1);
    }
    if (!flat && !a.empty()) newline(level);
    out += ']';
  } else {
    const Object& o = v.as_object();
    out += '{';
    for (size_t i = 0; i < o.size(); ++i) {
      if (i) out += ',';
      newline(level + 1);
      write_string(out, o[i].first);
      out += indent >= 0 ? ": " : ":";
      write(out, o[i].second, indent, level + 1);
    }
    if (!o.empty()) newline(level);
    out += '}';
  }
}

}  // namespace

bool Value::as_bool() const {
  if (!is_bool()) type_error("a boolean");
  return std::get<bool>(v_);
}
double Value::as_number() const {
  if (!is_number()) type_error("a number");
  return std::get<double>(v_);
}
int64_t Value::as_int() const {
  double d = as_number();
  if (d != std::floor(d) || std::fabs(d) > 9.007199254740992e15) type_error("an integer");
  return static_cast<int64_t>(d);
}
const std::string& Value::as_string() const {
  if (!is_string()) type_error("a string");
  return std::get<std::string>(v_);
}
const Array& Value::as_array() const {
  if (!is_array()) type_error("an array");
  return *std::get<std::shared_ptr<Array>>(v_);
}
Array& Value::as_array() {
  if (!is_array()) type_error("an array");
  return *std::get<std::shared_ptr<Array>>(v_);
}
const Object& Value::as_object() const {
  if (!is_object()) type_error("an object");
  return *std::get<std::shared_ptr<Object>>(v_);
}
Object& Value::as_object() {
  if (!is_object()) type_error("an object");
  return *std::get<std::shared_ptr<Object>>(v_);
}
const Value* Value::find(const std::string& key) const {
  for (const auto& [k, v] : as_object())
    if (k == key) return &v;
  return nullptr;
}
const Value& Value::at(const std::string& key) const {
  const Value* v = find(key);
  if (!v) throw Error("json: missing key '" + key + "'");
  return *v;
}
namespace {
// get() on the value at `key`, a type error rethrown naming the key (the missing-key error names it already).
template <class Get>
decltype(auto) typed_at(const Value& object, const std::string& key, Get get) {
  const Value& v = object.at(key);
  try {
    return get(v);
  } catch (const Error& e) {
    throw Error(named_error(key, e.what()));
  }
}
}  // namespace

bool Value::bool_at(const std::string& key) const {
  return typed_at(*this, key, [](const Value& v) { return v.as_bool(); });
}
double Value::number_at(const std::string& key) const {
  return typed_at(*this, key, [](const Value& v) { return v.as_number(); });
}
int64_t Value::int_at(const std::string& key) const {
  return typed_at(*this, key, [](const Value& v) { return v.as_int(); });
}
const std::string& Value::string_at(const std::string& key) const {
  return typed_at(*this, key, [](const Value& v) -> const std::string& { return v.as_string(); });
}
const Array& Value::array_at(const std::string& key) const {
  return typed_at(*this, key, [](const Value& v) -> const Array& { return v.as_array(); });
}

std::string named_error(const std::string& what, const std::string& message) {
  static const std::string prefix = "json: ";
  if (message.rfind(prefix, 0) == 0) return prefix + "'" + what + "': " + message.substr(prefix.size());
  return what + ": " + message;
}

Value& Value::set(const std::string& key, Value v) {
  if (is_null()) *this = Value(Object{});
  Object& o = as_object();
  for (auto& [k, old] : o)
    if (k == key) return old = std::move(v);
  o.emplace_back(key, std::move(v));
  return o.back().second;
}
void Value::push(Value v) {
  if (is_null()) *this = Value(Array{});
  as_array().push_back(std::move(v));
}

Value parse(const std::string& text) { return Parser(text).parse_document(); }

Value parse_file(const std::string& path) {
  // A FIFO or a device would block or never end; a JSON file is a plain file.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) throw Error(path + ": cannot open (no such file)");
  if (std::filesystem::is_directory(status)) throw Error(path + ": cannot open (it is a directory)");
  if (!ec && !std::filesystem::is_regular_file(status)) throw Error(path + ": cannot open (not a regular file)");
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

std::string dump(const Value& v, int indent) {
  std::string out;
  write(out, v, indent, 0);
  return out;
}

}  // namespace mnv2::json
