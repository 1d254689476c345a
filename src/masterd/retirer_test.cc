// The master retires what it removed on the stores before it answers
// (retirer.h): against a real data port on loopback.
#include "masterd/retirer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include "common/clock.h"
#include "dataserver/store_fixture.h"
#include "masterd/service.h"
#include "masterd/service_test_util.h"
#include "net/socket.h"
#include "transfer/access.h"

using namespace mc;
using masterd::testing::Mount;

namespace {

struct Cluster {
  ManualClock clock;
  transfer::testing::Store store = transfer::testing::Store::Make(
      64ull << 20, transfer::CapabilityCheck("key-1", 9, [this] { return clock.UnixMs(); }));
  masterd::Retirer retirer{{}};
  masterd::MasterService svc{MasterConfig{}, clock};

  explicit Cluster(std::string endpoint = "") {
    auto m = Mount("s1", "key-1");
    m.segment.endpoint = endpoint.empty() ? "127.0.0.1:" + std::to_string(store.endpoint.port)
                                          : endpoint;
    REQUIRE(svc.MountSegment(m).ok());
    svc.SetRetirer(&retirer);
  }
  uint64_t Offset(const std::string& key) {
    auto get = svc.GetReplicaList({{1, 2}, key});
    REQUIRE(get.ok());
    return get->replicas.at(0).buffers.at(0).offset;
  }
};

}  // namespace

TEST_CASE("a removal is answered only after the store retired the object's range") {
  Cluster c;
  REQUIRE(c.svc.PutStart({{1, 2}, "k", 5000, {}}).ok());
  REQUIRE(c.svc.PutEnd({{1, 2}, "k"}).ok());
  const uint64_t off = c.Offset("k");
  transfer::WriteEpochs& epochs = c.store.segment->epochs();
  const uint64_t seal = epochs.Seal(off, 5000);
  REQUIRE(seal != 0);
  CHECK(c.store.server->stats().retires == 0);  // nothing to retire yet
  REQUIRE(c.svc.Remove({"k", true}).ok());       // forced past the get's lease
  CHECK(c.store.server->stats().retires == 1);
  CHECK(epochs.Seal(off, 5000) == 0);  // retired: no seal to learn, the old one gone
  CHECK(c.retirer.stats().retired == 1);
  // An upsert's end retires the version it replaces, in the same way.
  REQUIRE(c.svc.PutStart({{1, 2}, "u", 100, {}}).ok());
  REQUIRE(c.svc.PutEnd({{1, 2}, "u"}).ok());
  const uint64_t old = c.Offset("u");
  msg::Batch<msg::PutStartExRequest> up(1);
  up[0].start = {{1, 2}, "u", 200, {}};
  REQUIRE(c.svc.BatchUpsertStart(up).ok());
  REQUIRE(c.svc.PutEnd({{1, 2}, "u"}).ok());
  CHECK(c.store.server->stats().retires == 2);
  CHECK(epochs.Seal(old, 100) == 0);
}

TEST_CASE("a store that cannot be reached delays a removal's answer by a bounded wait only") {
  // A port nothing listens on: the connect is refused at once.
  auto fd = net::ListenTcp("127.0.0.1", 0, 1);
  REQUIRE(fd.ok());
  const uint16_t port = net::LocalPort(*fd);
  ::close(*fd);
  Cluster c("127.0.0.1:" + std::to_string(port));
  REQUIRE(c.svc.PutStart({{1, 2}, "k", 5000, {}}).ok());
  REQUIRE(c.svc.PutEnd({{1, 2}, "k"}).ok());
  REQUIRE(c.svc.Remove({"k", false}).ok());
  CHECK(c.retirer.stats().failed == 1);
  CHECK(c.retirer.stats().retired == 0);
}

TEST_CASE("a batch upsert over neighbouring objects retires their old versions with one RETIRE") {
  Cluster c;
  constexpr int kKeys = 32;
  msg::Batch<msg::PutStartRequest> put;
  msg::Batch<msg::PutStartExRequest> up(kKeys);
  msg::Batch<msg::KeyRequest> end;
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = "k" + std::to_string(i);
    put.push_back({{1, 2}, k, 4000, {}});  // 4000 bytes: padding between neighbours
    up[i].start = {{1, 2}, k, 4000, {}};
    end.push_back({{1, 2}, k});
  }
  REQUIRE(c.svc.BatchPutStart(put).ok());
  REQUIRE(c.svc.BatchPutEnd(end).ok());
  REQUIRE(c.svc.BatchUpsertStart(up).ok());
  auto ended = c.svc.BatchPutEnd(end);
  REQUIRE(ended.ok());
  for (const Status& s : *ended) CHECK(s.ok());
  CHECK(c.retirer.stats().retired == 1);
  CHECK(c.store.server->stats().retires == 1);
}
