// Trace parsing: a small hand-written parser for exactly the reference's
// one-object-per-line shape (four keys, non-negative integers, one array of
// integers). Anything else is an error naming the line and column.
#include "eviction/trace.h"

#include <fstream>
#include <sstream>
#include <unordered_set>

namespace mc::bench {
namespace {

class LineParser {
 public:
  LineParser(std::string_view line, std::string_view source, size_t line_no)
      : s_(line), source_(source), line_no_(line_no) {}

  Result<TraceRequest> Parse() {
    TraceRequest req;
    bool seen[4] = {false, false, false, false};
    MC_RETURN_IF_ERROR(Expect('{'));
    for (bool first = true;; first = false) {
      SkipSpace();
      if (Peek() == '}' && !first) break;
      if (!first) MC_RETURN_IF_ERROR(Expect(','));
      MC_ASSIGN_OR_RETURN(std::string_view key, ParseKey());
      MC_RETURN_IF_ERROR(Expect(':'));
      int field = FieldIndex(key);
      if (field < 0) return Fail("unknown key \"" + std::string(key) + "\"");
      if (seen[field]) return Fail("duplicate key \"" + std::string(key) + "\"");
      seen[field] = true;
      if (field == 3) {
        MC_RETURN_IF_ERROR(ParseIds(&req.hash_ids));
        continue;
      }
      MC_ASSIGN_OR_RETURN(uint64_t v, ParseUint(key));
      (field == 0 ? req.timestamp_ms : field == 1 ? req.input_length : req.output_length) = v;
    }
    ++pos_;  // '}'
    SkipSpace();
    if (pos_ != s_.size()) return Fail("trailing characters after the object");
    for (int f = 0; f < 4; ++f) {
      if (!seen[f]) return Fail("missing key \"" + std::string(kKeys[f]) + "\"");
    }
    return req;
  }

 private:
  static constexpr std::string_view kKeys[4] = {"timestamp", "input_length",
                                                "output_length", "hash_ids"};
  static int FieldIndex(std::string_view key) {
    for (int i = 0; i < 4; ++i) {
      if (kKeys[i] == key) return i;
    }
    return -1;
  }

  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }

  Status Fail(const std::string& what) const {
    std::ostringstream out;
    out << source_ << ":" << line_no_ << ": " << what << " (column " << pos_ + 1 << ")";
    return Error(ErrorCode::INVALID_PARAMS, out.str());
  }

  Status Expect(char c) {
    SkipSpace();
    if (Peek() != c) {
      std::string got = pos_ < s_.size() ? std::string("'") + s_[pos_] + "'" : "end of line";
      return Fail(std::string("expected '") + c + "', got " + got);
    }
    ++pos_;
    return Status::Ok();
  }

  Result<std::string_view> ParseKey() {
    MC_RETURN_IF_ERROR(Expect('"'));
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') ++pos_;
    if (pos_ == s_.size()) return Fail("unterminated key");
    std::string_view key = s_.substr(start, pos_ - start);
    ++pos_;
    return key;
  }

  Result<uint64_t> ParseUint(std::string_view what) {
    SkipSpace();
    if (Peek() < '0' || Peek() > '9') {
      return Fail("expected a non-negative integer for \"" + std::string(what) + "\"");
    }
    uint64_t v = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      uint64_t digit = uint64_t(Peek() - '0');
      if (v > (UINT64_MAX - digit) / 10) return Fail("integer overflows 64 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    return v;
  }

  Status ParseIds(std::vector<uint64_t>* ids) {
    MC_RETURN_IF_ERROR(Expect('['));
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      if (ids->size() >= kMaxBlocksPerRequest) return Fail("more hash_ids than the limit");
      MC_ASSIGN_OR_RETURN(uint64_t id, ParseUint("hash_ids"));
      ids->push_back(id);
      SkipSpace();
      if (Peek() == ']') break;
      MC_RETURN_IF_ERROR(Expect(','));
    }
    ++pos_;
    return Status::Ok();
  }

  std::string_view s_;
  std::string_view source_;
  size_t line_no_;
  size_t pos_ = 0;
};

}  // namespace

Result<Trace> ParseTrace(std::string_view text, std::string_view source) {
  Trace trace;
  std::unordered_set<uint64_t> distinct;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.size() > kMaxTraceLineBytes) {
      return Error(ErrorCode::INVALID_PARAMS, std::string(source) + ":" +
                                                  std::to_string(line_no) +
                                                  ": line longer than the limit");
    }
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    MC_ASSIGN_OR_RETURN(TraceRequest req, LineParser(line, source, line_no).Parse());
    trace.total_blocks += req.hash_ids.size();
    distinct.insert(req.hash_ids.begin(), req.hash_ids.end());
    trace.requests.push_back(std::move(req));
  }
  trace.distinct_blocks = distinct.size();
  return trace;
}

Result<Trace> LoadTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorCode::INVALID_PARAMS, "cannot open trace '" + path + "'");
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Error(ErrorCode::INVALID_PARAMS, "cannot read trace '" + path + "'");
  return ParseTrace(buf.str(), path);
}

}  // namespace mc::bench
