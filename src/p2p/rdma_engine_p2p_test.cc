// The transfer engine with protocol rdma over the fake NICs of
// transfer/rdma/verbs_fake.h: registered memory described with its rkeys on
// the data port, transfers as one-sided WRITE / READ posted on the NICs.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "p2p/engine_testing.h"
#include "transfer/rdma/verbs_fake.h"

namespace mc::p2p {

using testing::Addr;
using testing::Pattern;
using testing::StartRdmaEngine;
using transfer::OpKind;

namespace {

struct Fabric {
  transfer::FakeFabric fabric;
  transfer::FakeVerbs verbs{&fabric};
  Fabric() {
    fabric.AddDevice("nic_a");
    fabric.AddDevice("nic_b");
  }
};

}  // namespace

TEST_CASE("over rdma a write lands in the peer's registered memory and a read brings it back") {
  Fabric f;
  auto a = StartRdmaEngine(&f.verbs, "nic_a");
  auto b = StartRdmaEngine(&f.verbs, "nic_b");
  constexpr size_t kLen = 3 << 20;
  std::vector<uint8_t> remote(kLen, 0), back(kLen, 0);
  const auto src = Pattern(kLen, 7);
  REQUIRE(b->RegisterMemory(Addr(remote), kLen).ok());
  REQUIRE(a->RegisterMemory(Addr(src), kLen).ok());
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(remote), kLen}}).ok());
  CHECK(remote == src);
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kRead, {{Addr(back), Addr(remote), kLen}}).ok());
  CHECK(back == src);
  CHECK(f.fabric.posts("nic_a") > 0);
  CHECK(f.fabric.posts("nic_b") == 0);  // the peer never posts: one-sided
  const auto paths = a->path_stats();
  REQUIRE(paths.count("rdma") == 1);
  CHECK(paths.count("tcp") == 0);
  CHECK(paths.at("rdma").bytes == 2 * kLen);
}

TEST_CASE("over rdma each piece of a batch goes to its own place, async batches too") {
  Fabric f;
  auto a = StartRdmaEngine(&f.verbs, "nic_a");
  auto b = StartRdmaEngine(&f.verbs, "nic_b");
  constexpr size_t kPiece = 4096, kN = 32;
  auto remote = b->AllocateManaged(kPiece * kN);
  REQUIRE(remote.ok());
  const auto src = Pattern(kPiece * kN, 3);
  std::vector<TransferRequest> reqs;
  for (size_t i = 0; i < kN; ++i) {
    reqs.push_back({Addr(src) + i * kPiece, remote.value() + (kN - 1 - i) * kPiece, kPiece});
  }
  auto id = a->Submit(b->segment_name(), OpKind::kWrite, reqs);
  REQUIRE(id.ok());
  REQUIRE(a->Wait({id.value()}).ok());
  const auto* landed = reinterpret_cast<const uint8_t*>(remote.value());
  for (size_t i = 0; i < kN; ++i) {
    CHECK(std::memcmp(landed + (kN - 1 - i) * kPiece, src.data() + i * kPiece, kPiece) == 0);
  }
  CHECK(a->path_stats().at("rdma").requests == kN);
}

TEST_CASE("over rdma memory the peer registers later is reached and unregistered memory refused") {
  Fabric f;
  auto a = StartRdmaEngine(&f.verbs, "nic_a");
  auto b = StartRdmaEngine(&f.verbs, "nic_b");
  std::vector<uint8_t> first(8192, 0), later(8192, 0), never(8192, 0);
  const auto src = Pattern(8192, 5);
  REQUIRE(b->RegisterMemory(Addr(first), first.size()).ok());
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(first), 8192}}).ok());
  // Registered after a's link was built: a describes the peer again.
  REQUIRE(b->RegisterMemory(Addr(later), later.size()).ok());
  Status st = a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(later), 8192}});
  INFO(st.message());
  REQUIRE(st.ok());
  CHECK(later == src);
  CHECK(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(never), 8192}}).code() ==
        ErrorCode::INVALID_WRITE);
  CHECK(never == std::vector<uint8_t>(8192, 0));
  REQUIRE(b->UnregisterMemory(Addr(later)).ok());
  CHECK_FALSE(a->Transfer(b->segment_name(), OpKind::kRead, {{Addr(never), Addr(later), 8192}}).ok());
  CHECK(never == std::vector<uint8_t>(8192, 0));
}

TEST_CASE("an rdma engine reaches a peer that serves no rdma over tcp") {
  Fabric f;
  auto a = StartRdmaEngine(&f.verbs, "nic_a");
  auto b = testing::StartEngine();
  std::vector<uint8_t> remote(4096, 0);
  const auto src = Pattern(4096, 9);
  REQUIRE(b->RegisterMemory(Addr(remote), remote.size()).ok());
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(remote), 4096}}).ok());
  CHECK(remote == src);
  CHECK(a->path_stats().count("rdma") == 0);
  CHECK(a->path_stats().at("tcp").bytes == 4096);
}

TEST_CASE("protocol rdma names a device that is not there") {
  Fabric f;
  EngineOptions o;
  o.local_hostname = "127.0.0.1";
  o.metadata_server = std::string(kP2pHandshake);
  o.protocol = "rdma";
  o.device_name = "mlx5_missing";
  o.verbs = &f.verbs;
  auto e = TransferEngine::Start(o);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().message().find("mlx5_missing") != std::string::npos);
}

}  // namespace mc::p2p
