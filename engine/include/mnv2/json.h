// A small JSON value with a strict parser and a writer, for reports, CLI output and golden files.
// Numbers are doubles; integers up to 2^53 round-trip exactly. Object keys keep insertion order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mnv2::json {

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion order kept

class Value {
 public:
  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(int x) : v_(static_cast<double>(x)) {}
  Value(int64_t x) : v_(static_cast<double>(x)) {}
  Value(uint64_t x) : v_(static_cast<double>(x)) {}
  Value(double x) : v_(x) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
  Value(Object o) : v_(std::make_shared<Object>(std::move(o))) {}

  bool is_null() const { return v_.index() == 0; }
  bool is_bool() const { return v_.index() == 1; }
  bool is_number() const { return v_.index() == 2; }
  bool is_string() const { return v_.index() == 3; }
  bool is_array() const { return v_.index() == 4; }
  bool is_object() const { return v_.index() == 5; }

  // Typed access; throws mnv2::Error naming the expected type on a mismatch.
  bool as_bool() const;
  double as_number() const;
  int64_t as_int() const;  // must be integral
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Object helpers: find returns nullptr when absent; at() throws Error naming the key.
  const Value* find(const std::string& key) const;
  const Value& at(const std::string& key) const;
  Value& set(const std::string& key, Value v);  // replaces or appends
  void push(Value v);                           // arrays

  // at(key) and the typed access in one; a wrong type names the key: "json: 'batch': expected an integer".
  bool bool_at(const std::string& key) const;
  double number_at(const std::string& key) const;
  int64_t int_at(const std::string& key) const;
  const std::string& string_at(const std::string& key) const;
  const Array& array_at(const std::string& key) const;

 private:
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v_;
};

// The message of an Error thrown while reading `what` (a key, a field), naming it: "json: expected a
// number" becomes "json: 'what': expected a number"; any other message gets "what: " in front.
std::string named_error(const std::string& what, const std::string& message);

// Strict RFC 8259 parse; throws mnv2::Error with the byte offset on malformed input. Nesting depth is
// limited (512) so hostile input cannot exhaust the stack.
Value parse(const std::string& text);
Value parse_file(const std::string& path);  // errors name the file

// indent < 0: compact on one line; otherwise pretty-printed with that many spaces. Non-finite numbers
// are written as null.
std::string dump(const Value& v, int indent = -1);

}  // namespace mnv2::json
