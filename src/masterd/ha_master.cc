#include "masterd/ha_master.h"

#include <cstdio>
#include <mutex>

#include "common/clock.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "common/signals.h"
#include "ha/election.h"
#include "ha/etcd_grpc.h"
#include "ha/etcd_http.h"
#include "ha/fenced_log.h"
#include "masterd/admin_http.h"
#include "masterd/ha_follow.h"
#include "masterd/ha_log.h"
#include "masterd/ha_status.h"
#include "masterd/prometheus.h"
#include "masterd/retirer.h"
#include "masterd/rpc_glue.h"
#include "masterd/service.h"
#include "tls/tls_setup.h"

namespace mc::masterd {

namespace {

constexpr uint64_t kTickIntervalMs = 100;
// A standby reads the log and looks at the leader key this often; a
// failover takes the lease's remaining TTL plus at most this.
constexpr uint64_t kStandbyPollMs = 100;
// The longest lease etcd's gateway takes (its own limit is 9e9 s; ours is
// what an operator could mean).
constexpr uint64_t kMaxLeaseTtlUs = 3600ull * 1000000;

std::string AdvertiseAddress(const Config& config) {
  if (!config.ha.advertise_address.empty()) return config.ha.advertise_address;
  const std::string& bind = config.master.rpc_address;
  const bool any = bind.empty() || bind == "0.0.0.0" || bind == "::";
  return (any ? config.cluster.local_hostname : bind) + ":" +
         std::to_string(config.master.rpc_port);
}

// What /role, /ha_status, /leader and /metrics show.
class HaNode final : public HaStatusSource {
 public:
  // `shippers`: the log's etcd connections (their gRPC counters).
  HaNode(const HaLog& log, std::vector<const ha::EtcdGrpc*> shippers)
      : log_(log), shippers_(std::move(shippers)) {}

  void SetState(const char* state) {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = state;
  }
  void SetLeader(std::optional<ha::KeyValue> leader) {
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = std::move(leader);
  }
  void SetApplied(uint64_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    applied_ = index;
  }
  void Promoted(const ha::Term& term, uint64_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    term_ = term.revision;
    applied_ = index;
    ++promotions_;
  }

  std::string Role() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return term_ != 0 ? "leader" : "standby";
  }
  std::string State() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  std::string LeaderJson() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!leader_) return "{\"present\":false}";
    return "{\"present\":true,\"leader_address\":" + ha::JsonString(leader_->value) +
           ",\"view_version\":" + std::to_string(leader_->create_revision) + "}";
  }
  void AppendMetrics(PrometheusText& p) const override {
    const HaLog::Stats s = log_.stats();
    std::lock_guard<std::mutex> lock(mu_);
    p.Gauge("master_ha_is_leader", "1 while this master leads its HA group, 0 as a standby",
            term_ != 0 ? 1 : 0);
    p.Gauge("master_ha_term", "The leader key's create revision this master leads under (0: none)",
            static_cast<double>(term_));
    p.Gauge("master_ha_log_index", "The last HA log entry applied (standby) or written (leader)",
            static_cast<double>(term_ != 0 ? s.entry_index : applied_));
    p.Counter("master_ha_promotions_total", "Times this master became the leader",
              static_cast<double>(promotions_));
    p.Counter("master_ha_log_entries_total", "HA log entries this leader wrote to etcd",
              static_cast<double>(s.entries));
    p.Counter("master_ha_log_records_total", "State changes this leader made durable in etcd",
              static_cast<double>(s.durable));
    p.Counter("master_ha_commit_seconds_total", "Seconds spent in etcd log commits",
              s.commit_latency.sum);
    p.Gauge("master_ha_last_commit_seconds", "Duration of the last etcd log commit",
            s.last_commit_seconds);
    p.Histogram("master_ha_commit_latency_seconds",
                "Duration of each etcd log commit (one txn per log entry, retries included)",
                s.commit_latency);
    p.Histogram("master_ha_durable_latency_seconds",
                "Per log entry, from its first change queued until it and every entry before it "
                "were in etcd: the longest a change in it held its reply back",
                s.durable_latency);
    p.Counter("master_ha_queue_wait_seconds_total",
              "Seconds log entries' first records waited before their entry was cut",
              s.queue_wait_seconds);
    p.Counter("master_ha_encode_seconds_total", "Seconds spent encoding log entries",
              s.encode_seconds);
    p.Counter("master_ha_compress_seconds_total",
              "Seconds the shippers spent deflating log entries ([ha] compress_log)",
              s.compress_seconds);
    p.Counter("master_ha_log_plain_bytes_total", "Bytes of the log entries written, as encoded",
              static_cast<double>(s.plain_bytes));
    p.Counter("master_ha_log_bytes_total",
              "Bytes of the log entries written as etcd got them (deflated when that was smaller)",
              static_cast<double>(s.shipped_bytes));
    p.Gauge("master_ha_entries_in_flight_max", "Most HA log entries in etcd's hands at once",
            static_cast<double>(s.in_flight_max));
    for (size_t n = 0; n < s.cuts_by_in_flight.size(); ++n) {
      p.Counter("master_ha_entries_cut_total",
                "HA log entries cut while n entries (this one included) were in etcd's hands",
                static_cast<double>(s.cuts_by_in_flight[n]), {{"in_flight", std::to_string(n + 1)}});
    }
    p.Counter("master_ha_commit_retries_total", "Log entries sent again after etcd did not answer",
              static_cast<double>(s.retries));
    p.Counter("master_ha_snapshots_total", "Snapshots this leader published (each trims the log)",
              static_cast<double>(s.snapshots));
    ha::EtcdGrpc::Stats g;
    for (const ha::EtcdGrpc* kv : shippers_) {
      const ha::EtcdGrpc::Stats one = kv->stats();
      g.grpc_calls += one.grpc_calls;
      g.grpc_failures += one.grpc_failures;
      g.gateway_calls += one.gateway_calls;
    }
    p.Counter("master_ha_etcd_grpc_txns_total", "Log txns etcd answered over gRPC",
              static_cast<double>(g.grpc_calls));
    p.Counter("master_ha_etcd_grpc_failures_total", "Log txns gRPC did not get an answer for",
              static_cast<double>(g.grpc_failures));
    p.Counter("master_ha_etcd_gateway_txns_total",
              "Log txns sent to etcd's JSON gateway instead (after gRPC failures)",
              static_cast<double>(g.gateway_calls));
  }
  std::string Summary() const override {
    const HaLog::Stats s = log_.stats();
    std::lock_guard<std::mutex> lock(mu_);
    if (term_ == 0) return " | HA: standby at entry " + std::to_string(applied_);
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.2f",
                  s.entries ? s.commit_latency.sum * 1000 / static_cast<double>(s.entries) : 0.0);
    return " | HA: leader term " + std::to_string(term_) + " entry " +
           std::to_string(s.entry_index) + " commit " + mean + " ms";
  }

 private:
  const HaLog& log_;
  const std::vector<const ha::EtcdGrpc*> shippers_;
  mutable std::mutex mu_;
  const char* state_ = "starting";
  std::optional<ha::KeyValue> leader_;
  int64_t term_ = 0;
  uint64_t applied_ = 0;
  uint64_t promotions_ = 0;
};

struct HaContext {
  const Config& config;
  const ha::HaKeys keys;
  const uint64_t ttl_us;
  std::unique_ptr<ha::EtcdHttp> election_kv;  // the lease keeper's own connection
  // The standby's log reads and the snapshot writer's chunks go over gRPC
  // too: through the gateway every byte of the log was base64 and JSON in
  // etcd and here, a second time for the standby and for each snapshot.
  std::unique_ptr<ha::EtcdGrpc> follow_kv;
  std::unique_ptr<ha::EtcdGrpc> writer_kv;
  // One per HA log entry in flight, each one request at a time; their
  // txns go over gRPC (ha/etcd_grpc.h).
  std::vector<std::unique_ptr<ha::EtcdGrpc>> shipper_kvs;
  std::vector<ha::EtcdKv*> Shippers() const {
    std::vector<ha::EtcdKv*> out;
    for (const auto& kv : shipper_kvs) out.push_back(kv.get());
    return out;
  }
  std::vector<const ha::EtcdGrpc*> GrpcShippers() const {
    std::vector<const ha::EtcdGrpc*> out;
    for (const auto& kv : shipper_kvs) out.push_back(kv.get());
    return out;
  }
};

Result<HaContext> MakeContext(const Config& config) {
  const HaConfig& hc = config.ha;
  if (hc.lease_ttl_us % 1000000 != 0 || hc.lease_ttl_us > kMaxLeaseTtlUs) {
    return Error(ErrorCode::INVALID_PARAMS, "[ha] lease_ttl must be whole seconds, at most " +
                                                std::to_string(kMaxLeaseTtlUs / 1000000) + "s");
  }
  MC_ASSIGN_OR_RETURN(ha::HaKeys keys, ha::HaKeys::For(hc.cluster));
  // The lease keeper must hear back within a third of the TTL, so that two
  // more keepalives fit before the lease could run out.
  const uint64_t keeper_timeout_us = std::max<uint64_t>(hc.lease_ttl_us / 3, 200000);
  MC_ASSIGN_OR_RETURN(auto election_kv,
                      ha::EtcdHttp::Open(hc.etcd, {.connect_timeout_us = keeper_timeout_us / 2,
                                                   .request_timeout_us = keeper_timeout_us}));
  MC_ASSIGN_OR_RETURN(auto follow_kv, ha::EtcdGrpc::Open(hc.etcd));
  const ha::EtcdHttpOptions writer_options{.connect_timeout_us = keeper_timeout_us / 2,
                                           .request_timeout_us = keeper_timeout_us};
  MC_ASSIGN_OR_RETURN(auto writer_kv, ha::EtcdGrpc::Open(hc.etcd, writer_options));
  std::vector<std::unique_ptr<ha::EtcdGrpc>> shipper_kvs;
  for (uint32_t i = 0; i < hc.entries_in_flight; ++i) {
    MC_ASSIGN_OR_RETURN(auto kv, ha::EtcdGrpc::Open(hc.etcd, writer_options));
    shipper_kvs.push_back(std::move(kv));
  }
  return HaContext{config,           std::move(keys),      hc.lease_ttl_us,
                   std::move(election_kv), std::move(follow_kv), std::move(writer_kv),
                   std::move(shipper_kvs)};
}

// The standby phase: follows the log and campaigns until it wins (the
// term) or is told to stop (nullopt).
std::optional<ha::Term> Standby(HaContext& ctx, ha::Election& election, ha::FencedLog& log,
                                HaImage& image, HaNode& node, ha::LeaseClock& lease) {
  node.SetState("standby");
  uint64_t quiet_until_us = 0;  // errors are logged once a TTL, not every poll
  while (!WaitForStop(kStandbyPollMs)) {
    const uint64_t now = SystemClock::Instance().NowUs();
    bool caught_up = false;
    Status st = FollowHaLog(log, image, &caught_up);
    node.SetApplied(image.index());
    auto leader = election.Leader();
    if (st.ok() && !leader.ok()) st = leader.status();
    if (!st.ok()) {
      if (now >= quiet_until_us) MC_LOG(WARN) << "HA standby: " << st.ToString();
      quiet_until_us = now + ctx.ttl_us;
      if (st.code() == ErrorCode::INTERNAL_ERROR) image = HaImage();  // reload from scratch
      continue;
    }
    node.SetLeader(*leader);
    if (leader->has_value()) continue;
    const uint64_t sent_us = SystemClock::Instance().NowUs();
    auto term = election.TryAcquire();
    if (term.ok() && term->has_value()) {
      lease.Renewed(sent_us);
      return **term;
    }
  }
  return std::nullopt;
}

// Reads the committed log to its end under the new term, drops what lies
// past it (entries a pipelining leader wrote past a gap: never
// acknowledged), then loads the image.
Status TakeOver(ha::FencedLog& log, const ha::Term& term, HaImage& image, MasterService& service,
                const ha::LeaseClock& lease) {
  for (;;) {
    bool caught_up = false;
    Status st = FollowHaLog(log, image, &caught_up);
    if (st.ok() && caught_up) {
      auto dropped = log.DropAfter(term, image.index());
      if (dropped.ok()) {
        if (*dropped != 0) {
          MC_LOG(WARN) << "HA: dropped " << *dropped << " unacknowledged log entries past entry "
                       << image.index() << " (written past a gap by the previous leader)";
        }
        break;
      }
      st = dropped.status();
    }
    if (!lease.Valid(SystemClock::Instance().NowUs())) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "the lease ran out before the log was read: " + st.ToString());
    }
    if (!st.ok() && st.code() != ErrorCode::RPC_FAIL) return st;
  }
  const uint64_t start_us = SystemClock::Instance().NowUs();
  MC_ASSIGN_OR_RETURN(size_t dropped, service.WithState([&](master::MasterState& state) {
    auto loaded = image.LoadInto(state, start_us);
    state.RestartClientClocks(SystemClock::Instance().NowUs());
    return loaded;
  }));
  service.AdoptLoadedSegments();
  MC_LOG(INFO) << "HA: took over at entry " << image.index() << ": " << image.segments()
               << " segments, " << image.objects() - dropped << " objects in "
               << (SystemClock::Instance().NowUs() - start_us) / 1000 << " ms"
               << (dropped ? " (" + std::to_string(dropped) + " left out: on unmounted segments)"
                           : std::string());
  return Status::Ok();
}

// One keepalive of the leader's lease; on success the lease clock and the
// log's deadline move on from `now_us` (read before the call).
Result<bool> RenewLease(ha::Election& election, const ha::Term& term, ha::LeaseClock& lease,
                        HaLog& halog, uint64_t now_us) {
  auto alive = election.KeepAlive(term);
  if (alive.ok() && *alive) {
    lease.Renewed(now_us);
    halog.SetLeaseDeadline(lease.deadline_us());
  }
  return alive;
}

// The leader phase; returns the exit code.
int Lead(HaContext& ctx, ha::Election& election, const ha::Term& term, ha::LeaseClock& lease,
         MasterService& service, HaLog& halog, rpc::Server& rpc) {
  const MasterConfig& mc = ctx.config.master;
  const uint64_t keepalive_every_us = ctx.ttl_us / 3;
  uint64_t last_keepalive_us = SystemClock::Instance().NowUs();
  uint64_t since_log_us = 0;
  std::string lost;
  while (!WaitForStop(kTickIntervalMs)) {
    const uint64_t now = SystemClock::Instance().NowUs();
    if (now - last_keepalive_us >= keepalive_every_us) {
      last_keepalive_us = now;
      auto alive = RenewLease(election, term, lease, halog, now);
      if (alive.ok() && !*alive) lost = "etcd says the lease is gone";
      if (!alive.ok()) MC_LOG(WARN) << "HA keepalive: " << alive.status().ToString();
    }
    if (lost.empty() && !lease.Valid(SystemClock::Instance().NowUs())) {
      lost = "the lease could not be renewed in time";
    }
    if (lost.empty() && halog.Failed()) lost = "etcd refused the log: " + halog.stats().failure;
    if (!lost.empty()) break;
    service.Tick();
    since_log_us += kTickIntervalMs * 1000;
    if (mc.metrics_log_interval_us > 0 && since_log_us >= mc.metrics_log_interval_us) {
      since_log_us = 0;
      MC_LOG(INFO) << "Master Metrics: " << service.Summary();
    }
  }
  if (!lost.empty()) {
    // Nothing more is acknowledged: held replies are dropped with their
    // connections, and clients find the next leader.
    halog.Fail(lost);
    rpc.Stop();
    MC_LOG(ERROR) << "HA: lost the leadership of term " << term.revision << ": " << lost
                  << "; exiting for the supervisor to restart this master as a standby";
    return kLostLeadershipExit;
  }
  MC_LOG(INFO) << "stopping master: resigning the leadership of term " << term.revision;
  NotifyServiceManager("STOPPING=1");
  rpc.Stop();
  if (!halog.WaitDurableFor(ctx.ttl_us)) MC_LOG(WARN) << "HA: log not flushed before resigning";
  halog.Fail("stopped");
  if (Status st = election.Resign(term); !st.ok()) MC_LOG(WARN) << "HA resign: " << st.ToString();
  return 0;
}

}  // namespace

int RunHaMaster(const Config& config) {
  InstallStopSignals();
  InstallReloadSignal();
  auto ctx = MakeContext(config);
  if (!ctx.ok()) {
    std::fprintf(stderr, "mooncake master: error: %s\n", ctx.status().message().c_str());
    return 2;
  }
  auto tls = MasterServerTls(config.tls);
  if (!tls.ok()) {
    std::fprintf(stderr, "mooncake master: error: %s\n", tls.status().message().c_str());
    return 2;
  }
  const std::string advertise = AdvertiseAddress(config);
  MC_LOG(INFO) << "HA: cluster '" << config.ha.cluster << "' on etcd " << config.ha.etcd
               << ", lease " << ctx->ttl_us / 1000000 << " s, advertising " << advertise
               << "; the state lives in etcd (data_dir is not used)";
  if (config.master.enable_http_metadata_server) {
    MC_LOG(WARN) << "HA: the embedded metadata server is not started (every master would hold"
                    " its own copy); run `mooncake metadata-server` for reference peers";
  }
  HaLog halog(*ctx->writer_kv, ctx->keys, SystemClock::Instance(),
              {.snapshot_every_entries = config.ha.snapshot_every,
               .entries_in_flight = config.ha.entries_in_flight,
               .compress = config.ha.compress_log,
               .linger_us = config.ha.linger_us},
              ctx->Shippers());
  MasterService service(config.master, SystemClock::Instance(), &halog);
  auto retirer = MakeRetirer(config);  // removals retired on the stores (retirer.h)
  if (!retirer.ok()) {
    std::fprintf(stderr, "mooncake master: error: %s\n", retirer.status().message().c_str());
    return 2;
  }
  service.SetRetirer(retirer->get());
  HaNode node(halog, ctx->GrpcShippers());
  AdminHttp admin(service, nullptr, config.cluster.auth_token, HttpServerTls(*tls));
  admin.SetHa(&node);
  if (Status st = admin.Start(AdminHost(config.master), config.master.metrics_port); !st.ok()) {
    std::fprintf(stderr, "mooncake master: %s\n", st.ToString().c_str());
    return 1;
  }
  NotifyServiceManager("READY=1");  // a standby is ready: it answers on its admin port

  ha::Election election(*ctx->election_kv, ctx->keys, advertise,
                        static_cast<int64_t>(ctx->ttl_us / 1000000));
  ha::FencedLog log(*ctx->follow_kv, ctx->keys);
  // The margin: what the leader's clock and etcd's may disagree by over a TTL.
  ha::LeaseClock lease(ctx->ttl_us, ctx->ttl_us / 10);
  HaImage image;
  std::optional<ha::Term> term = Standby(*ctx, election, log, image, node, lease);
  if (!term) {
    admin.Stop();
    return 0;
  }
  MC_LOG(INFO) << "HA: won the election, term " << term->revision << "; reading the log";
  node.SetState("catching_up");
  if (Status st = TakeOver(log, *term, image, service, lease); !st.ok()) {
    MC_LOG(ERROR) << "HA: cannot take over: " << st.ToString();
    (void)election.Resign(*term);
    return 1;
  }
  // The disk replicas of the log: checked against what each store announces
  // when it finds this leader (TierService::Announce), recorded here from now on.
  if (Status st = service.LoadTier(&halog, [&](const DiskReplicaVisitor& visit) {
        return image.ForEachDiskReplica(visit);
      }, "the HA log"); !st.ok()) {
    MC_LOG(ERROR) << "HA: cannot take over the disk tier: " << st.ToString();
    (void)election.Resign(*term);
    return 1;
  }
  const uint64_t index = image.index();
  // Grants carry the term, so stores refuse the deposed leader's from the
  // first one of ours they see (common/capability.h).
  service.SetGrantTerm(static_cast<uint64_t>(term->revision));
  // The previous leader's quarantine of ranges whose RETIRE failed lived in
  // its memory: retire the free space before handing any out (signed under
  // this term, so the stores accept it). A store that does not answer costs
  // that up to the retire wait, a good part of a short lease: renew it.
  (void)service.RetireFreeSpace();
  halog.SetLeaseDeadline(lease.deadline_us());
  (void)RenewLease(election, *term, lease, halog, SystemClock::Instance().NowUs());
  halog.Begin(*term, std::move(image));
  auto rpc = StartRpcServer(service, config, &halog, *tls);
  if (!rpc.ok()) {
    std::fprintf(stderr, "mooncake master: %s\n", rpc.status().ToString().c_str());
    (void)election.Resign(*term);
    return 1;
  }
  node.Promoted(*term, index);
  node.SetLeader(ha::KeyValue{.key = ctx->keys.leader, .value = advertise,
                              .create_revision = term->revision});
  node.SetState("serving");
  MC_LOG(INFO) << "master listening on " << config.master.rpc_address << ":"
               << config.master.rpc_port << " as the leader (term " << term->revision << ")";
  const int code = Lead(*ctx, election, *term, lease, service, halog, **rpc);
  node.SetState("stopping");
  admin.Stop();
  return code;
}

}  // namespace mc::masterd
