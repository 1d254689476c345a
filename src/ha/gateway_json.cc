#include "ha/gateway_json.h"

#include "common/json_escape.h"

namespace mc::ha {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

Result<Json> ParseGatewayJson(std::string_view text) {
  auto doc = ParseJsonDocument(text, {.max_depth = kMaxGatewayJsonDepth,
                                      .max_bytes = kMaxGatewayJsonBytes});
  if (!doc.ok()) {
    return Error(ErrorCode::PROTOCOL_ERROR, "etcd gateway JSON: " + doc.status().message());
  }
  return doc;
}

std::string JsonString(std::string_view text) { return "\"" + JsonEscape(text) + "\""; }

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 |
                       static_cast<uint8_t>(bytes[i + 1]) << 8 | static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Error(ErrorCode::INVALID_PARAMS, "base64 of length " + std::to_string(text.size()));
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int pad = 0;
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int s = 0;
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++pad;
      } else if (pad > 0 || (s = Sextet(c)) < 0) {
        return Error(ErrorCode::INVALID_PARAMS, "bad base64 at " + std::to_string(i + j));
      }
      v = v << 6 | static_cast<uint32_t>(s);
    }
    out.push_back(static_cast<char>(v >> 16));
    if (pad < 2) out.push_back(static_cast<char>(v >> 8));
    if (pad < 1) out.push_back(static_cast<char>(v));
  }
  return out;
}

}  // namespace mc::ha
