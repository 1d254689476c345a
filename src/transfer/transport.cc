#include "transfer/transport.h"

#include <cstring>

#include "transfer/data_protocol.h"

namespace mc::transfer {

void SetRequestGrant(const Grant& grant, wire::Request* req) {
  req->grant_offset = grant.offset;
  req->grant_size = grant.size_bytes;
  req->grant_expiry_unix_ms = grant.expiry_unix_ms;
  req->grant_term = grant.term;
  req->grant_mac = {};
  if (grant.signature.size() == wire::kMacBytes) {
    std::memcpy(req->grant_mac.data(), grant.signature.data(), wire::kMacBytes);
  }
}

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kWrite: return "WRITE";
    case OpKind::kRead: return "READ";
    case OpKind::kRetire: return "RETIRE";
  }
  return "UNKNOWN";
}

AccessCheck AllowAll() {
  return [](OpKind, uint64_t, uint64_t, const Grant&) { return Status::Ok(); };
}

Status Transport::Write(const Endpoint& ep, uint64_t remote_offset, const void* src, size_t len,
                        const Grant& grant) {
  TransferOp op{OpKind::kWrite, &ep, remote_offset, const_cast<void*>(src), len, grant, {}};
  return Batch(std::span<TransferOp>(&op, 1));
}

Status Transport::Read(const Endpoint& ep, uint64_t remote_offset, void* dst, size_t len,
                       const Grant& grant) {
  TransferOp op{OpKind::kRead, &ep, remote_offset, dst, len, grant, {}};
  return Batch(std::span<TransferOp>(&op, 1));
}

Status Transport::RegisterBuffer(void*, uint64_t) { return Status::Ok(); }

Status Transport::UnregisterBuffer(void*) { return Status::Ok(); }

Status ValidateBatch(std::span<const TransferOp> ops) {
  if (ops.size() > kMaxBatchOps) {
    return Error(ErrorCode::INVALID_PARAMS, "batch of " + std::to_string(ops.size()) +
                                                " ops exceeds the limit of " +
                                                std::to_string(kMaxBatchOps));
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const TransferOp& op = ops[i];
    std::string where = "op " + std::to_string(i) + ": ";
    if (op.endpoint == nullptr) return Error(ErrorCode::INVALID_PARAMS, where + "no endpoint");
    if (op.kind != OpKind::kWrite && op.kind != OpKind::kRead) {
      return Error(ErrorCode::INVALID_PARAMS, where + "unknown op kind");
    }
    if (op.len > 0 && op.buffer == nullptr) {
      return Error(ErrorCode::INVALID_PARAMS, where + "null buffer");
    }
    if (op.remote_offset + op.len < op.remote_offset) {
      return Error(ErrorCode::INVALID_PARAMS, where + "offset + length overflows");
    }
  }
  return Status::Ok();
}

}  // namespace mc::transfer
