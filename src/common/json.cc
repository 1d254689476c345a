#include "common/json.h"

#include <cctype>
#include <charconv>

namespace mc {

namespace {

class Parser {
 public:
  Parser(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  Result<Json> Document() {
    Json v;
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

  Status Value(Json& out, int depth) {
    if (depth > max_depth_) return Fail("nested deeper than " + std::to_string(max_depth_));
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out.kind = Json::Kind::kString;
      return String(out.text);
    }
    if (Word("true") || Word("false")) {
      out.kind = Json::Kind::kBool;
      out.boolean = c == 't';
      return Status::Ok();
    }
    if (Word("null")) {
      out.kind = Json::Kind::kNull;
      return Status::Ok();
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return Number(out);
    return Fail(std::string("unexpected character '") + c + "'");
  }

  Status Number(Json& out) {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' ||
                                s_[pos_] == '+' || s_[pos_] == '-')) {
      ++pos_;
    }
    out.kind = Json::Kind::kNumber;
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

  Status Hex4(unsigned& cp) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_++];
      if (!std::isxdigit(static_cast<unsigned char>(h))) return Fail("bad \\u escape");
      cp = cp * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h))
                                                ? h - '0'
                                                : std::tolower(h) - 'a' + 10);
    }
    return Status::Ok();
  }

  // \uXXXX as UTF-8; a surrogate pair becomes one 4-byte character, a lone
  // surrogate is refused rather than mis-decoded.
  Status Unicode(std::string& out) {
    unsigned cp = 0;
    MC_RETURN_IF_ERROR(Hex4(cp));
    if (cp >= 0xdc00 && cp <= 0xdfff) return Fail("lone low surrogate in a \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      unsigned low = 0;
      if (!Word("\\u")) return Fail("lone high surrogate in a \\u escape");
      MC_RETURN_IF_ERROR(Hex4(low));
      if (low < 0xdc00 || low > 0xdfff) return Fail("lone high surrogate in a \\u escape");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return Status::Ok();
  }

  Status Object(Json& out, int depth) {
    ++pos_;
    out.kind = Json::Kind::kObject;
    if (Eat('}')) return Status::Ok();
    do {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a quoted key");
      std::string key;
      MC_RETURN_IF_ERROR(String(key));
      if (!Eat(':')) return Fail("expected ':' after \"" + key + "\"");
      Json v;
      MC_RETURN_IF_ERROR(Value(v, depth + 1));
      out.members[key] = std::move(v);
    } while (Eat(','));
    if (!Eat('}')) return Fail("expected ',' or '}'");
    return Status::Ok();
  }

  Status Array(Json& out, int depth) {
    ++pos_;
    out.kind = Json::Kind::kArray;
    if (Eat(']')) return Status::Ok();
    do {
      out.items.emplace_back();
      MC_RETURN_IF_ERROR(Value(out.items.back(), depth + 1));
    } while (Eat(','));
    if (!Eat(']')) return Fail("expected ',' or ']'");
    return Status::Ok();
  }

  std::string_view s_;
  int max_depth_;
  size_t pos_ = 0;
};

const Json& NullJson() {
  static const Json kNull;
  return kNull;
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
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : 0;
}

Result<Json> ParseJsonDocument(std::string_view text, JsonLimits limits) {
  if (text.size() > limits.max_bytes) {
    return Error(ErrorCode::INVALID_PARAMS, "larger than " + std::to_string(limits.max_bytes) +
                                                " bytes (" + std::to_string(text.size()) + ")");
  }
  return Parser(text, limits.max_depth).Document();
}

}  // namespace mc
