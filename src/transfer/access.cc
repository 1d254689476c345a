#include "transfer/access.h"

#include "common/capability.h"

#include <utility>

namespace mc::transfer {

namespace {

CapabilityGrant ToCapability(OpKind op, uint64_t incarnation, const Grant& g) {
  return {op == OpKind::kWrite ? CapabilityOp::kWrite : CapabilityOp::kRead, incarnation,
          g.offset, g.size_bytes, g.expiry_unix_ms};
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
      return Error(op == OpKind::kWrite ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                   std::string(OpKindName(op)) + " without a grant from the master");
    }
    CapabilityGrant g = ToCapability(op, 0, grant);
    return CheckGrantBounds(g, g.op, offset, len, now());
  };
}

}  // namespace mc::transfer
