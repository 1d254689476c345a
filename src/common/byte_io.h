// Little-endian byte coding, the one home of it: the master RPC wire format
// (proto, mooncake-protocol(7)), the data port's fixed headers
// (transfer/data_protocol.cc) and the RDMA descriptor and handshake
// (transfer/rdma/rdma_desc.cc) all read and write their integers here.
//
// StoreLe*/LoadLe* put and take one integer at a fixed position of a buffer
// the caller sized. ByteWriter appends to a std::string. ByteReader walks a
// byte range with bounds checks on every read; the first failure is sticky
// and remembered with the name of the field, so a decoder can read a whole
// struct and check once. ByteReader never reads past its range and never
// allocates more than the bytes that remain could describe. Plain values,
// not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc {

// The low `n` bytes of `v` at p[0..n), least significant first.
inline void StoreLe(void* p, uint64_t v, int n) {
  auto* b = static_cast<uint8_t*>(p);
  for (int i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
}
// The `n`-byte little-endian integer at p[0..n).
inline uint64_t LoadLe(const void* p, int n) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return v;
}
inline void StoreLe16(void* p, uint16_t v) { StoreLe(p, v, 2); }
inline void StoreLe32(void* p, uint32_t v) { StoreLe(p, v, 4); }
inline void StoreLe64(void* p, uint64_t v) { StoreLe(p, v, 8); }
inline uint16_t LoadLe16(const void* p) { return static_cast<uint16_t>(LoadLe(p, 2)); }
inline uint32_t LoadLe32(const void* p) { return static_cast<uint32_t>(LoadLe(p, 4)); }
inline uint64_t LoadLe64(const void* p) { return LoadLe(p, 8); }

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

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
  // u16 length, then the bytes; the caller keeps `s` under 64 KiB.
  void Str16(std::string_view s) {
    U16(static_cast<uint16_t>(s.size()));
    out_->append(s.data(), s.size());
  }
  void Raw(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }
  // LEB128: 7 bits a byte, least significant first, the top bit set on
  // every byte but the last; 1 byte below 128, at most 10.
  void Var(uint64_t v) {
    while (v >= 0x80) {
      out_->push_back(static_cast<char>(0x80 | (v & 0x7f)));
      v >>= 7;
    }
    out_->push_back(static_cast<char>(v));
  }
  // Var length, then the bytes.
  void VarStr(std::string_view s) {
    Var(s.size());
    out_->append(s.data(), s.size());
  }
  size_t size() const { return out_->size(); }

 private:
  void PutLe(uint64_t v, int n) {
    char b[8];
    StoreLe(b, v, n);
    out_->append(b, n);
  }
  std::string* out_;
};

class ByteReader {
 public:
  ByteReader(const void* data, size_t n)
      : p_(static_cast<const uint8_t*>(data)), end_(p_ + n) {}
  explicit ByteReader(std::string_view s) : ByteReader(s.data(), s.size()) {}

  bool ok() const { return error_ == nullptr; }
  size_t remaining() const { return ok() ? static_cast<size_t>(end_ - p_) : 0; }
  // Every byte read and no failure.
  bool AtEnd() const { return ok() && p_ == end_; }

  uint8_t U8(const char* field) { return static_cast<uint8_t>(GetLe(1, field)); }
  uint16_t U16(const char* field) { return static_cast<uint16_t>(GetLe(2, field)); }
  uint32_t U32(const char* field) { return static_cast<uint32_t>(GetLe(4, field)); }
  uint64_t U64(const char* field) { return GetLe(8, field); }
  int32_t I32(const char* field) { return static_cast<int32_t>(U32(field)); }
  // Only 0 and 1 are valid, so every value has exactly one encoding.
  bool Bool(const char* field);
  // A string (u32 length) of at most `max_bytes`.
  void Str(std::string* out, size_t max_bytes, const char* field);
  // A string with a u16 length, of at most `max_bytes`.
  void Str16(std::string* out, size_t max_bytes, const char* field);
  void Raw(void* out, size_t n, const char* field);
  // A Var (ByteWriter::Var) in its shortest form only, so every value has
  // exactly one encoding; fails past 64 bits.
  uint64_t Var(const char* field);
  // A VarStr of at most `max_bytes`.
  void VarStr(std::string* out, size_t max_bytes, const char* field);
  // Count's bounds, for a count written as a Var.
  uint32_t VarCount(size_t max_items, const char* field);
  // A vector count of at most `max_items`; also at most remaining() since
  // every element takes at least one byte, which bounds any reserve().
  uint32_t Count(size_t max_items, const char* field);

  void Fail(const char* field, const char* what);
  // PROTOCOL_ERROR naming the first failure; also fails on trailing bytes.
  Status Finish(std::string_view what);

 private:
  uint64_t GetLe(int n, const char* field);
  uint32_t CheckCount(uint64_t n, size_t max_items, const char* field);
  void StrBody(std::string* out, size_t n, size_t max_bytes, const char* field);

  const uint8_t* p_;
  const uint8_t* end_;
  const char* error_ = nullptr;  // static strings only: no allocation on the error path
  const char* error_what_ = nullptr;
};

}  // namespace mc
