// Reading and writing JSON with nlohmann::ordered_json (key order as written): a bounded parse that refuses
// hostile input with a clear mnv2::Error, and checked access whose errors name the key.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "mnv2/input_files.h"

namespace mnv2::json {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxDepth = 512;  // deeper input is refused before it is built

// Strict RFC 8259 parse; throws mnv2::Error "json: WHAT at byte N" on malformed input and "json: nesting
// deeper than 512" on deep input, so hostile input cannot exhaust the stack or memory.
Json parse(std::string_view text);
// `text` parsed within `budget` (mnv2/input_files.h): a first pass that builds nothing refuses a document
// whose parsed form would take more than budget.max_parsed_bytes, or that holds a longer string than
// budget.max_string_bytes, before any of it is built.
Json parse(std::string_view text, const InputBudget& budget);
// A regular file within `budget`, parsed as above; errors name the file.
Json parse_file(const std::string& path, const InputBudget& budget = inputs::kJsonDocument);
// The memory the parsed form of `text` would take (nlohmann::ordered_json on a 64-bit libstdc++: values,
// containers, keys, strings and the containers' spare capacity), or -1 if `text` is not JSON.
int64_t parsed_size(std::string_view text);

// indent < 0: one line; otherwise that many spaces a level. Non-finite numbers are written as null; bytes
// that are not UTF-8 are replaced (U+FFFD) rather than refused.
std::string dump(const Json& value, int indent = -1);

// Checked access: a mismatch throws Error "json: expected an integer" (numbers that are integral and within
// 2^53 count as integers, as they read back exactly), a missing key "json: missing key 'k'".
bool as_bool(const Json& v);
double as_number(const Json& v);
int64_t as_int(const Json& v);
const std::string& as_string(const Json& v);
const Json& as_array(const Json& v);
const Json& as_object(const Json& v);
const Json* find(const Json& object, const std::string& key);  // nullptr when absent; Error if not an object
const Json& at(const Json& object, const std::string& key);

// at(key) and the typed access in one; a wrong type names the key: "json: 'batch': expected an integer".
bool bool_at(const Json& object, const std::string& key);
double number_at(const Json& object, const std::string& key);
int64_t int_at(const Json& object, const std::string& key);
const std::string& string_at(const Json& object, const std::string& key);
const Json& array_at(const Json& object, const std::string& key);

// The message of an Error thrown while reading `what`, naming it: "json: expected a number" becomes
// "json: 'what': expected a number"; any other message gets "what: " in front.
std::string named_error(const std::string& what, const std::string& message);

}  // namespace mnv2::json
