// SegmentHost without a master: the segment it reserves and serves, how it
// names itself, that its data port refuses transfers the master did not
// grant, and that mounting gives up when its wait says stop.
#include "store/segment_host.h"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "transfer/tcp_transport.h"
#include "transfer/write_epochs.h"

namespace mc::store {
namespace {

constexpr uint64_t kSegmentBytes = 4ull << 20;

// A loopback port nothing listens on, held while the test runs: a connect
// to it is refused at once.
struct DeadPort {
  int fd = -1;
  uint16_t port = 0;
  DeadPort() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~DeadPort() { close(fd); }
};

Config StoreConfig(uint16_t master_port) {
  Config c;
  c.cluster.master = "127.0.0.1:" + std::to_string(master_port);
  c.cluster.local_hostname = "127.0.0.1";
  c.cluster.rpc_retries = 1;
  c.cluster.rpc_timeout_us = 1000000;
  c.store.global_segment_size_bytes = kSegmentBytes;
  c.store.hugepages = false;
  c.store.prefault = false;
  return c;
}

}  // namespace

TEST_CASE("a segment host reserves its segment and names itself by its data port") {
  DeadPort master;
  auto host = SegmentHost::Create(StoreConfig(master.port), msg::ClientId{1, 2});
  REQUIRE(host.ok());
  CHECK((*host)->data_port() != 0);
  CHECK((*host)->name() == "127.0.0.1:" + std::to_string((*host)->data_port()));
  CHECK((*host)->size_bytes() >= kSegmentBytes);
  const std::string said = (*host)->Describe();
  CHECK(said.find((*host)->name()) != std::string::npos);
  CHECK(said.find("127.0.0.1:" + std::to_string(master.port)) != std::string::npos);
}

TEST_CASE("the data port refuses a write and a read the master did not grant") {
  DeadPort master;
  auto host = SegmentHost::Create(StoreConfig(master.port), msg::ClientId{1, 2});
  REQUIRE(host.ok());
  transfer::TcpTransportOptions o;
  o.streams = 1;
  transfer::TcpTransport tcp(o);
  const transfer::Endpoint ep{"127.0.0.1", (*host)->data_port(), ""};
  std::vector<uint8_t> bytes(64, 1);
  CHECK(tcp.Write(ep, 0, bytes.data(), bytes.size()).code() == ErrorCode::INVALID_WRITE);
  CHECK(tcp.Read(ep, 0, bytes.data(), bytes.size()).code() == ErrorCode::INVALID_READ);
}

TEST_CASE("mounting without a master retries with growing waits until told to stop") {
  DeadPort master;
  auto host = SegmentHost::Create(StoreConfig(master.port), msg::ClientId{1, 2});
  REQUIRE(host.ok());
  std::vector<uint64_t> waits;
  auto mounted = (*host)->Mount([&](uint64_t ms) {
    waits.push_back(ms);
    return waits.size() == 3;
  });
  REQUIRE(mounted.ok());
  CHECK_FALSE(*mounted);
  REQUIRE(waits.size() == 3);
  CHECK(waits[1] == 2 * waits[0]);
  CHECK(waits[2] == 2 * waits[1]);
}

TEST_CASE("a remount after the master dropped the segment voids every seal taken before") {
  // The master dropped this store's objects and sends no RETIRE for them;
  // the next object written there one-sided (RDMA) must not match a seal a
  // client cached of the old one.
  DeadPort master;
  auto host = SegmentHost::Create(StoreConfig(master.port), msg::ClientId{1, 2});
  REQUIRE(host.ok());
  const transfer::WriteEpochs& epochs = (*host)->epochs();
  REQUIRE(epochs.valid());
  const uint64_t first = epochs.Seal(0, 4096), last = epochs.Seal(kSegmentBytes - 64, 64);
  REQUIRE(first != 0);
  REQUIRE(last != 0);
  (*host)->Reincarnate();
  CHECK(epochs.Seal(0, 4096) == 0);  // retired: no seal until a counted write
  CHECK(epochs.Seal(kSegmentBytes - 64, 64) == 0);
}

}  // namespace mc::store
