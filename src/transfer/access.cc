#include "transfer/access.h"

#include "common/capability.h"

#include <utility>

namespace mc::transfer {

namespace {

CapabilityGrant ToCapability(OpKind op, uint64_t incarnation, const Grant& g) {
  const CapabilityOp cap = op == OpKind::kWrite    ? CapabilityOp::kWrite
                          : op == OpKind::kRetire ? CapabilityOp::kRetire
                          : g.sealed_only         ? CapabilityOp::kReadSealed
                                               : CapabilityOp::kRead;
  return {cap, incarnation, g.offset, g.size_bytes, g.expiry_unix_ms, g.term};
}

}  // namespace

AccessCheck CapabilityCheck(std::string access_key, uint64_t incarnation, NowUnixMsFn now) {
  return [key = std::move(access_key), incarnation, now = std::move(now)](
             OpKind op, uint64_t offset, uint64_t len, const Grant& grant) {
    // The grant's op is the request's: a read grant presented for a WRITE
    // signs a different message and fails the MAC.
    CapabilityGrant g = ToCapability(op, incarnation, grant);
    return CheckCapability(key, g, grant.signature, g.op, offset, len, now());
  };
}

SegmentKeys::SegmentKeys(std::string access_key, uint64_t incarnation)
    : access_key_(std::move(access_key)), incarnation_(incarnation) {}

void SegmentKeys::Set(std::string access_key, uint64_t incarnation) {
  std::lock_guard<std::mutex> lock(mu_);
  access_key_ = std::move(access_key);
  incarnation_ = incarnation;
}

std::pair<std::string, uint64_t> SegmentKeys::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {access_key_, incarnation_};
}

AccessCheck CapabilityCheck(std::shared_ptr<const SegmentKeys> keys, NowUnixMsFn now) {
  return [keys = std::move(keys), now = std::move(now)](OpKind op, uint64_t offset, uint64_t len,
                                                        const Grant& grant) {
    auto [key, incarnation] = keys->Get();
    CapabilityGrant g = ToCapability(op, incarnation, grant);
    return CheckCapability(key, g, grant.signature, g.op, offset, len, now());
  };
}

AccessCheck GrantBoundsCheck(NowUnixMsFn now) {
  return [now = std::move(now)](OpKind op, uint64_t offset, uint64_t len,
                                const Grant& grant) -> Status {
    if (grant.signature.empty()) {
      return Error(op != OpKind::kRead ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                   std::string(OpKindName(op)) + " without a grant from the master");
    }
    CapabilityGrant g = ToCapability(op, 0, grant);
    return CheckGrantBounds(g, g.op, offset, len, now());
  };
}

RequestVerdict ScreenRequest(const wire::Request& req, uint64_t segment_bytes,
                             uint64_t max_frame_bytes, const AccessCheck& check) {
  const bool is_write = req.op == static_cast<uint16_t>(wire::Op::kWrite);
  const bool is_read = req.op == static_cast<uint16_t>(wire::Op::kRead);
  const bool is_retire = req.op == static_cast<uint16_t>(wire::Op::kRetire);
  RequestVerdict v;
  if (!is_write && !is_read && !is_retire) {
    v.status = Error(ErrorCode::PROTOCOL_ERROR, "unknown op " + std::to_string(req.op));
    return v;
  }
  v.op = is_write ? OpKind::kWrite : is_read ? OpKind::kRead : OpKind::kRetire;
  if (req.length > max_frame_bytes && !is_retire) {  // a RETIRE carries no bytes
    v.status = Error(ErrorCode::PROTOCOL_ERROR, "frame length " + std::to_string(req.length) +
                                                    " exceeds " + std::to_string(max_frame_bytes));
    return v;
  }
  v.action = RequestVerdict::Action::kRefuse;
  if (req.offset > segment_bytes || req.length > segment_bytes - req.offset) {
    v.status = Error(!is_read ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                     "range at offset " + std::to_string(req.offset) + " length " +
                         std::to_string(req.length) + " is outside the segment of " +
                         std::to_string(segment_bytes) + " bytes");
    return v;
  }
  Grant grant{req.grant_offset, req.grant_size, req.grant_expiry_unix_ms,
              std::string(req.grant_mac.begin(), req.grant_mac.end())};
  grant.term = req.grant_term;
  v.status = check(v.op, req.offset, req.length, grant);
  if (v.status.ok()) v.action = RequestVerdict::Action::kServe;
  return v;
}

}  // namespace mc::transfer
