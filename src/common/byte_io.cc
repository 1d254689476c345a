#include "common/byte_io.h"

namespace mc {

uint64_t ByteReader::GetLe(int n, const char* field) {
  if (!ok()) return 0;
  if (end_ - p_ < n) {
    Fail(field, "truncated");
    return 0;
  }
  uint64_t v = LoadLe(p_, n);
  p_ += n;
  return v;
}

bool ByteReader::Bool(const char* field) {
  uint8_t v = U8(field);
  if (v > 1) Fail(field, "boolean is neither 0 nor 1");
  return v == 1;
}

void ByteReader::Str(std::string* out, size_t max_bytes, const char* field) {
  uint32_t n = U32(field);
  StrBody(out, n, max_bytes, field);
}

void ByteReader::Str16(std::string* out, size_t max_bytes, const char* field) {
  uint16_t n = U16(field);
  StrBody(out, n, max_bytes, field);
}

void ByteReader::StrBody(std::string* out, size_t n, size_t max_bytes, const char* field) {
  if (!ok()) return;
  if (n > max_bytes) return Fail(field, "string longer than its limit");
  if (static_cast<size_t>(end_ - p_) < n) return Fail(field, "string runs past the payload");
  out->assign(reinterpret_cast<const char*>(p_), n);
  p_ += n;
}

void ByteReader::Raw(void* out, size_t n, const char* field) {
  if (!ok()) return;
  if (static_cast<size_t>(end_ - p_) < n) return Fail(field, "truncated");
  std::memcpy(out, p_, n);
  p_ += n;
}

uint64_t ByteReader::Var(const char* field) {
  uint64_t v = 0;
  for (int shift = 0; ok(); shift += 7) {
    if (p_ == end_) {
      Fail(field, "truncated");
      break;
    }
    const uint8_t b = *p_++;
    if (shift == 63 && b > 1) {
      Fail(field, "varint exceeds 64 bits");
      break;
    }
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      if (b == 0 && shift > 0) Fail(field, "varint not in its shortest form");
      break;
    }
  }
  return ok() ? v : 0;
}

void ByteReader::VarStr(std::string* out, size_t max_bytes, const char* field) {
  const uint64_t n = Var(field);
  if (n > max_bytes) return Fail(field, "string longer than its limit");
  StrBody(out, static_cast<size_t>(n), max_bytes, field);
}

uint32_t ByteReader::Count(size_t max_items, const char* field) {
  return CheckCount(U32(field), max_items, field);
}

uint32_t ByteReader::VarCount(size_t max_items, const char* field) {
  return CheckCount(Var(field), max_items, field);
}

uint32_t ByteReader::CheckCount(uint64_t n, size_t max_items, const char* field) {
  if (!ok()) return 0;
  if (n > max_items || n > UINT32_MAX) {
    Fail(field, "more items than the limit");
    return 0;
  }
  if (n > static_cast<size_t>(end_ - p_)) {
    Fail(field, "more items than bytes left");
    return 0;
  }
  return static_cast<uint32_t>(n);
}

void ByteReader::Fail(const char* field, const char* what) {
  if (!ok()) return;
  error_ = field;
  error_what_ = what;
  p_ = end_;
}

Status ByteReader::Finish(std::string_view what) {
  if (ok() && p_ != end_) Fail("end of payload", "trailing bytes");
  if (ok()) return Status::Ok();
  std::string msg = "malformed ";
  msg.append(what);
  msg += ": field '";
  msg += error_;
  msg += "': ";
  msg += error_what_;
  return Status(ErrorCode::PROTOCOL_ERROR, std::move(msg));
}

}  // namespace mc
