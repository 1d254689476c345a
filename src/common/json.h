// One small JSON reader for the whole tree: reference-style mooncake.json
// files (config), the etcd v3 gateway's replies (ha), REST bodies (rest).
//
// Parses one document (objects, arrays, strings, numbers, true/false/null)
// into a tree. Numbers keep their text, so sizes such as 3355443200 and
// etcd's int64-as-string values are not rounded through a double. Each
// caller names its own limits on nesting depth and input size. Errors are
// INVALID_PARAMS with the line and the reason: "line 3: expected ',' or '}'".
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mc {

struct JsonLimits {
  int max_depth = 64;
  size_t max_bytes = 1 << 20;
};

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded string; kNumber: the number as written
  std::vector<Json> items;                           // kArray
  std::map<std::string, Json, std::less<>> members;  // kObject (a repeated key: the last wins)

  // The member `name`, or a null value when absent or not an object.
  const Json& operator[](std::string_view name) const;
  // A number or a numeric string ("123", as etcd writes int64); 0 when
  // absent or not a whole number.
  int64_t Int() const;
  bool Bool() const { return kind == Kind::kBool && boolean; }
};

Result<Json> ParseJsonDocument(std::string_view text, JsonLimits limits);

}  // namespace mc
