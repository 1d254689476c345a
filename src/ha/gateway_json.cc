#include "ha/gateway_json.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace mc::ha {

namespace {

const Json& NullJson() {
  static const Json kNull;
  return kNull;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<Json> Document() {
    Json v;
    Value(&v, 0);
    Space();
    if (error_.empty() && pos_ != s_.size()) Fail("trailing bytes");
    if (!error_.empty()) {
      return Error(ErrorCode::PROTOCOL_ERROR,
                   "etcd gateway JSON at byte " + std::to_string(pos_) + ": " + error_);
    }
    return v;
  }

 private:
  void Fail(const char* why) {
    if (error_.empty()) error_ = why;
  }
  void Space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
                                s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    Space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  void Value(Json* v, int depth) {
    if (depth > kMaxGatewayJsonDepth) return Fail("nested too deep");
    Space();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->kind = Json::Kind::kString;
      return String(&v->text);
    }
    if (Word("true") || Word("false")) {
      v->kind = Json::Kind::kBool;
      v->boolean = c == 't';
      return;
    }
    if (Word("null")) return;
    return Number(v);
  }

  void Number(Json* v) {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '-' || s_[pos_] == '+' || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
    }
    if (pos_ == start) return Fail("unexpected character");
    v->kind = Json::Kind::kNumber;
    v->text = std::string(s_.substr(start, pos_ - start));
  }

  void Object(Json* v, int depth) {
    v->kind = Json::Kind::kObject;
    ++pos_;
    if (Eat('}')) return;
    do {
      Space();
      std::string name;
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a member name");
      String(&name);
      if (!Eat(':')) return Fail("expected ':'");
      Value(&v->members[name], depth + 1);
      if (!error_.empty()) return;
    } while (Eat(','));
    if (!Eat('}')) Fail("expected ',' or '}'");
  }

  void Array(Json* v, int depth) {
    v->kind = Json::Kind::kArray;
    ++pos_;
    if (Eat(']')) return;
    do {
      Value(&v->items.emplace_back(), depth + 1);
      if (!error_.empty()) return;
    } while (Eat(','));
    if (!Eat(']')) Fail("expected ',' or ']'");
  }

  void String(std::string* out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      c = s_[pos_++];
      switch (c) {
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'u': Unicode(out); break;
        default: out->push_back(c);
      }
    }
    if (pos_ >= s_.size()) return Fail("unterminated string");
    ++pos_;
  }

  // \uXXXX as UTF-8; etcd escapes only '<', '>', '&' and controls this way,
  // so surrogate pairs are kept as two 3-byte forms rather than joined.
  void Unicode(std::string* out) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    unsigned cp = 0;
    auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, cp, 16);
    if (ec != std::errc() || end != s_.data() + pos_ + 4) return Fail("bad \\u escape");
    pos_ += 4;
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

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

const Json& Json::operator[](std::string_view name) const {
  if (kind != Kind::kObject) return NullJson();
  auto it = members.find(name);
  return it == members.end() ? NullJson() : it->second;
}

int64_t Json::Int() const {
  if (kind != Kind::kNumber && kind != Kind::kString) return 0;
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

Result<Json> ParseGatewayJson(std::string_view text) {
  if (text.size() > kMaxGatewayJsonBytes) {
    return Error(ErrorCode::PROTOCOL_ERROR, "etcd gateway reply of " +
                                                std::to_string(text.size()) + " bytes is too large");
  }
  return Parser(text).Document();
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

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
