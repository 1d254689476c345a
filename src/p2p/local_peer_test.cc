#include "p2p/local_peer.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "net/socket.h"
#include "net/unix_socket.h"
#include "p2p/engine_testing.h"

namespace mc::p2p {

using testing::Addr;
using testing::Pattern;
using testing::StartEngine;
using transfer::OpKind;

namespace {

uint8_t* Ptr(uint64_t addr) { return reinterpret_cast<uint8_t*>(addr); }

}  // namespace

TEST_CASE("a peer on this host is written by mapping its managed buffers and by process_vm elsewhere") {
  auto a = StartEngine();
  auto b = StartEngine();
  constexpr size_t kLen = 1 << 20;
  auto managed = b->AllocateManaged(kLen);
  REQUIRE(managed.ok());
  std::vector<uint8_t> plain(kLen, 0);
  REQUIRE(b->RegisterMemory(Addr(plain), plain.size()).ok());
  const auto src = Pattern(kLen, 7);
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite,
                      {{Addr(src), managed.value(), kLen}, {Addr(src), Addr(plain), kLen}})
              .ok());
  CHECK(std::memcmp(Ptr(managed.value()), src.data(), kLen) == 0);
  CHECK(plain == src);
  std::vector<uint8_t> back(kLen, 0);
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kRead, {{Addr(back), managed.value(), kLen}}).ok());
  CHECK(back == src);
  const auto paths = a->path_stats();
  CHECK(paths.count("tcp") == 0);
  REQUIRE(paths.count("shm") == 1);
  CHECK(paths.at("shm").requests == 3);
  CHECK(paths.at("shm").bytes == 3 * kLen);
  CHECK(a->same_host_stats().mapped_requests == 2);
  CHECK(a->same_host_stats().process_vm_requests == 1);
  CHECK(b->FreeManaged(managed.value()).ok());
  CHECK(b->FreeManaged(managed.value()).code() == ErrorCode::INVALID_PARAMS);
}

TEST_CASE("with the same-host path off a peer on this host is reached over tcp") {
  auto a = StartEngine(2'000'000, /*same_host=*/false);
  auto b = StartEngine();
  std::vector<uint8_t> remote(4096, 0);
  const auto src = Pattern(4096, 5);
  REQUIRE(b->RegisterMemory(Addr(remote), remote.size()).ok());
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(src), Addr(remote), 4096}}).ok());
  CHECK(remote == src);
  const auto paths = a->path_stats();
  CHECK(paths.count("shm") == 0);
  REQUIRE(paths.count("tcp") == 1);
  CHECK(paths.at("tcp").bytes == 4096);
}

TEST_CASE("a managed buffer freed and allocated again is written where it lives now") {
  auto a = StartEngine();
  auto b = StartEngine();
  constexpr size_t kLen = 64 << 10;
  auto first = b->AllocateManaged(kLen);
  REQUIRE(first.ok());
  const auto one = Pattern(kLen, 3), two = Pattern(kLen, 11);
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(one), first.value(), kLen}}).ok());
  REQUIRE(b->FreeManaged(first.value()).ok());
  // The kernel often hands the same address out again; the old mapping a
  // holds must not take the bytes meant for the new buffer.
  auto second = b->AllocateManaged(kLen);
  REQUIRE(second.ok());
  REQUIRE(a->Transfer(b->segment_name(), OpKind::kWrite, {{Addr(two), second.value(), kLen}}).ok());
  CHECK(std::memcmp(Ptr(second.value()), two.data(), kLen) == 0);
  CHECK(a->same_host_stats().mapped_requests == 2);
}

TEST_CASE("an engine with a token lets only peers that hold it copy on this host") {
  auto without = StartEngine();
  auto with = StartEngine(2'000'000, true, "s3cret");
  auto peer = StartEngine(2'000'000, true, "s3cret");
  auto target = with->AllocateManaged(4096);
  REQUIRE(target.ok());
  const auto src = Pattern(4096, 9);
  CHECK(without->Transfer(with->segment_name(), OpKind::kWrite, {{Addr(src), target.value(), 4096}})
            .code() == ErrorCode::AUTH_FAILED);
  CHECK(std::vector<uint8_t>(Ptr(target.value()), Ptr(target.value()) + 4096) ==
        std::vector<uint8_t>(4096, 0));
  REQUIRE(peer->Transfer(with->segment_name(), OpKind::kWrite, {{Addr(src), target.value(), 4096}})
              .ok());
  CHECK(std::memcmp(Ptr(target.value()), src.data(), 4096) == 0);
  CHECK(peer->same_host_stats().mapped_requests == 1);
}

TEST_CASE("an engine whose same-host socket name is taken starts and is reached over tcp") {
  auto probe = net::ListenTcp("127.0.0.1", 0, 1);
  REQUIRE(probe.ok());
  const uint16_t port = net::LocalPort(probe.value());
  ::close(probe.value());
  auto squatter = net::ListenUnix(LocalPeerSocket(port), 1);
  REQUIRE(squatter.ok());
  EngineOptions o;
  o.local_hostname = "127.0.0.1:" + std::to_string(port);
  o.metadata_server = std::string(kP2pHandshake);
  o.listen_host = "127.0.0.1";
  o.transfer_timeout_us = 2'000'000;
  auto b = TransferEngine::Start(o);
  REQUIRE(b.ok());
  auto a = StartEngine();
  std::vector<uint8_t> remote(4096, 0);
  const auto src = Pattern(4096, 13);
  REQUIRE((*b)->RegisterMemory(Addr(remote), remote.size()).ok());
  // Gone before the transfer: a's connect is refused and the op goes on to
  // TCP at once. (A squatter that accepted and stayed silent would cost a
  // its transfer timeout and fail the op, as a stalled peer does.)
  ::close(squatter.value());
  REQUIRE(a->Transfer((*b)->segment_name(), OpKind::kWrite, {{Addr(src), Addr(remote), 4096}}).ok());
  CHECK(remote == src);
  CHECK(a->path_stats().count("shm") == 0);
  CHECK(a->path_stats().at("tcp").bytes == 4096);
}

TEST_CASE("loopback and names of this host are local, other addresses are not") {
  CHECK(IsLocalHost("127.0.0.1"));
  CHECK(IsLocalHost("localhost"));
  CHECK_FALSE(IsLocalHost("192.0.2.1"));  // TEST-NET-1: never a host's own
  CHECK(LocalPeerSocket(4242) == "@mooncake-p2p-4242");
}

}  // namespace mc::p2p
