#include "masterd/service.h"

#include <doctest/doctest.h>

#include <regex>

#include "common/capability.h"
#include "masterd/admin_http.h"
#include "masterd/journal.h"
#include "masterd/journal_test_util.h"
#include "masterd/service_test_util.h"

using namespace mc;

using masterd::testing::Mount;

TEST_CASE("buffers handed out carry capabilities the store can check") {
  ManualClock clock;
  MasterConfig config;
  masterd::MasterService svc(config, clock);
  REQUIRE(svc.MountSegment(Mount("s1", "secret-1")).ok());

  auto put = svc.PutStart({{1, 2}, "k", 1000, {}});
  REQUIRE(put.ok());
  const msg::BufferDesc& b = put->replicas.at(0).buffers.at(0);
  CapabilityGrant grant{CapabilityOp::kWrite, 9, b.offset, b.size_bytes, b.capability_expiry_unix_ms};
  uint64_t now = clock.UnixMs();
  CHECK(CheckCapability("secret-1", grant, b.capability, CapabilityOp::kWrite, b.offset, 1000, now).ok());
  // A write grant does not allow reading, and another store's key does not verify.
  CHECK_FALSE(CheckCapability("secret-1", grant, b.capability, CapabilityOp::kRead, b.offset, 1000, now).ok());
  CHECK_FALSE(CheckCapability("secret-2", grant, b.capability, CapabilityOp::kWrite, b.offset, 1000, now).ok());

  REQUIRE(svc.PutEnd({{1, 2}, "k"}).ok());
  auto get = svc.GetReplicaList({{1, 2}, "k"});
  REQUIRE(get.ok());
  const msg::BufferDesc& r = get->replicas.at(0).buffers.at(0);
  CapabilityGrant rg{CapabilityOp::kRead, 9, r.offset, r.size_bytes, r.capability_expiry_unix_ms};
  CHECK(CheckCapability("secret-1", rg, r.capability, CapabilityOp::kRead, r.offset, 1000, now).ok());
  // The read grant lasts the lease (10 s by default), not much longer.
  CHECK(r.capability_expiry_unix_ms <= now + config.default_kv_lease_ttl_us / 1000 + 1000);
}

TEST_CASE("reads carry a sealed-read grant that outlives the lease and is no plain read grant") {
  ManualClock clock;
  MasterConfig config;
  masterd::MasterService svc(config, clock);
  REQUIRE(svc.MountSegment(Mount("s1", "secret-1")).ok());
  auto put = svc.PutStart({{1, 2}, "k", 1000, {}});
  REQUIRE(put.ok());
  CHECK(put->replicas.at(0).buffers.at(0).sealed_capability.empty());  // writes get none
  REQUIRE(svc.PutEnd({{1, 2}, "k"}).ok());
  auto get = svc.GetReplicaList({{1, 2}, "k"});
  REQUIRE(get.ok());
  CHECK(get->generation != 0);
  const msg::BufferDesc& r = get->replicas.at(0).buffers.at(0);
  const uint64_t now = clock.UnixMs();
  CapabilityGrant g{CapabilityOp::kReadSealed, 9, r.offset, r.size_bytes,
                    r.sealed_capability_expiry_unix_ms};
  CHECK(CheckCapability("secret-1", g, r.sealed_capability, CapabilityOp::kReadSealed, r.offset,
                        1000, now).ok());
  CHECK(r.sealed_capability_expiry_unix_ms == now + kSealedReadGrantTtlUs / 1000);
  CHECK(r.sealed_capability_expiry_unix_ms > r.capability_expiry_unix_ms);
  g.op = CapabilityOp::kRead;  // as a plain read's grant it does not verify
  CHECK_FALSE(CheckCapability("secret-1", g, r.sealed_capability, CapabilityOp::kRead, r.offset,
                              1000, now).ok());
}

TEST_CASE("a read grant expires with its lease and then no longer reads the freed space") {
  // The grant-expiry half of tests/e2e/test_data_port_grants.py, on a manual
  // clock instead of a sleep: the master signs with the injected wall clock.
  ManualClock clock;
  MasterConfig config;
  masterd::MasterService svc(config, clock);
  REQUIRE(svc.MountSegment(Mount("s1", "secret-1")).ok());
  REQUIRE(svc.PutStart({{1, 2}, "g", 1000, {}}).ok());
  REQUIRE(svc.PutEnd({{1, 2}, "g"}).ok());
  auto get = svc.GetReplicaList({{1, 2}, "g"});
  REQUIRE(get.ok());
  const msg::BufferDesc b = get->replicas.at(0).buffers.at(0);
  CapabilityGrant grant{CapabilityOp::kRead, 9, b.offset, b.size_bytes, b.capability_expiry_unix_ms};
  auto read_at = [&](uint64_t now_ms) {
    return CheckCapability("secret-1", grant, b.capability, CapabilityOp::kRead, b.offset, 1000,
                           now_ms);
  };
  CHECK(b.capability_expiry_unix_ms > clock.UnixMs());
  CHECK(read_at(clock.UnixMs()).ok());

  clock.AdvanceUs(config.default_kv_lease_ttl_us + 1000);
  CHECK(clock.UnixMs() >= b.capability_expiry_unix_ms);
  Status expired = read_at(clock.UnixMs());
  CHECK(expired.code() == ErrorCode::INVALID_READ);
  CHECK(expired.message().find("expired") != std::string::npos);

  // The lease ran out too, so the key goes and a new put reuses its space;
  // the old grant does not read the new object's bytes.
  REQUIRE(svc.Ping({{1, 2}}).ok());  // the store is alive, its segment usable
  REQUIRE(svc.Remove({"g"}).ok());
  auto put = svc.PutStart({{1, 2}, "h", 1000, {}});
  REQUIRE(put.ok());
  CHECK(put->replicas.at(0).buffers.at(0).offset == b.offset);
  CHECK(read_at(clock.UnixMs()).code() == ErrorCode::INVALID_READ);
}

TEST_CASE("metrics text names what dashboards expect") {
  ManualClock clock;
  masterd::MasterService svc(MasterConfig{}, clock);
  REQUIRE(svc.MountSegment(Mount("s1", "k")).ok());
  std::string text = masterd::RenderMetrics(svc);
  for (const char* name : {"master_allocated_bytes", "master_total_capacity_bytes", "master_key_count",
                           "master_soft_pin_key_count", "master_active_clients",
                           "master_put_start_requests_total", "master_put_start_failures_total",
                           "master_successful_evictions_total", "master_evicted_key_count",
                           "master_evicted_size_bytes", "master_eviction_recency_victims_total",
                           "master_eviction_mode_switches_total"}) {
    CHECK_MESSAGE(text.find(std::string("\n") + name + " ") != std::string::npos, name);
  }
  CHECK(text.find("master_total_capacity_bytes 67108864") != std::string::npos);
  CHECK(svc.Summary().find("Storage: 0 B / 64.00 MB (0.0%) | Keys: 0 (soft-pinned: 0)") == 0);
}

TEST_CASE("clients' transfer reports add up per path and direction in /metrics") {
  ManualClock clock;
  masterd::MasterService svc(MasterConfig{}, clock);
  const std::string before = masterd::RenderMetrics(svc);
  // Every series is there from the start, at zero.
  CHECK(before.find("mooncake_transfer_bytes_total{path=\"tcp\",op=\"get\"} 0\n") !=
        std::string::npos);
  const auto rdma = static_cast<uint8_t>(msg::TransferPath::kRdma);
  const auto put = static_cast<uint8_t>(msg::TransferDir::kPut);
  const auto get = static_cast<uint8_t>(msg::TransferDir::kGet);
  REQUIRE(svc.ReportTransfers({{1, 2}, {{rdma, put, 2, 3000}, {rdma, get, 1, 1000}}}).ok());
  REQUIRE(svc.ReportTransfers({{3, 4}, {{rdma, put, 1, 500}}}).ok());
  // A path this master does not know is dropped, not counted elsewhere.
  REQUIRE(svc.ReportTransfers({{3, 4}, {{7, put, 9, 9}, {rdma, 5, 9, 9}}}).ok());
  const std::string text = masterd::RenderMetrics(svc);
  auto has = [&](const std::string& line) {
    CHECK_MESSAGE(text.find("\n" + line + "\n") != std::string::npos, line);
  };
  has("mooncake_transfer_ops_total{path=\"rdma\",op=\"put\"} 3");
  has("mooncake_transfer_bytes_total{path=\"rdma\",op=\"put\"} 3500");
  has("mooncake_transfer_bytes_total{path=\"rdma\",op=\"get\"} 1000");
  has("mooncake_transfer_bytes_total{path=\"tcp\",op=\"put\"} 0");
  has("mooncake_transfer_ops_total{path=\"shm\",op=\"get\"} 0");
  // One HELP/TYPE per family, its samples together.
  const size_t help = text.find("# HELP mooncake_transfer_bytes_total");
  CHECK(text.find("# HELP mooncake_transfer_bytes_total", help + 1) == std::string::npos);
  CHECK(text.find("mooncake_transfer_ops_total{", help) == std::string::npos);
}

TEST_CASE("with a journal, metrics count its commits, changes and commit time") {
  masterd::testing::TempDb db;
  const std::string& path = db.path;
  {
    ManualClock clock;
    MasterConfig config;
    auto journal = masterd::Journal::Open(path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    masterd::MasterService svc(config, clock, journal->get());
    CHECK(masterd::RenderMetrics(svc).find("master_journal_") == std::string::npos);
    REQUIRE(svc.MountSegment(Mount("s1", "k")).ok());
    for (const char* key : {"a", "b", "c"}) {
      REQUIRE(svc.PutStart({{1, 2}, key, 1000, {}}).ok());
      REQUIRE(svc.PutEnd({{1, 2}, key}).ok());
    }
    REQUIRE(svc.Remove({"b", false}).ok());
    REQUIRE((*journal)->WaitDurable().ok());
    const std::string text = masterd::RenderMetrics(svc, journal->get());
    auto value = [&](const char* name) {
      std::smatch m;
      const std::regex re(std::string("\n") + name + " ([0-9.e+-]+)\n");
      REQUIRE_MESSAGE(std::regex_search(text, m, re), name);
      return std::stod(m[1]);
    };
    // The mount, three puts and a remove; in at least one commit, which took time.
    CHECK(value("master_journal_changes_total") == 5);
    const double commits = value("master_journal_commits_total");
    CHECK(commits >= 1);
    CHECK(commits <= 5);
    CHECK(value("master_journal_commit_seconds_total") > 0);
  }
}

TEST_CASE("query of a missing key names OBJECT_NOT_FOUND") {
  ManualClock clock;
  masterd::MasterService svc(MasterConfig{}, clock);
  CHECK(svc.QueryKey("nope").code() == ErrorCode::OBJECT_NOT_FOUND);
}

TEST_CASE("the admin HTTP server stops when told to right after it starts") {
  // httplib ignores a stop() that comes before its accept loop runs; Start
  // waits for the loop, so none of these stops is lost (a lost one hangs
  // the join in Stop, and the test with it).
  ManualClock clock;
  masterd::MasterService svc(MasterConfig{}, clock);
  for (int i = 0; i < 200; ++i) {
    masterd::AdminHttp admin(svc);
    REQUIRE(admin.Start("127.0.0.1", 0).ok());
    admin.Stop();
  }
}
