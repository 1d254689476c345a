// A small JSON reader for reference-style mooncake.json files.
//
// Parses one document (objects, arrays, strings, numbers, true/false/null)
// into a tree. Numbers keep their text, so sizes such as 3355443200 are not
// rounded through a double. Limits: nesting depth kMaxJsonDepth, input size
// kMaxJsonBytes. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mc::config {

constexpr int kMaxJsonDepth = 64;
constexpr size_t kMaxJsonBytes = 1 << 20;

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded string; kNumber: the number as written
  std::vector<JsonValue> items;               // kArray
  std::map<std::string, JsonValue> members;   // kObject (a repeated key: the last wins)
};

// Errors give the line and the reason: "line 3: expected ',' or '}'".
Result<JsonValue> ParseJson(std::string_view text);

}  // namespace mc::config
