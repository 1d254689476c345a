// Reading reference-style mooncake.json files: the shared JSON reader
// (common/json.h) with the limits a config file gets.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/json.h"

namespace mc::config {

constexpr int kMaxJsonDepth = 64;
constexpr size_t kMaxJsonBytes = 1 << 20;

using JsonValue = mc::Json;

// Errors give the line and the reason: "line 3: expected ',' or '}'".
inline Result<JsonValue> ParseJson(std::string_view text) {
  return ParseJsonDocument(text, {.max_depth = kMaxJsonDepth, .max_bytes = kMaxJsonBytes});
}

}  // namespace mc::config
