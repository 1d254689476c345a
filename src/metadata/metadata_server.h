// MetadataServer: the HTTP metadata key-value service the transfer engine
// uses to publish segment descriptors and RPC endpoints.
//
// API (compatible with the reference; see mooncake-metadata-server(1)):
//   GET    /metadata?key=K     200 + stored bytes | 404
//   PUT    /metadata?key=K     body is the value: 200; 400 if K contains
//                              "rpc_meta" and already holds other bytes
//   DELETE /metadata?key=K     200 | 404
//   GET    /metadata?prefix=P  200 + keys under P, one per line (ours)
//   GET    /health             200 "ok"
//   GET    /metrics            Prometheus text: keys held, refused writes (ours)
// With `auth_token` set, PUT and DELETE need "Authorization: Bearer <token>"
// (401 otherwise, logged with the peer's address and counted in /metrics);
// GET, /health and /metrics stay open.
// Missing key → 400, other methods on /metadata → 405, unknown path → 404,
// key or value past its limit → 413 naming the limit.
//
// Usable embedded (the master runs one with --enable-http-metadata-server) or
// alone (`mooncake metadata-server`). Thread-safe: Start and Stop may be
// called from any thread; requests are served by `threads` worker threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "config/config.h"

struct ssl_ctx_st;
namespace httplib {
class Server;
}

namespace mc::metadata {

class KvStore;

// Prepares cpp-httplib's SSL_CTX (net::TlsContext::AdoptServerCtx); false
// fails the start. Empty: plain HTTP.
using HttpTlsSetup = std::function<bool(ssl_ctx_st&)>;

class MetadataServer {
 public:
  // Validates the limits and opens the store: SQLite at config.db, or memory
  // only if it is empty. Does not listen yet.
  static Result<std::unique_ptr<MetadataServer>> Open(const MetadataServerConfig& config);
  ~MetadataServer();  // stops if running

  MetadataServer(const MetadataServer&) = delete;
  MetadataServer& operator=(const MetadataServer&) = delete;

  // Binds host:port (port 0 picks a free one) and serves in the background.
  // Errors: the address cannot be bound (message says why), already started.
  Status Start(const std::string& host, uint16_t port, HttpTlsSetup tls = {});
  // Stops accepting, finishes requests in flight, joins the threads. Idempotent.
  void Stop();

  // Installs the routes, limits and handlers on `server` without binding
  // anything; Start does this on its own server. Lets a test feed requests
  // to the handlers with no socket (tests/fuzz/metadata_http_fuzz).
  void InstallRoutes(httplib::Server& server);

  // The port actually bound; 0 before Start.
  uint16_t port() const;
  KvStore& store();

 private:
  struct Impl;
  explicit MetadataServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mc::metadata
