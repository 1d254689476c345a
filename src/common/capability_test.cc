#include "common/capability.h"

#include <doctest/doctest.h>

using mc::CapabilityGrant;
using mc::CapabilityOp;

TEST_CASE("a capability admits exactly the granted operation, range and time") {
  std::string key = "segment-secret";
  CapabilityGrant g{CapabilityOp::kWrite, 7, 4096, 1000, 50000};
  std::string sig = mc::SignCapability(key, g);
  CHECK(mc::CheckCapability(key, g, sig, CapabilityOp::kWrite, 4096, 1000, 40000).ok());
  CHECK(mc::CheckCapability(key, g, sig, CapabilityOp::kWrite, 4596, 500, 40000).ok());
  // Outside the range, past the expiry, another op, another key, tampered grant.
  CHECK(mc::CheckCapability(key, g, sig, CapabilityOp::kWrite, 4096, 1001, 40000).code() ==
        mc::ErrorCode::INVALID_WRITE);
  CHECK(mc::CheckCapability(key, g, sig, CapabilityOp::kWrite, 0, 10, 40000).code() ==
        mc::ErrorCode::INVALID_WRITE);
  CHECK_FALSE(mc::CheckCapability(key, g, sig, CapabilityOp::kWrite, 4096, 1000, 50001).ok());
  CHECK(mc::CheckCapability(key, g, sig, CapabilityOp::kRead, 4096, 1000, 40000).code() ==
        mc::ErrorCode::INVALID_READ);
  CHECK_FALSE(mc::CheckCapability("other", g, sig, CapabilityOp::kWrite, 4096, 1000, 40000).ok());
  CapabilityGrant bigger = g;
  bigger.size_bytes = 1 << 20;
  CHECK_FALSE(mc::CheckCapability(key, bigger, sig, CapabilityOp::kWrite, 4096, 5000, 40000).ok());
  CHECK_FALSE(mc::CheckCapability(key, g, sig, CapabilityOp::kWrite, UINT64_MAX, 2, 40000).ok());
}
