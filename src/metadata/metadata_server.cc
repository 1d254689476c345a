#include "metadata/metadata_server.h"

#include <httplib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/bearer.h"
#include "common/log.h"
#include "metadata/kv_store.h"
#include "metadata/sqlite_durability.h"

namespace mc::metadata {

namespace {

// cpp-httplib refuses request lines past CPPHTTPLIB_REQUEST_URI_MAX_LENGTH
// (8192 bytes) with 414, so a key limit above that could never be reached.
constexpr uint32_t kMaxKeyBytesCeiling = 8000;
// SQLite's default SQLITE_MAX_LENGTH is 1e9 bytes; stay well below it.
constexpr uint64_t kMaxValueBytesCeiling = 512ull << 20;
constexpr uint32_t kMaxThreads = 1024;
// Bounds on how long one slow or idle client can hold a worker thread.
constexpr time_t kReadTimeoutSec = 10;
constexpr time_t kWriteTimeoutSec = 10;
constexpr time_t kKeepAliveTimeoutSec = 5;
constexpr size_t kKeepAliveMaxRequests = 100;
constexpr auto kStartTimeout = std::chrono::seconds(10);
// httplib listens with a backlog of 5, which overflows (connection resets)
// when a few dozen clients connect at once; Linux lets listen() raise it.
constexpr int kListenBacklog = 1024;

constexpr const char* kAllowMetadata = "GET, PUT, DELETE";

Status ValidateConfig(const MetadataServerConfig& c) {
  if (c.max_key_bytes < 1 || c.max_key_bytes > kMaxKeyBytesCeiling) {
    return Error(ErrorCode::INVALID_PARAMS, "max_key_size must be in 1.." +
                                                std::to_string(kMaxKeyBytesCeiling) + ", got " +
                                                std::to_string(c.max_key_bytes));
  }
  if (c.max_value_bytes > kMaxValueBytesCeiling) {
    return Error(ErrorCode::INVALID_PARAMS, "max_value_size must be at most " +
                                                std::to_string(kMaxValueBytesCeiling) +
                                                ", got " + std::to_string(c.max_value_bytes));
  }
  if (c.threads < 1 || c.threads > kMaxThreads) {
    return Error(ErrorCode::INVALID_PARAMS, "threads must be in 1.." +
                                                std::to_string(kMaxThreads) + ", got " +
                                                std::to_string(c.threads));
  }
  return Status::Ok();
}

void Reply(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(message + "\n", "text/plain");
}

// HTTP status for a store error.
int HttpStatusFor(const Status& st) {
  switch (st.code()) {
    case ErrorCode::OBJECT_NOT_FOUND: return 404;
    case ErrorCode::INVALID_KEY: return 400;
    case ErrorCode::OBJECT_ALREADY_EXISTS: return 400;  // the reference's answer
    case ErrorCode::BUFFER_OVERFLOW: return 413;
    default: return 500;
  }
}

void ReplyError(httplib::Response& res, const Status& st) {
  Reply(res, HttpStatusFor(st), st.message());
}

}  // namespace

struct MetadataServer::Impl {
  MetadataServerConfig config;
  std::unique_ptr<KvStore> store;
  std::unique_ptr<BearerGuard> guard;  // PUT and DELETE, when a token is set
  std::mutex mu;  // guards server, thread, port
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  std::atomic<bool> listen_done{false};
  int listen_fd = -1;
  uint16_t port = 0;

  void Install(httplib::Server& s);
  void HandleGet(const httplib::Request& req, httplib::Response& res);
  void HandlePut(const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& reader);
  void HandleDelete(const httplib::Request& req, httplib::Response& res);
};

void MetadataServer::Impl::Install(httplib::Server& s) {
  const uint32_t threads = config.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // httplib's default sets SO_REUSEPORT, which lets a second server share
  // the port silently; SO_REUSEADDR alone still allows a quick restart.
  s.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = sock;  // the last socket tried is the one that gets bound
  });
  s.set_payload_max_length(config.max_value_bytes);
  s.set_read_timeout(kReadTimeoutSec, 0);
  s.set_write_timeout(kWriteTimeoutSec, 0);
  s.set_keep_alive_timeout(kKeepAliveTimeoutSec);
  s.set_keep_alive_max_count(kKeepAliveMaxRequests);

  // Routing by path first, so every method reaches a defined answer.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/metadata") {
      // Writes change where segments' bytes are sent: with a token, only
      // peers that hold it may make them. Reads stay open for reference
      // clients and probes.
      if ((req.method == "PUT" || req.method == "DELETE") &&
          !guard->Admit(req.get_header_value("Authorization"),
                        req.remote_addr + ":" + std::to_string(req.remote_port), req.method,
                        req.path)) {
        res.set_header("WWW-Authenticate", kBearerChallenge);
        Reply(res, 401, kBearerRefusal);
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.method == "GET" || req.method == "PUT" || req.method == "DELETE") {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.set_header("Allow", kAllowMetadata);
      Reply(res, 405, "method " + req.method + " not allowed on /metadata (use " +
                          kAllowMetadata + ")");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/metrics" && req.method == "GET") {
      res.set_content(
          "# HELP metadata_keys Keys the metadata server holds.\n"
          "# TYPE metadata_keys gauge\nmetadata_keys " + std::to_string(store->size()) +
              "\n# HELP metadata_auth_failures_total PUT or DELETE requests refused for a"
              " missing or wrong auth token.\n"
              "# TYPE metadata_auth_failures_total counter\nmetadata_auth_failures_total " +
              std::to_string(guard->refused()) + "\n",
          "text/plain; version=0.0.4");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/health") {
      if (req.method == "GET") Reply(res, 200, "ok");
      else {
        res.set_header("Allow", "GET");
        Reply(res, 405, "method " + req.method + " not allowed on /health (use GET)");
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    Reply(res, 404, "no such path " + req.path + " (the API is /metadata?key=K, /health and /metrics)");
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Get("/metadata", [this](const httplib::Request& req, httplib::Response& res) {
    HandleGet(req, res);
  });
  s.Put("/metadata", [this](const httplib::Request& req, httplib::Response& res,
                            const httplib::ContentReader& reader) { HandlePut(req, res, reader); });
  s.Delete("/metadata", [this](const httplib::Request& req, httplib::Response& res) {
    HandleDelete(req, res);
  });

  // Errors httplib produces itself (body too large, request line too long,
  // malformed request) get a message too; ours already carry one.
  const uint64_t max_value = config.max_value_bytes;
  s.set_error_handler(httplib::Server::HandlerWithResponse(
      [max_value](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    switch (res.status) {
      case 413:
        Reply(res, 413, "value larger than the limit max_value_size = " +
                            std::to_string(max_value) + " bytes");
        break;
      case 414: Reply(res, 414, "request line longer than 8192 bytes"); break;
      default: Reply(res, res.status, httplib::detail::status_message(res.status)); break;
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        MC_LOG(ERROR) << "metadata server: " << req.method << " " << req.path << ": " << what;
        Reply(res, 500, "internal error: " + what);
      });
  s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    MC_LOG(DEBUG) << "metadata server: " << req.method << " " << req.target << " -> "
                  << res.status;
  });
}

void MetadataServer::Impl::HandleGet(const httplib::Request& req, httplib::Response& res) {
  const bool has_key = req.has_param("key");
  const bool has_prefix = req.has_param("prefix");
  if (has_key && has_prefix) return Reply(res, 400, "give either key or prefix, not both");
  if (has_prefix) {
    std::string body;
    for (const std::string& k : store->List(req.get_param_value("prefix"))) {
      body += k;
      body += '\n';
    }
    res.status = 200;
    res.set_content(body, "text/plain");
    return;
  }
  if (!has_key) return Reply(res, 400, "missing query parameter 'key' (or 'prefix')");
  auto value = store->Get(req.get_param_value("key"));
  if (!value.ok()) return ReplyError(res, value.status());
  res.status = 200;
  res.set_content(std::move(value).value(), "application/octet-stream");
}

void MetadataServer::Impl::HandlePut(const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& reader) {
  // Read (or drain) the body first so the connection stays in step.
  const uint64_t max_value = config.max_value_bytes;
  std::string body;
  bool too_large = false;
  bool read_ok;
  if (req.is_multipart_form_data()) {
    read_ok = reader([](const httplib::MultipartFormData&) { return true; },
                     [](const char*, size_t) { return true; });
    if (read_ok) return Reply(res, 400, "multipart bodies are not supported: send the raw value");
  } else {
    read_ok = reader([&](const char* data, size_t n) {
      // Chunked bodies have no Content-Length for httplib to check: discard
      // past the limit but keep reading to the end of the request.
      if (too_large || body.size() + n > max_value) too_large = true;
      else body.append(data, n);
      return true;
    });
  }
  if (!read_ok || too_large) {
    if (too_large || res.status == 413) {
      return Reply(res, 413, "value larger than the limit max_value_size = " +
                                 std::to_string(max_value) + " bytes");
    }
    return Reply(res, 400, "could not read the request body");
  }
  if (!req.has_param("key")) return Reply(res, 400, "missing query parameter 'key'");
  Status st = store->Put(req.get_param_value("key"), std::move(body));
  if (!st.ok()) {
    if (st.code() == ErrorCode::INTERNAL_ERROR) {
      MC_LOG(ERROR) << "metadata server: " << st.message();
    }
    return ReplyError(res, st);
  }
  Reply(res, 200, "ok");
}

void MetadataServer::Impl::HandleDelete(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("key")) return Reply(res, 400, "missing query parameter 'key'");
  Status st = store->Delete(req.get_param_value("key"));
  if (!st.ok()) {
    if (st.code() == ErrorCode::INTERNAL_ERROR) {
      MC_LOG(ERROR) << "metadata server: " << st.message();
    }
    return ReplyError(res, st);
  }
  Reply(res, 200, "ok");
}

Result<std::unique_ptr<MetadataServer>> MetadataServer::Open(const MetadataServerConfig& config) {
  MC_RETURN_IF_ERROR(ValidateConfig(config));
  std::unique_ptr<Durability> durability;
  if (config.db.empty()) {
    durability = NewMemoryOnly();
  } else {
    MC_ASSIGN_OR_RETURN(durability, OpenSqliteDurability(config.db));
  }
  KvLimits limits{config.max_key_bytes, config.max_value_bytes};
  MC_ASSIGN_OR_RETURN(auto store, KvStore::Open(std::move(durability), limits));
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->store = std::move(store);
  impl->guard = std::make_unique<BearerGuard>("metadata server", config.auth_token);
  return std::unique_ptr<MetadataServer>(new MetadataServer(std::move(impl)));
}

MetadataServer::MetadataServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetadataServer::~MetadataServer() { Stop(); }

Status MetadataServer::Start(const std::string& host, uint16_t port, HttpTlsSetup tls) {
  std::lock_guard lock(impl_->mu);
  if (impl_->server) return Error(ErrorCode::INVALID_PARAMS, "metadata server already started");
  const std::string where = host + ":" + std::to_string(port);
  try {
    std::unique_ptr<httplib::Server> server;
    if (tls) {
      auto ssl = std::make_unique<httplib::SSLServer>([&tls](SSL_CTX& ctx) { return tls(ctx); });
      if (!ssl->is_valid()) {
        return Error(ErrorCode::INVALID_PARAMS, "metadata server on " + where + ": TLS setup failed");
      }
      server = std::move(ssl);
    } else {
      server = std::make_unique<httplib::Server>();
    }
    impl_->Install(*server);
    errno = 0;
    int bound = port == 0 ? server->bind_to_any_port(host) : (server->bind_to_port(host, port) ? port : -1);
    if (bound <= 0) {
      int err = errno;
      return Error(ErrorCode::INVALID_PARAMS,
                   "cannot listen on " + where + ": " +
                       (err ? std::strerror(err) : "address in use or not available"));
    }
    if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, kListenBacklog);
    impl_->listen_done = false;
    httplib::Server* raw = server.get();
    impl_->thread = std::thread([this, raw] {
      try {
        raw->listen_after_bind();
      } catch (const std::exception& e) {
        MC_LOG(ERROR) << "metadata server stopped: " << e.what();
      }
      impl_->listen_done = true;
    });
    // httplib's stop() does nothing until the accept loop runs: wait for it,
    // so a Stop() right after Start() cannot be lost.
    auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (!raw->is_running() && !impl_->listen_done &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->server = std::move(server);
    impl_->port = static_cast<uint16_t>(bound);
    if (!impl_->server->is_running()) {
      impl_->server->stop();
      impl_->thread.join();
      impl_->server.reset();
      impl_->port = 0;
      return Error(ErrorCode::INTERNAL_ERROR, "metadata server on " + where + " did not start");
    }
  } catch (const std::exception& e) {
    return Error(ErrorCode::INTERNAL_ERROR, "cannot start metadata server on " + where + ": " + e.what());
  }
  return Status::Ok();
}

void MetadataServer::Stop() {
  std::lock_guard lock(impl_->mu);
  if (!impl_->server) return;
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->server.reset();
  impl_->port = 0;
}

void MetadataServer::InstallRoutes(httplib::Server& server) { impl_->Install(server); }

uint16_t MetadataServer::port() const {
  std::lock_guard lock(impl_->mu);
  return impl_->port;
}

KvStore& MetadataServer::store() { return *impl_->store; }

}  // namespace mc::metadata
