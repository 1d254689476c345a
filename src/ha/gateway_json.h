// What EtcdHttp needs to talk JSON to etcd's v3 gateway: a small reader of
// one JSON document (numbers kept as text: etcd writes int64 as strings
// anyway), a writer's string escaping, and base64 (the gateway's encoding of
// every key and value). Limits: depth kMaxGatewayJsonDepth, input size
// kMaxGatewayJsonBytes. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mc::ha {

constexpr int kMaxGatewayJsonDepth = 32;
// etcd refuses requests above 1.5 MiB; a range reply of the log may carry
// several entries of up to kMaxLogEntryBytes, base64 grown by a third.
constexpr size_t kMaxGatewayJsonBytes = 64u << 20;

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // kString: decoded; kNumber: as written
  std::vector<Json> items;
  std::map<std::string, Json, std::less<>> members;

  // The member `name`, or a null value when absent or not an object.
  const Json& operator[](std::string_view name) const;
  // A number or a numeric string ("123"), as etcd writes int64; 0 when absent.
  int64_t Int() const;
  bool Bool() const { return kind == Kind::kBool && boolean; }
};

Result<Json> ParseGatewayJson(std::string_view text);

// `text` as a JSON string literal, quotes included.
std::string JsonString(std::string_view text);

std::string Base64Encode(std::string_view bytes);
// INVALID_PARAMS on a character outside the alphabet or a bad length.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace mc::ha
