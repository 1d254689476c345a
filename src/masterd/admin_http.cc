#include "masterd/admin_http.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/bearer.h"
#include "common/json_escape.h"
#include "common/log.h"
#include "masterd/ha_status.h"
#include "masterd/journal.h"
#include "masterd/prometheus.h"
#include "masterd/service.h"
#include "masterd/tier_admin.h"

namespace mc::masterd {

namespace {

std::string JsonString(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

void OpMetrics(PrometheusText& p, const char* op, const master::OpCounter& c) {
  std::string base = std::string("master_") + op;
  p.Counter(base + "_requests_total", std::string("Requests of ") + op, static_cast<double>(c.requests));
  p.Counter(base + "_failures_total", std::string("Failed requests of ") + op,
            static_cast<double>(c.failures));
}

// Every path and direction, zeros included, so "tcp moved nothing" is a
// sample an operator (or a test) can read rather than an absent series.
void TransferMetrics(PrometheusText& p, const MasterService::TransferTotals& t) {
  static constexpr const char* kPath[] = {"tcp", "rdma", "shm"};
  static constexpr const char* kDir[] = {"put", "get"};
  static_assert(std::size(kPath) == msg::kTransferPaths && std::size(kDir) == msg::kTransferDirs);
  // A family's samples must be contiguous: all ops, then all bytes.
  for (bool bytes : {false, true}) {
    for (size_t path = 0; path < msg::kTransferPaths; ++path) {
      for (size_t dir = 0; dir < msg::kTransferDirs; ++dir) {
        PrometheusText::Labels labels{{"path", kPath[path]}, {"op", kDir[dir]}};
        if (bytes) {
          p.Counter("mooncake_transfer_bytes_total",
                    "Bytes clients reported moving, by data path and direction",
                    static_cast<double>(t[path][dir].bytes), labels);
        } else {
          p.Counter("mooncake_transfer_ops_total",
                    "Transfers clients reported finishing, by data path and direction",
                    static_cast<double>(t[path][dir].ops), labels);
        }
      }
    }
  }
}

}  // namespace

std::string RenderMetrics(const MasterService& service, const Journal* journal,
                          const HaStatusSource* ha) {
  master::MasterCounters c = service.Counters();
  PrometheusText p;
  p.Gauge("master_allocated_bytes", "Bytes allocated to objects", static_cast<double>(c.allocated_bytes));
  p.Gauge("master_total_capacity_bytes", "Bytes of all mounted segments",
          static_cast<double>(c.capacity_bytes));
  p.Gauge("master_key_count", "Objects in the index", static_cast<double>(c.key_count));
  p.Gauge("master_soft_pin_key_count", "Soft-pinned objects", static_cast<double>(c.soft_pinned_count));
  p.Gauge("master_active_clients", "Clients with a live heartbeat", static_cast<double>(c.active_clients));
  p.Gauge("master_segment_count", "Mounted segments", static_cast<double>(c.segment_count));
  OpMetrics(p, "mount_segment", c.mount_segment);
  OpMetrics(p, "unmount_segment", c.unmount_segment);
  OpMetrics(p, "ping", c.ping);
  OpMetrics(p, "put_start", c.put_start);
  OpMetrics(p, "put_end", c.put_end);
  OpMetrics(p, "put_revoke", c.put_revoke);
  OpMetrics(p, "get_replica_list", c.get_replica_list);
  OpMetrics(p, "exist_key", c.exist_key);
  OpMetrics(p, "remove", c.remove);
  OpMetrics(p, "remove_all", c.remove_all);
  OpMetrics(p, "list_keys", c.list_keys);
  OpMetrics(p, "batch_put_start", c.batch_put_start);
  OpMetrics(p, "batch_put_end", c.batch_put_end);
  OpMetrics(p, "batch_put_revoke", c.batch_put_revoke);
  OpMetrics(p, "batch_get_replica_list", c.batch_get_replica_list);
  OpMetrics(p, "batch_exist_key", c.batch_exist_key);
  TransferMetrics(p, service.Transfers());
  p.Counter("master_successful_evictions_total", "Eviction runs that freed space",
            static_cast<double>(c.successful_evictions));
  // The reference names these without _total; kept as gauges of running sums
  // so dashboards built for it work and promtool stays satisfied.
  p.Gauge("master_evicted_key_count", "Objects evicted since start", static_cast<double>(c.evicted_keys));
  p.Gauge("master_evicted_size_bytes", "Bytes evicted since start", static_cast<double>(c.evicted_bytes));
  p.Counter("master_eviction_recency_victims_total",
            "Objects the adaptive policy evicted by plain recency, while its duel had exact LRU ahead",
            static_cast<double>(c.victims_by_recency));
  p.Counter("master_eviction_mode_switches_total",
            "Times the adaptive policy switched between ARC's lists and plain recency",
            static_cast<double>(c.eviction_mode_switches));
  p.Counter("master_expired_clients_total", "Clients declared dead", static_cast<double>(c.expired_clients));
  p.Counter("master_discarded_puts_total", "Puts neither ended nor revoked in time",
            static_cast<double>(c.discarded_puts));
  p.Counter("master_released_reads_total", "Gets whose read-lease release the master counted",
            static_cast<double>(c.released_reads));
  p.Counter("master_leases_ended_by_release_total",
            "Read leases that ended before their TTL because every counted get released them",
            static_cast<double>(c.leases_ended_by_release));
  if (const MasterService::RetireReport r = service.RetireStats(); r.retirer != nullptr) {
    // Ranges whose RETIRE failed stay out of new objects (mooncake-protocol(7)).
    p.Gauge("master_retire_quarantined_bytes",
            "Bytes withheld from new objects because their RETIRE on the store failed",
            static_cast<double>(r.quarantine.bytes));
    p.Gauge("master_retire_quarantined_ranges", "Ranges withheld for a failed RETIRE",
            static_cast<double>(r.quarantine.ranges));
    p.Counter("master_retire_failed_total", "Ranges a store did not retire when asked",
              static_cast<double>(r.failed));
    p.Counter("master_retire_recovered_total",
              "Failed ranges retired later by a retry (their quarantine lifted)",
              static_cast<double>(r.recovered));
  }
  if (journal != nullptr) {
    // commit_seconds over commits, the mean commit time, is the least a
    // durable PutEnd waits; with fsync=always most of it is the disk's flush.
    const Journal::Stats j = journal->stats();
    p.Counter("master_journal_commits_total",
              "Transactions the journal committed to the state file",
              static_cast<double>(j.commits));
    p.Counter("master_journal_changes_total",
              "Changes committed to the state file (objects put or removed, segments mounted or unmounted)",
              static_cast<double>(j.changes));
    p.Counter("master_journal_commit_seconds_total",
              "Seconds spent committing: SQLite's writes and any fdatasync of the WAL before the replies",
              j.commit_seconds);
    p.Counter("master_journal_syncs_total",
              "fdatasyncs of the WAL: one per commit (fsync=always); per commit that freed space"
              " and per second with unsynced commits (fsync=everysec)",
              static_cast<double>(j.syncs));
  }
  RenderTierMetrics(service, p);
  if (ha != nullptr) ha->AppendMetrics(p);
  return p.str();
}

struct AdminHttp::Impl {
  MasterService& service;
  std::unique_ptr<BearerGuard> guard;  // the routes that reveal keys
  std::unique_ptr<httplib::Server> server_ptr;  // an SSLServer with TLS
  httplib::Server& server;
  std::atomic<const HaStatusSource*> ha{nullptr};
  std::thread thread;
  std::atomic<bool> listen_done{false};  // the accept loop returned
  Impl(MasterService& s, std::unique_ptr<httplib::Server> srv)
      : service(s), server_ptr(std::move(srv)), server(*server_ptr) {}
};

namespace {
std::unique_ptr<httplib::Server> NewServer(const std::function<bool(ssl_ctx_st&)>& tls) {
  if (!tls) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>([&tls](SSL_CTX& ctx) { return tls(ctx); });
}
}  // namespace

AdminHttp::AdminHttp(MasterService& service, const Journal* journal,
                     const std::string& auth_token, std::function<bool(ssl_ctx_st&)> tls)
    : impl_(std::make_unique<Impl>(service, NewServer(tls))) {
  impl_->guard = std::make_unique<BearerGuard>("admin http", auth_token);
  auto& srv = impl_->server;
  MasterService* svc = &service;
  BearerGuard* guard = impl_->guard.get();
  srv.set_pre_routing_handler([guard](const httplib::Request& req, httplib::Response& res) {
    if ((req.path == "/query_key" || req.path == "/get_all_keys") &&
        !guard->Admit(req.get_header_value("Authorization"),
                      req.remote_addr + ":" + std::to_string(req.remote_port), req.method,
                      req.path)) {
      res.status = 401;
      res.set_header("WWW-Authenticate", kBearerChallenge);
      res.set_content(std::string("{\"error_code\":-601,\"error\":\"") + kBearerRefusal + "\"}\n",
                      "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  Impl* impl = impl_.get();
  srv.Get("/metrics", [svc, journal, guard, impl](const httplib::Request&, httplib::Response& res) {
    PrometheusText auth;
    auth.Counter("master_admin_auth_failures_total",
                 "Admin requests refused for a missing or wrong auth token",
                 static_cast<double>(guard->refused()));
    res.set_content(RenderMetrics(*svc, journal, impl->ha.load()) + auth.str(),
                    "text/plain; version=0.0.4");
  });
  srv.Get("/metrics/summary", [svc, impl](const httplib::Request&, httplib::Response& res) {
    const HaStatusSource* ha = impl->ha.load();
    res.set_content(svc->Summary() + TierSummary(*svc) + (ha ? ha->Summary() : "") + "\n",
                    "text/plain");
  });
  srv.Get("/role", [impl](const httplib::Request&, httplib::Response& res) {
    const HaStatusSource* ha = impl->ha.load();
    res.set_content(ha ? ha->Role() : "leader", "text/plain; charset=utf-8");
  });
  srv.Get("/ha_status", [impl](const httplib::Request&, httplib::Response& res) {
    const HaStatusSource* ha = impl->ha.load();
    res.set_content(ha ? ha->State() : "serving", "text/plain; charset=utf-8");
  });
  srv.Get("/leader", [impl](const httplib::Request&, httplib::Response& res) {
    const HaStatusSource* ha = impl->ha.load();
    res.set_content(ha ? ha->LeaderJson() : "{\"present\":false}", "application/json");
  });
  srv.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  srv.Get("/query_key", [svc](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("key")) {
      res.status = 400;
      res.set_content("{\"error_code\":-600,\"error\":\"missing key parameter\"}\n", "application/json");
      return;
    }
    std::string key = req.get_param_value("key");
    auto obj = svc->QueryKey(key);
    uint64_t disk_size = 0;
    const std::string tier = TierJson(*svc, key, obj.ok(), &disk_size);
    if (!obj.ok() && disk_size > 0) {  // on disk only
      res.set_content("{\"key\":" + JsonString(key) + ",\"size\":" + std::to_string(disk_size) +
                          ",\"soft_pinned\":false,\"replicas\":[]" + tier + "}\n",
                      "application/json");
      return;
    }
    if (!obj.ok()) {
      res.status = 404;
      res.set_content("{\"error_code\":-704,\"error\":" + JsonString(obj.status().message()) + "}\n",
                      "application/json");
      return;
    }
    std::string out = "{\"key\":" + JsonString(obj->key) + ",\"size\":" + std::to_string(obj->size_bytes) +
                      ",\"soft_pinned\":" + (obj->soft_pin ? "true" : "false") + ",\"replicas\":[";
    for (size_t r = 0; r < obj->replicas.size(); ++r) {
      out += r ? ",[" : "[";
      for (size_t b = 0; b < obj->replicas[r].size(); ++b) {
        const auto& buf = obj->replicas[r][b];
        out += (b ? ",{" : "{") + std::string("\"segment\":") + JsonString(buf.segment_name) +
               ",\"offset\":" + std::to_string(buf.offset) + ",\"size\":" + std::to_string(buf.size_bytes) + "}";
      }
      out += "]";
    }
    out += "]" + tier + "}\n";
    res.set_content(out, "application/json");
  });
  srv.Get("/get_all_keys", [svc](const httplib::Request&, httplib::Response& res) {
    std::string out;
    for (const auto& k : svc->AllKeys()) out += k + "\n";
    res.set_content(out, "text/plain");
  });
  srv.Get("/get_all_segments", [svc](const httplib::Request&, httplib::Response& res) {
    std::string out;
    for (const auto& s : svc->Snapshot().segments) out += s.name + "\n";
    res.set_content(out, "text/plain");
  });
}

AdminHttp::~AdminHttp() { Stop(); }

void AdminHttp::SetHa(const HaStatusSource* ha) { impl_->ha.store(ha); }

Status AdminHttp::Start(const std::string& host, uint16_t port) {
  if (!impl_->server.is_valid()) {
    return Error(ErrorCode::INVALID_PARAMS, "admin HTTP port: TLS setup failed");
  }
  if (!impl_->server.bind_to_port(host.c_str(), port)) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "cannot listen on " + host + ":" + std::to_string(port) + " for the admin HTTP port");
  }
  std::atomic<bool>& done = impl_->listen_done;
  done = false;
  impl_->thread = std::thread([this, &done] {
    impl_->server.listen_after_bind();
    done = true;
  });
  // httplib's stop() does nothing until the accept loop runs, so a Stop()
  // right after Start() (a master that fails to start its next part, or is
  // told to stop at once) would leave the loop in accept() and the join
  // waiting for ever: wait until it runs (the loop marks itself running as
  // it starts) or has returned.
  while (!impl_->server.is_running() && !done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!impl_->server.is_running()) {
    impl_->thread.join();  // done: the loop returned
    return Error(ErrorCode::INTERNAL_ERROR,
                 "the admin HTTP server on " + host + ":" + std::to_string(port) + " did not start");
  }
  return Status::Ok();
}

void AdminHttp::Stop() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace mc::masterd
