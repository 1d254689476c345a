#include "p2p/transfer_engine.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "p2p/engine_testing.h"

namespace mc::p2p {

using testing::Addr;
using testing::StartEngine;
using transfer::OpKind;

TEST_CASE("a write lands in the peer's registered memory and reads back") {
  auto a = StartEngine();
  auto b = StartEngine();
  CHECK(b->segment_name() == "127.0.0.1:" + std::to_string(b->rpc_port()));
  std::vector<uint8_t> remote(3 << 20, 0), src(3 << 20), back(3 << 20, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  REQUIRE(b->RegisterMemory(Addr(remote), remote.size()).ok());
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(remote), src.size()}})
              .ok());
  CHECK(remote == src);
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kRead, {{Addr(back), Addr(remote), back.size()}})
              .ok());
  CHECK(back == src);
}

TEST_CASE("memory the peer did not register is refused and left untouched") {
  auto a = StartEngine();
  auto b = StartEngine();
  std::vector<uint8_t> registered(4096, 0), other(4096, 0), src(4096, 0xab);
  REQUIRE(b->RegisterMemory(Addr(registered), registered.size()).ok());
  Status st = a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(other), 4096}});
  CHECK(st.code() == ErrorCode::INVALID_WRITE);
  CHECK(other == std::vector<uint8_t>(4096, 0));
  // One byte past the end of the region is outside it too.
  st = a->Transfer(b->segment_name(), OpKind::kRead, {{Addr(src), Addr(registered) + 1, 4096}});
  CHECK(st.code() == ErrorCode::INVALID_READ);
}

TEST_CASE("an async batch completes and is forgotten once polled") {
  auto a = StartEngine();
  auto b = StartEngine();
  std::vector<uint8_t> remote(32 * 4096, 0), src(32 * 4096, 0x5a);
  REQUIRE(b->RegisterMemory(Addr(remote), remote.size()).ok());
  std::vector<TransferRequest> reqs;
  for (uint64_t i = 0; i < 32; ++i) reqs.push_back({Addr(src) + i * 4096, Addr(remote) + i * 4096, 4096});
  auto id = a->Submit(b->segment_name(), OpKind::kWrite, reqs);
  REQUIRE(id.ok());
  CHECK(id.value() != 0);
  REQUIRE(a->Wait({id.value()}).ok());
  CHECK(remote == src);
  CHECK(a->Poll(id.value()).code() == ErrorCode::TASK_NOT_FOUND);
}

TEST_CASE("a transfer to a stopped peer fails, and so does its async batch") {
  auto a = StartEngine();
  auto b = StartEngine();
  const std::string name = b->segment_name();
  std::vector<uint8_t> remote(4096, 0), src(4096, 1);
  REQUIRE(b->RegisterMemory(Addr(remote), remote.size()).ok());
  REQUIRE(a->Transfer(name, OpKind::kWrite, {{Addr(src), Addr(remote), 4096}}).ok());
  b.reset();
  CHECK_FALSE(a->Transfer(name, OpKind::kWrite, {{Addr(src), Addr(remote), 4096}}).ok());
  auto id = a->Submit(name, OpKind::kRead, {{Addr(src), Addr(remote), 4096}});
  REQUIRE(id.ok());
  CHECK_FALSE(a->Wait({id.value()}).ok());
}

TEST_CASE("peer names are host:port and a bad one is refused before any connect") {
  auto a = StartEngine();
  std::vector<uint8_t> buf(16);
  CHECK(a->Transfer("no-port", OpKind::kWrite, {{Addr(buf), 1, 16}}).code() ==
        ErrorCode::INVALID_PARAMS);
  CHECK(ParseHostPort("[::1]:80")->host == "::1");
  CHECK_FALSE(ParseHostPort("h:0").ok());
  CHECK_FALSE(ParseHostPort("h:65536").ok());
  CHECK(HostPart("node1:1234") == "node1");
  CHECK(HostPart("node1") == "node1");
}

TEST_CASE("an unknown metadata scheme or protocol is refused at start") {
  EngineOptions o;
  o.local_hostname = "127.0.0.1";
  o.metadata_server = "etcd://127.0.0.1:2379";
  CHECK(TransferEngine::Start(o).code() == ErrorCode::INVALID_PARAMS);
  o.metadata_server = std::string(kP2pHandshake);
  o.protocol = "nvlink";
  CHECK(TransferEngine::Start(o).code() == ErrorCode::NOT_SUPPORTED);
}

}  // namespace mc::p2p
