#include "p2p/memory_registry.h"

#include <doctest/doctest.h>

namespace mc::p2p {

TEST_CASE("a registered region covers its own bytes and nothing past them") {
  MemoryRegistry r;
  REQUIRE(r.Add(0x1000, 0x100).ok());
  CHECK(r.Covers(0x1000, 0x100));
  CHECK(r.Covers(0x1080, 0x10));
  CHECK_FALSE(r.Covers(0x1080, 0x81));
  CHECK_FALSE(r.Covers(0xfff, 2));
  CHECK_FALSE(r.Covers(0x2000, 1));
  CHECK_FALSE(r.Covers(0x1000, UINT64_MAX));
}

TEST_CASE("overlapping, empty and null regions are refused") {
  MemoryRegistry r;
  REQUIRE(r.Add(0x1000, 0x100).ok());
  CHECK(r.Add(0x10ff, 1).code() == ErrorCode::INVALID_PARAMS);
  CHECK(r.Add(0xf00, 0x101).code() == ErrorCode::INVALID_PARAMS);
  CHECK(r.Add(0x2000, 0).code() == ErrorCode::INVALID_PARAMS);
  CHECK(r.Add(0, 16).code() == ErrorCode::INVALID_PARAMS);
  CHECK(r.Add(0x1100, 0x10).ok());  // adjacent is fine
  CHECK(r.size() == 2);
}

TEST_CASE("an unregistered region is no longer served") {
  auto r = std::make_shared<MemoryRegistry>();
  REQUIRE(r->Add(0x1000, 0x100).ok());
  auto check = RegisteredOnly(r);
  CHECK(check(transfer::OpKind::kWrite, 0x1000, 8, {}).ok());
  REQUIRE(r->Remove(0x1000).ok());
  CHECK(check(transfer::OpKind::kWrite, 0x1000, 8, {}).code() == ErrorCode::INVALID_WRITE);
  CHECK(check(transfer::OpKind::kRead, 0x1000, 8, {}).code() == ErrorCode::INVALID_READ);
  CHECK(r->Remove(0x1000).code() == ErrorCode::INVALID_PARAMS);
}

}  // namespace mc::p2p
