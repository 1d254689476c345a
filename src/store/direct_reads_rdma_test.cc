// Direct reads over RDMA (fake NICs, transfer/rdma/verbs_fake.h): the race
// of client/direct_reads_testing.h with the bytes of every other client put
// and got one-sided (puts that count in no write epoch), the others' over
// TCP, the stores' epoch tables published for
// RDMA as the store process publishes them, sealed reads checked by the
// client's RDMA transport (transfer/rdma/rdma_sealed.h), and the master's
// retires sent as the data port's RETIRE, as masterd's Retirer does.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/direct_reads_testing.h"
#include "common/test_count.h"
#include "dataserver/tcp_server.h"
#include "net/socket.h"
#include "transfer/rdma/rdma_responder.h"
#include "transfer/rdma/rdma_sealed.h"
#include "transfer/rdma/rdma_transport.h"
#include "transfer/rdma/verbs_fake.h"
#include "transfer/retire_sender.h"
#include "transfer/segment.h"
#include "transfer/tcp_transport.h"

namespace mc::client {
namespace {

struct RdmaStore {
  std::unique_ptr<transfer::Segment> segment;
  std::unique_ptr<transfer::RdmaResponder> responder;
  std::unique_ptr<transfer::TcpDataServer> server;
};

struct RdmaCluster {
  ManualClock clock;
  transfer::FakeFabric fabric;
  transfer::FakeVerbs verbs{&fabric};
  std::shared_ptr<testing::Master> master;
  std::vector<RdmaStore> stores;
  transfer::RetireSender sender{{}};  // used under master->mu
  std::atomic<uint64_t> retire_failures{0};
  std::atomic<uint64_t> clients{0};
  std::mutex nics_mu;
  std::vector<std::string> nics;  // under nics_mu: the writers' threads make clients too

  RdmaCluster(int count, uint64_t segment_bytes)
      : master(std::make_shared<testing::Master>(clock, master::Options{})) {
    fabric.AddDevice("s0");
    for (int i = 0; i < count; ++i) {
      RdmaStore s;
      auto seg = transfer::Segment::Create({.size_bytes = segment_bytes});
      REQUIRE(seg.ok());
      s.segment = std::move(*seg);
      auto devs = transfer::OpenDevices(verbs, "s0");
      REQUIRE(devs.ok());
      auto r = transfer::RdmaResponder::Create(std::move(*devs), "seg" + std::to_string(i),
                                               s.segment->base(), segment_bytes);
      REQUIRE(r.ok());
      s.responder = std::move(*r);
      REQUIRE(s.responder
                  ->AddEpochTable(s.segment->base() + segment_bytes,
                                  transfer::EpochTableTailBytes(segment_bytes),
                                  transfer::NewEpochNonce())
                  .ok());
      transfer::TcpDataServerOptions o;
      o.listen_host = "127.0.0.1";
      o.rdma = s.responder.get();
      o.epochs = s.segment->epochs();
      auto srv = transfer::TcpDataServer::Start(s.segment->base(), segment_bytes,
                                                transfer::AllowAll(), o);
      REQUIRE(srv.ok());
      s.server = std::move(*srv);
      msg::SegmentDesc d;
      d.name = d.endpoint = "127.0.0.1:" + std::to_string(s.server->port());
      d.hostname = "another-host";  // no shm path: clients move bytes over RDMA
      d.size_bytes = segment_bytes;
      d.incarnation = 1;
      REQUIRE(master->state.MountSegment({testing::kStoreOwner, d}, clock.NowUs()).ok());
      stores.push_back(std::move(s));
    }
    master->state.set_track_stale_ranges(true);
    master->retire = [this](const master::StaleRange& r) {
      auto hp = net::ParseHostPort(r.endpoint);
      transfer::RetireRange range{r.offset, r.size_bytes, {}};
      if (!hp.ok() || !sender.Retire({hp->host, hp->port, ""}, {&range, 1}).ok())
        retire_failures.fetch_add(1);
    };
  }
  ~RdmaCluster() {
    for (auto& s : stores) s.server->Stop();
  }
  // Every other client moves its bytes over TCP (a TCP-only client of the
  // cluster): objects it writes count and clear retired marks, so readers
  // over RDMA find cacheable objects in reused space too, beside the
  // uncacheable ones RDMA wrote there. Each RDMA client has its own fake
  // NIC: a fake device's completions go to whoever polls its name.
  std::unique_ptr<Client> NewClient() {
    const uint64_t n = clients.fetch_add(1);
    if (n % 2 == 1) {
      return Client::Make(Config{}, std::make_unique<testing::Link>(master),
                          std::make_unique<transfer::TcpTransport>(), &clock);
    }
    const std::string nic = "c" + std::to_string(n);
    fabric.AddDevice(nic);
    auto t = transfer::RdmaTransport::Create({.devices = nic}, &verbs);
    REQUIRE(t.ok());
    std::lock_guard<std::mutex> lock(nics_mu);
    nics.push_back(nic);
    return Client::Make(Config{}, std::make_unique<testing::Link>(master), std::move(*t), &clock);
  }
  uint64_t RdmaPosts() {
    std::lock_guard<std::mutex> lock(nics_mu);
    uint64_t n = 0;
    for (const std::string& nic : nics) n += fabric.posts(nic);
    return n;
  }
};

}  // namespace

TEST_CASE("over RDMA, racing removals, upserts, evictions and re-puts never let a get return another key or version") {
  const uint64_t gets = mc::TestCount("MC_DIRECT_GETS", 2000);
  testing::ForSeeds("direct reads race over rdma", 2, [&](uint64_t seed) {
    RdmaCluster c(2, TestCount("MC_DIRECT_POOL_KB", 1024) << 10);
    const testing::RaceStats r =
        testing::Race(*c.master, c.clock, [&] { return c.NewClient(); }).Run(seed, gets);
    uint64_t retires = 0, stale = 0;
    for (const auto& s : c.stores) {
      retires += s.server->stats().retires;
      stale += s.server->stats().stale_reads;
    }
    MESSAGE("rdma: keys asked: " << r.requested << ", served: " << r.served << ", master lookups: "
                                 << r.lookups << ", versions written: " << r.versions
                                 << ", puts failed: " << r.puts_failed << " of " << r.puts << " ("
                                 << r.PutErrors() << "), gets failed: " << r.GetErrors()
                                 << ", retires: " << retires << ", stale TCP direct reads: " << stale
                                 << ", fake RDMA posts: " << c.RdmaPosts()
                                 << ", older than an acknowledged removal: " << r.old);
    CHECK(c.retire_failures == 0);
    CHECK(c.RdmaPosts() > 0);
    CHECK(r.wrong == 0);
    CHECK(r.old == 0);
    CHECK(r.served > 0);
    // Not asserted: few gets find a key cached here, and objects RDMA wrote
    // into retired space stay uncacheable (mooncake-protocol(7)); direct
    // RDMA reads are shown by rdma_sealed_read_test and the rdma guest suite.
    MESSAGE("gets served without the master: " << r.requested - r.lookups);
  });
}

}  // namespace mc::client
