#include "common/capability.h"

#include "common/byte_io.h"
#include "common/crypto.h"

namespace mc {

namespace {

void PutLe(std::string* out, uint64_t v) { ByteWriter(out).U64(v); }

}  // namespace

std::string SignCapability(std::string_view access_key, const CapabilityGrant& grant) {
  std::string msg = "mooncake-cap-v2";
  msg.push_back(static_cast<char>(grant.op));
  PutLe(&msg, grant.incarnation);
  PutLe(&msg, grant.offset);
  PutLe(&msg, grant.size_bytes);
  PutLe(&msg, grant.expiry_unix_ms);
  PutLe(&msg, grant.term);
  return HmacSha256(access_key, msg);
}

namespace {
// A retire changes what the store serves, so it is refused as a write.
bool Writes(CapabilityOp op) { return op == CapabilityOp::kWrite || op == CapabilityOp::kRetire; }
}  // namespace

Status CheckGrantBounds(const CapabilityGrant& grant, CapabilityOp op, uint64_t offset,
                        uint64_t len, uint64_t now_unix_ms) {
  ErrorCode code = Writes(op) ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ;
  const std::string what = op == CapabilityOp::kRetire ? "retire" : Writes(op) ? "write" : "read";
  if (grant.op != op) return Error(code, what + " with a grant for another operation");
  // Expired at expiry_unix_ms itself, so the grant's life is [signed, expiry).
  if (now_unix_ms >= grant.expiry_unix_ms) {
    return Error(code, what + " with an expired grant (" +
                           std::to_string(now_unix_ms - grant.expiry_unix_ms) + " ms ago)");
  }
  uint64_t end = offset + len;
  if (end < offset || offset < grant.offset || end > grant.offset + grant.size_bytes) {
    return Error(code, what + " of [" + std::to_string(offset) + ", " + std::to_string(end) +
                           ") outside the granted buffer");
  }
  return Status::Ok();
}

Status CheckCapability(std::string_view access_key, const CapabilityGrant& grant,
                       std::string_view signature, CapabilityOp op, uint64_t offset,
                       uint64_t len, uint64_t now_unix_ms) {
  if (grant.op == op && !ConstantTimeEqual(SignCapability(access_key, grant), signature)) {
    return Error(Writes(op) ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                 std::string(Writes(op) ? "write" : "read") +
                     " without a valid grant from the master");
  }
  return CheckGrantBounds(grant, op, offset, len, now_unix_ms);
}

}  // namespace mc
