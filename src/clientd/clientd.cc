#include "clientd/clientd.h"

#include <memory>

#include "client/client.h"
#include "client/dummy_puts.h"
#include "client/rest_backend.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "common/signals.h"
#include "rest/rest_server.h"
#include "store/segment_host.h"
#include "tls/tls_setup.h"

namespace mc::clientd {

namespace {

constexpr uint64_t kStopPollMs = 200;
// Between attempts to reach a master that is not up yet.
constexpr uint64_t kConnectRetryMs = 1000;

// The Client, retrying until the master answers or a stop signal (null).
Result<std::unique_ptr<client::Client>> ConnectUntilStopped(const Config& config) {
  for (;;) {
    auto c = client::Client::Connect(config);
    if (c.ok()) return std::move(*c);
    // A refused token or a bad TLS file will not heal by waiting.
    if (c.status().code() != ErrorCode::RPC_FAIL && c.status().code() != ErrorCode::RPC_TIMEOUT) {
      return c.status();
    }
    MC_LOG(WARN) << "waiting for the master: " << c.status().ToString();
    if (WaitForStop(kConnectRetryMs)) return std::unique_ptr<client::Client>();
  }
}

Result<std::unique_ptr<store::SegmentHost>> StartSegment(const Config& config,
                                                         const ClientdOptions& o,
                                                         msg::ClientId id) {
  Config c = config;
  c.store.global_segment_size_bytes = o.global_segment_size_bytes;
  c.store.port = o.data_port;
  MC_ASSIGN_OR_RETURN(auto host, store::SegmentHost::Create(c, id));
  MC_ASSIGN_OR_RETURN(bool mounted, host->Mount(WaitForStop));
  if (!mounted) return std::unique_ptr<store::SegmentHost>();
  host->Start();
  return host;
}

// The client HTTP API (/api/*, /health, /metrics) on `port` over `cl`, with
// the cluster's token and [tls] like every other port; healthy while the
// segment (if any) is.
struct HttpApi {
  std::unique_ptr<client::ClientRestBackend> backend;
  std::unique_ptr<rest::RestServer> server;
};

Result<HttpApi> StartHttpApi(const Config& config, uint16_t port, client::Client& cl,
                             const store::SegmentHost* host) {
  MC_ASSIGN_OR_RETURN(auto tls, ServerTls(config.tls, {.listeners = "the client HTTP port"}));
  HttpApi api;
  api.backend = std::make_unique<client::ClientRestBackend>(cl, [host] {
    return host ? host->failure() : Status::Ok();
  });
  rest::RestOptions o;
  o.port = port;
  o.auth_token = config.cluster.auth_token;
  o.tls = HttpServerTls(tls);
  MC_ASSIGN_OR_RETURN(api.server, rest::RestServer::Start(*api.backend, std::move(o)));
  return api;
}

}  // namespace

std::string DefaultSocketPath(uint16_t port) {
  return "@mooncake_client_" + std::to_string(port) + ".sock";
}

Status RunClientd(const Config& config, const ClientdOptions& options) {
  InstallStopSignals();
  MC_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> cl, ConnectUntilStopped(config));
  if (!cl) return Status::Ok();
  std::unique_ptr<store::SegmentHost> host;
  if (options.global_segment_size_bytes > 0) {
    MC_ASSIGN_OR_RETURN(host, StartSegment(config, options, cl->id()));
    if (!host) return Status::Ok();
  }
  DummyServerOptions d = options.dummies;
  d.direct_puts = client::DirectPutsSettings(config);
  if (d.socket_path.empty()) d.socket_path = DefaultSocketPath(options.port);
  const std::string hostname = host ? host->name() : config.cluster.local_hostname;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<DummyServer> server, DummyServer::Start(*cl, hostname, d));
  HttpApi http;
  if (options.http_port != 0) {
    auto api = StartHttpApi(config, options.http_port, *cl, host.get());
    if (!api.ok()) {
      server->Stop();
      if (host) host->Stop();
      return Error(api.status().code(), "the HTTP API on port " +
                                            std::to_string(options.http_port) + ": " +
                                            api.status().message());
    }
    http = std::move(*api);
  }
  MC_LOG(INFO) << "client ready: dummies on " << d.socket_path
               << (host ? ", segment " + host->Describe() : std::string(", no segment"))
               << (options.http_port != 0 ? ", HTTP API on port " + std::to_string(options.http_port)
                                          : std::string());
  NotifyServiceManager("READY=1");
  Status outcome;
  while (!WaitForStop(kStopPollMs)) {
    if (host) outcome = host->failure();
    if (!outcome.ok()) break;
  }
  MC_LOG(INFO) << "stopping";
  NotifyServiceManager("STOPPING=1");
  if (http.server) http.server->Stop();
  server->Stop();
  if (host) host->Stop();
  return outcome;
}

}  // namespace mc::clientd
