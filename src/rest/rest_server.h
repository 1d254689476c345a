// RestServer: a store client's HTTP API, for tools and languages without
// our library. The reference's store-service routes and its client HTTP
// port's routes on one listener, over a RestBackend that the embedded
// client (engine, setup(enable_client_http_server=True)) and the standalone
// `mooncake client` each implement:
//
//   PUT    /api/put            JSON {"key": K, "value": "text"} (the
//                              reference's form; the value is its UTF-8
//                              bytes), or any other body as raw bytes with
//                              the key in ?key=K: binary-safe
//   PUT    /api/put/{key}      the body as raw bytes (ours)
//   GET    /api/get/{key}      200 application/octet-stream | 404
//   GET    /api/exist/{key}    200 {"exists": true|false}
//   DELETE /api/remove/{key}   200 {"status": "success"} | 404
//   DELETE /api/remove_all     200 {"status": "success removed N keys"}
//   GET    /health             200 {"status":"healthy","code":0} | 503
//   GET    /metrics            Prometheus text (the backend's, then ours)
//   GET    /metrics/summary    text
// Errors are JSON {"error": message, "error_code": code}: 400 for a missing
// key or value, 404 for an absent key, 409 for a remove of a key a reader
// holds a lease on, 413 for a body past max_body_bytes
// (a JSON body past config::kMaxJsonBytes), 411 for a body without a
// Content-Length (chunked or read to the end: it could not be bounded), 500
// for a failed operation.
// With `auth_token` set, every /api/ route needs "Authorization: Bearer
// <token>" (401 otherwise, counted); /health and /metrics stay open, like
// the master's admin port. TLS through the same [tls] hook as every HTTP
// port (tls/tls_setup.h HttpServerTls).
// Thread-safe: requests run on `threads` workers; the backend must be too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/result.h"

struct ssl_ctx_st;
namespace httplib {
class Server;
}

namespace mc::rest {

class RestBackend {
 public:
  virtual ~RestBackend() = default;
  virtual Status Put(const std::string& key, std::span<const uint8_t> value) = 0;
  // OBJECT_NOT_FOUND when absent.
  virtual Result<std::string> Get(const std::string& key) = 0;
  virtual Result<bool> Exists(const std::string& key) = 0;
  // OBJECT_NOT_FOUND when absent.
  virtual Status Remove(const std::string& key) = 0;
  // How many objects went.
  virtual Result<int64_t> RemoveAll() = 0;
  // OK when the client can serve (set up, master reachable); otherwise the
  // reason, answered with 503.
  virtual Status Health() = 0;
  virtual std::string MetricsText() = 0;
  virtual std::string SummaryText() = 0;
};

inline constexpr uint64_t kDefaultMaxBodyBytes = 64ull << 20;
// A value past this is refused at start-up (a body is held in memory whole).
inline constexpr uint64_t kMaxBodyBytesCeiling = 1ull << 30;
inline constexpr int kDefaultRestThreads = 4;
inline constexpr int kMaxRestThreads = 64;

struct RestOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 0;  // 0: the kernel picks
  std::string auth_token;
  uint64_t max_body_bytes = kDefaultMaxBodyBytes;
  int threads = kDefaultRestThreads;
  std::function<bool(ssl_ctx_st&)> tls;  // empty: plain HTTP
};

// The routes, limits and guards of one API listener. RestServer::Start
// installs them on its own server; a fuzz target installs them on a server
// it feeds bytes to with no socket (tests/fuzz/rest_http_fuzz). `backend`
// must outlive this, and this the server it is installed on.
class RestRoutes {
 public:
  RestRoutes(RestBackend& backend, const RestOptions& options);
  ~RestRoutes();
  RestRoutes(const RestRoutes&) = delete;
  RestRoutes& operator=(const RestRoutes&) = delete;
  void Install(httplib::Server& server);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class RestServer {
 public:
  // Binds and serves in the background; INVALID_PARAMS for a limit out of
  // range, INTERNAL_ERROR naming the address when it cannot bind.
  static Result<std::unique_ptr<RestServer>> Start(RestBackend& backend, RestOptions options);
  ~RestServer();  // stops
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  uint16_t port() const;
  bool tls() const;
  void Stop();

 private:
  struct Impl;
  explicit RestServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mc::rest
