#include "core/json_fields.h"

#include <c10/util/StringUtil.h>

#include <algorithm>
#include <cctype>

#include "core/options.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using nlohmann::json;

std::string show(const json& v) {
  // Depth is bounded at parse time, so dump's recursion is too; long arrays are cut.
  return excerpt(v.dump());
}

}  // namespace

std::string excerpt(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit) + "... (" + std::to_string(text.size()) + " characters)";
}

json parseJsonObject(const std::string& text, const std::string& what) {
  int deepest = 0;
  const json::parser_callback_t limitDepth = [&deepest](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) {
      deepest = depth;
      return false;
    }
    return true;
  };
  json parsed;
  try {
    // The callback only sees depth as values complete; a pre-scan of brackets refuses deep documents
    // before the parser builds anything.
    int depth = 0;
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (inString) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          inString = false;
        }
      } else if (c == '"') {
        inString = true;
      } else if (c == '[' || c == '{') {
        ATB_CHECK(++depth <= kMaxJsonDepth, ERROR_INVALID_PARAM, what, " nests deeper than ", kMaxJsonDepth,
                  " levels: '", excerpt(text, 80), "'");
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
    parsed = json::parse(text, limitDepth);
  } catch (const json::exception& e) {
    ATB_FAIL(ERROR_INVALID_PARAM, what, " is not valid JSON (", e.what(), "): '", excerpt(text), "'");
  }
  ATB_CHECK(deepest == 0, ERROR_INVALID_PARAM, what, " nests deeper than ", kMaxJsonDepth, " levels");
  ATB_CHECK(parsed.is_object(), ERROR_INVALID_PARAM, what, " must be a JSON object, got '", excerpt(text), "'");
  return parsed;
}

JsonFields::JsonFields(const json& object, std::string what) : object_(object), what_(std::move(what)) {}

bool JsonFields::has(const char* key) const {
  return object_.contains(key);
}

const json* JsonFields::find(const char* key) {
  known_.insert(key);
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

int64_t JsonFields::int64(const char* key, int64_t fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  ATB_CHECK(v->is_number_integer(), ERROR_INVALID_PARAM, what_, " '", key, "' must be an integer, got ", show(*v));
  ATB_CHECK(!v->is_number_unsigned() || v->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX), ERROR_INVALID_PARAM,
            what_, " '", key, "' is ", v->get<uint64_t>(), ", which does not fit int64");
  return v->get<int64_t>();
}

int32_t JsonFields::int32(const char* key, int32_t fallback) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  const int64_t x = int64(key, fallback);
  ATB_CHECK(x >= INT32_MIN && x <= INT32_MAX, ERROR_INVALID_PARAM, what_, " '", key, "' does not fit int32, got ", x);
  return static_cast<int32_t>(x);
}

uint64_t JsonFields::handle(const char* key, uint64_t fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  // Handles are pointers: the whole unsigned range, no negatives.
  ATB_CHECK(v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0), ERROR_INVALID_PARAM, what_,
            " '", key, "' must be a non-negative integer handle, got ", show(*v));
  return v->get<uint64_t>();
}

bool JsonFields::boolean(const char* key, bool fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  // ATB's JSON parser reads booleans with get<bool>(), and its tests also pass 0/1.
  if (v->is_boolean()) return v->get<bool>();
  ATB_CHECK(v->is_number_integer() && (v->get<int64_t>() == 0 || v->get<int64_t>() == 1), ERROR_INVALID_PARAM, what_,
            " '", key, "' must be true/false (or 0/1), got ", show(*v));
  return v->get<int64_t>() == 1;
}

std::string JsonFields::string(const char* key, const std::string& fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  ATB_CHECK(v->is_string(), ERROR_INVALID_PARAM, what_, " '", key, "' must be a string, got ", show(*v));
  return v->get<std::string>();
}

std::vector<int64_t> JsonFields::int64Array(const char* key, const std::vector<int64_t>& fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  ATB_CHECK(v->is_array(), ERROR_INVALID_PARAM, what_, " '", key, "' must be an array of integers, got ", show(*v));
  std::vector<int64_t> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    ATB_CHECK(item.is_number_integer(), ERROR_INVALID_PARAM, what_, " '", key, "' must hold integers only, but ", key,
              "[", i, "] is ", show(item));
    ATB_CHECK(!item.is_number_unsigned() || item.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX),
              ERROR_INVALID_PARAM, what_, " ", key, "[", i, "] is ", item.get<uint64_t>(),
              ", which does not fit int64");
    out.push_back(item.get<int64_t>());
  }
  return out;
}

JsonFields JsonFields::object(const char* key) {
  static const json kEmpty = json::object();
  const json* v = find(key);
  if (v == nullptr) return JsonFields(kEmpty, what_ + " '" + key + "'");
  ATB_CHECK(v->is_object(), ERROR_INVALID_PARAM, what_, " '", key, "' must be an object, got ", show(*v));
  return JsonFields(*v, what_ + " '" + key + "'");
}

namespace {

// Edit distance (insertions, deletions, substitutions, adjacent swaps): how far a typo is from a key.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The known key `key` is most likely a typo of (within a third of its length, at most 3 edits), or "".
std::string nearest(const std::string& key, const std::set<std::string>& known) {
  std::string best;
  size_t bestDistance = std::min<size_t>(3, std::max<size_t>(1, key.size() / 3)) + 1;
  for (const std::string& k : known) {
    const size_t d = distance(key, k);
    if (d < bestDistance) {
      bestDistance = d;
      best = k;
    }
  }
  return best;
}

// "'rnak' (did you mean 'rank'?)": the key, and its nearest known key if any.
std::string withNearest(const std::string& key, const std::set<std::string>& known) {
  const std::string best = nearest(key, known);
  const std::string shown = "'" + excerpt(key, 64) + "'";
  return best.empty() ? shown : shown + " (did you mean '" + best + "'?)";
}

}  // namespace

std::string JsonFields::likelyTypos() const {
  std::vector<std::string> typos;
  for (const auto& item : object_.items()) {
    if (known_.count(item.key()) == 0 && !nearest(item.key(), known_).empty()) {
      typos.push_back(withNearest(item.key(), known_));
    }
  }
  return c10::Join(", ", typos);
}

void JsonFields::checkUnknownKeys() const {
  std::vector<std::string> unknown;
  for (const auto& item : object_.items()) {
    if (known_.count(item.key()) == 0) unknown.push_back(withNearest(item.key(), known_));
  }
  if (unknown.empty()) return;
  const std::string keys = c10::Join(", ", unknown);
  ATB_CHECK(!readOptions().strictParams, ERROR_INVALID_PARAM, what_, " has unknown key(s) ", keys,
            "; known keys: ", c10::Join(", ", std::vector<std::string>(known_.begin(), known_.end())));
  TORCH_WARN("atb_ops: ", what_, " has unknown key(s) ", keys,
             ", ignored as ATB ignores them (ATB_OPS_STRICT_PARAMS=1 makes this an error)");
}

}  // namespace atb_ops
