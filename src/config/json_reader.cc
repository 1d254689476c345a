#include "config/json_reader.h"

#include <cctype>

namespace mc::config {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<JsonValue> Document() {
    JsonValue v;
    MC_RETURN_IF_ERROR(Value(v, 0));
    SkipSpace();
    if (pos_ != s_.size()) return Fail("unexpected text after the document");
    return v;
  }

 private:
  Status Fail(const std::string& why) const {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    return Error(ErrorCode::INVALID_PARAMS, "line " + std::to_string(line) + ": " + why);
  }

  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Eat(char c) {
    SkipSpace();
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

  Status Value(JsonValue& out, int depth) {
    if (depth > kMaxJsonDepth) return Fail("nested deeper than " + std::to_string(kMaxJsonDepth));
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out.kind = JsonValue::Kind::kString;
      return String(out.text);
    }
    if (Word("true") || Word("false")) {
      out.kind = JsonValue::Kind::kBool;
      out.boolean = c == 't';
      return Status::Ok();
    }
    if (Word("null")) {
      out.kind = JsonValue::Kind::kNull;
      return Status::Ok();
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return Number(out);
    return Fail(std::string("unexpected character '") + c + "'");
  }

  Status Number(JsonValue& out) {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' ||
                                s_[pos_] == '+' || s_[pos_] == '-')) {
      ++pos_;
    }
    out.kind = JsonValue::Kind::kNumber;
    out.text = std::string(s_.substr(start, pos_ - start));
    if (out.text == "-") return Fail("bad number");
    return Status::Ok();
  }

  Status String(std::string& out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': MC_RETURN_IF_ERROR(Unicode(out)); break;
        default: return Fail(std::string("bad escape '\\") + e + "'");
      }
    }
    if (pos_ >= s_.size()) return Fail("unterminated string");
    ++pos_;  // closing quote
    return Status::Ok();
  }

  // \uXXXX as UTF-8; surrogate pairs are not needed for config values and
  // are refused rather than mis-decoded.
  Status Unicode(std::string& out) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    unsigned cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_++];
      if (!std::isxdigit(static_cast<unsigned char>(h))) return Fail("bad \\u escape");
      cp = cp * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h))
                                                ? h - '0'
                                                : std::tolower(h) - 'a' + 10);
    }
    if (cp >= 0xd800 && cp <= 0xdfff) return Fail("surrogate \\u escapes are not supported");
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return Status::Ok();
  }

  Status Object(JsonValue& out, int depth) {
    ++pos_;
    out.kind = JsonValue::Kind::kObject;
    if (Eat('}')) return Status::Ok();
    do {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a quoted key");
      std::string key;
      MC_RETURN_IF_ERROR(String(key));
      if (!Eat(':')) return Fail("expected ':' after \"" + key + "\"");
      JsonValue v;
      MC_RETURN_IF_ERROR(Value(v, depth + 1));
      out.members[key] = std::move(v);
    } while (Eat(','));
    if (!Eat('}')) return Fail("expected ',' or '}'");
    return Status::Ok();
  }

  Status Array(JsonValue& out, int depth) {
    ++pos_;
    out.kind = JsonValue::Kind::kArray;
    if (Eat(']')) return Status::Ok();
    do {
      out.items.emplace_back();
      MC_RETURN_IF_ERROR(Value(out.items.back(), depth + 1));
    } while (Eat(','));
    if (!Eat(']')) return Fail("expected ',' or ']'");
    return Status::Ok();
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Result<JsonValue> ParseJson(std::string_view text) {
  if (text.size() > kMaxJsonBytes) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "larger than " + std::to_string(kMaxJsonBytes) + " bytes");
  }
  return Parser(text).Document();
}

}  // namespace mc::config
