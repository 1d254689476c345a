// Little-endian primitives of the mooncake wire format (mooncake-protocol(7)).
//
// Writer appends to a std::string. Reader walks a byte range with bounds
// checks on every read; the first failure is sticky and remembered with the
// name of the field, so a decoder can read a whole struct and check once.
// Reader never reads past its range and never allocates more than the bytes
// that remain could describe. Plain values, not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc::proto {

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}

  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { PutLe(v, 2); }
  void U32(uint32_t v) { PutLe(v, 4); }
  void U64(uint64_t v) { PutLe(v, 8); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Bool(bool v) { U8(v ? 1 : 0); }
  // u32 length, then the bytes.
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }
  void Raw(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }
  size_t size() const { return out_->size(); }

 private:
  void PutLe(uint64_t v, int n) {
    char b[8];
    for (int i = 0; i < n; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_->append(b, n);
  }
  std::string* out_;
};

class Reader {
 public:
  Reader(const void* data, size_t n) : p_(static_cast<const uint8_t*>(data)), end_(p_ + n) {}
  explicit Reader(std::string_view s) : Reader(s.data(), s.size()) {}

  bool ok() const { return error_ == nullptr; }
  size_t remaining() const { return ok() ? static_cast<size_t>(end_ - p_) : 0; }

  uint8_t U8(const char* field) { return static_cast<uint8_t>(GetLe(1, field)); }
  uint16_t U16(const char* field) { return static_cast<uint16_t>(GetLe(2, field)); }
  uint32_t U32(const char* field) { return static_cast<uint32_t>(GetLe(4, field)); }
  uint64_t U64(const char* field) { return GetLe(8, field); }
  int32_t I32(const char* field) { return static_cast<int32_t>(U32(field)); }
  // Only 0 and 1 are valid, so every value has exactly one encoding.
  bool Bool(const char* field);
  // A string of at most `max_bytes`.
  void Str(std::string* out, size_t max_bytes, const char* field);
  void Raw(void* out, size_t n, const char* field);
  // A vector count of at most `max_items`; also at most remaining() since
  // every element takes at least one byte, which bounds any reserve().
  uint32_t Count(size_t max_items, const char* field);

  void Fail(const char* field, const char* what);
  // PROTOCOL_ERROR naming the first failure; also fails on trailing bytes.
  Status Finish(std::string_view what);

 private:
  uint64_t GetLe(int n, const char* field);

  const uint8_t* p_;
  const uint8_t* end_;
  const char* error_ = nullptr;  // static strings only: no allocation on the error path
  const char* error_what_ = nullptr;
};

}  // namespace mc::proto
