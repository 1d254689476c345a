// What EtcdHttp needs to talk JSON to etcd's v3 gateway: the shared JSON
// reader (common/json.h) with the gateway's limits (depth
// kMaxGatewayJsonDepth, input size kMaxGatewayJsonBytes), a writer's string
// escaping, and base64 (the gateway's encoding of every key and value).
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/result.h"

namespace mc::ha {

constexpr int kMaxGatewayJsonDepth = 32;
// etcd refuses requests above 1.5 MiB; a range reply of the log may carry
// several entries of up to kMaxLogEntryBytes, base64 grown by a third.
constexpr size_t kMaxGatewayJsonBytes = 64u << 20;

using Json = mc::Json;

// PROTOCOL_ERROR naming the reason when the reply is not JSON or is beyond
// the limits above.
Result<Json> ParseGatewayJson(std::string_view text);

// `text` as a JSON string literal, quotes included.
std::string JsonString(std::string_view text);

std::string Base64Encode(std::string_view bytes);
// INVALID_PARAMS on a character outside the alphabet or a bad length.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace mc::ha
