// The master's admin HTTP endpoint (default port 9003): Prometheus metrics,
// the human summary, health, and read-only views of keys and segments.
//
//   GET /metrics            Prometheus text (names as the reference's)
//   GET /metrics/summary    the "Storage: X / Y (p%) | Keys: ..." line
//   GET /health             200 "ok"
//   GET /query_key?key=K    200 JSON {key, size, replicas: [[{segment, offset, size}]]}
//                           404 {"error_code":-704,"error":"..."}
//   GET /get_all_keys       one key a line
//   GET /get_all_segments   one segment name a line
//   GET /role               "leader" or "standby" ("leader" without HA)
//   GET /ha_status          the HA state: starting, standby, catching_up, serving,
//                           stopping ("serving" without HA)
//   GET /leader             {"present":bool,"leader_address":"h:p","view_version":N}
// With an auth token, the routes that reveal keys (/query_key,
// /get_all_keys) need "Authorization: Bearer <token>" (401 otherwise,
// logged with the peer's address and counted as
// master_admin_auth_failures_total); the rest stay open for probes.
// Thread-safe; serves on its own threads until Stop().
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <string>

#include "common/result.h"
#include "config/config.h"

struct ssl_ctx_st;

namespace mc::masterd {

class HaStatusSource;
class Journal;
class MasterService;

class AdminHttp {
 public:
  // `journal`: the master's, whose figures /metrics adds; null with
  // --data-dir none. Both must outlive the server. `auth_token`: the
  // cluster's; empty leaves every route open (the reference's behaviour).
  // `tls`: prepares cpp-httplib's SSL_CTX (HTTPS); empty: plain HTTP.
  explicit AdminHttp(MasterService& service, const Journal* journal = nullptr,
                     const std::string& auth_token = "",
                     std::function<bool(ssl_ctx_st&)> tls = {});
  ~AdminHttp();
  // Before Start: the HA view /role, /ha_status, /leader and /metrics
  // show (must outlive the server).
  void SetHa(const HaStatusSource* ha);
  Status Start(const std::string& host, uint16_t port);
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Where the admin port binds: [master] metrics_host, or the RPC address when
// that is empty.
inline const std::string& AdminHost(const MasterConfig& mc) {
  return mc.metrics_host.empty() ? mc.rpc_address : mc.metrics_host;
}

// The Prometheus text for the service's counters and, given one, the
// journal's (exposed for tests).
std::string RenderMetrics(const MasterService& service, const Journal* journal = nullptr,
                          const HaStatusSource* ha = nullptr);

}  // namespace mc::masterd
