// Reading the JSON objects of set_param / set_varaintpack_param: bounded nesting, typed fields with the
// user's own values in every message, and unknown keys ignored as ATB ignores them, with a warning naming each
// (an error under ATB_OPS_STRICT_PARAMS=1).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace atb_ops {

// Deeper documents are refused while parsing (a param is two levels deep; 100000 '[' would otherwise
// exhaust the stack when printed).
constexpr int kMaxJsonDepth = 32;

// At most `limit` characters of `text`, with the length of what was cut.
std::string excerpt(const std::string& text, size_t limit = 160);

// Parses `text` as one JSON object; raises ERROR_INVALID_PARAM naming `what` and showing an excerpt.
nlohmann::json parseJsonObject(const std::string& text, const std::string& what);

class JsonFields {
 public:
  // `what` decorates messages, e.g. "AllReduceOperation param".
  JsonFields(const nlohmann::json& object, std::string what);

  bool has(const char* key) const;
  int32_t int32(const char* key, int32_t fallback);
  int64_t int64(const char* key, int64_t fallback);
  uint64_t handle(const char* key, uint64_t fallback);  // a non-negative integer up to 2^64-1
  bool boolean(const char* key, bool fallback);
  std::string string(const char* key, const std::string& fallback);
  // An array of integers that fit int64 (a value >= 2^63 is reported as written, not wrapped).
  std::vector<int64_t> int64Array(const char* key, const std::vector<int64_t>& fallback);
  // The fields of a nested object (LinearParallelParam's twoDimTPInfo, moeInfo); an absent key reads as an
  // empty object, so every field keeps its default. The result refers into this object's JSON.
  JsonFields object(const char* key);
  // Keys no reader asked for: ATB's JSON readers ignore them (its own test files pass keys its params do not
  // have), so one warning names each with the nearest known key ("'rnak' (did you mean 'rank'?)"); with
  // ATB_OPS_STRICT_PARAMS=1 they are an ERROR_INVALID_PARAM listing the known keys.
  void checkUnknownKeys() const;
  // The unknown keys that look like typos of keys read so far ("'rnak' (did you mean 'rank'?)"), "" if none: an
  // error about a missing or default field names them (checkUnknownKeys runs only once every field is read).
  std::string likelyTypos() const;

 private:
  const nlohmann::json* find(const char* key);
  const nlohmann::json& object_;
  std::string what_;
  std::set<std::string> known_;
};

}  // namespace atb_ops
