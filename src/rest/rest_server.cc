#include "rest/rest_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "common/bearer.h"
#include "common/json_escape.h"
#include "common/log.h"
#include "config/json_reader.h"

namespace mc::rest {
namespace {

constexpr const char* kJson = "application/json";

// Counters of what the listener itself decided, appended to /metrics.
struct Counters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> too_large{0};
  std::atomic<uint64_t> failed{0};
};

void SendError(httplib::Response& res, int http_status, ErrorCode code, const std::string& msg) {
  res.status = http_status;
  res.set_content("{\"error\":\"" + JsonEscape(msg) + "\",\"error_code\":" +
                      std::to_string(static_cast<int>(code)) + "}\n",
                  kJson);
}

// 404 for an absent key, 409 for one a reader holds a lease on (remove
// it later), 500 (counted) for anything else.
void SendFailure(httplib::Response& res, const Status& st, Counters* counters) {
  if (st.code() == ErrorCode::OBJECT_NOT_FOUND) {
    SendError(res, 404, st.code(), "Key not found: " + st.message());
    return;
  }
  if (st.code() == ErrorCode::OBJECT_HAS_LEASE) {
    SendError(res, 409, st.code(), st.message());
    return;
  }
  counters->failed.fetch_add(1);
  SendError(res, 500, st.code(), st.message());
}

std::string TooLargeMessage(uint64_t limit) {
  return "request body exceeds the limit of " + std::to_string(limit) +
         " bytes (max_body_bytes)";
}

void HandlePut(RestBackend& b, Counters* c, uint64_t limit, const httplib::Request& req,
               std::string_view body, httplib::Response& res, std::string key) {
  if (body.size() > limit) {  // the guards let no such body through; kept as a backstop
    c->too_large.fetch_add(1);
    SendError(res, 413, ErrorCode::INVALID_PARAMS, TooLargeMessage(limit));
    return;
  }
  const bool json = req.get_header_value("Content-Type").starts_with("application/json");
  std::string_view value = body;
  std::string json_value;
  if (key.empty() && json) {
    if (body.size() > config::kMaxJsonBytes) {
      c->too_large.fetch_add(1);
      SendError(res, 413, ErrorCode::INVALID_PARAMS,
                "a JSON body is at most " + std::to_string(config::kMaxJsonBytes) +
                    " bytes; send a larger value raw to /api/put?key=K");
      return;
    }
    auto doc = config::ParseJson(body);
    if (!doc.ok() || doc->kind != config::JsonValue::Kind::kObject) {
      SendError(res, 400, ErrorCode::INVALID_PARAMS,
                "body is not a JSON object: " + (doc.ok() ? "" : doc.status().message()));
      return;
    }
    auto k = doc->members.find("key");
    auto v = doc->members.find("value");
    if (k == doc->members.end() || v == doc->members.end() || k->second.text.empty() ||
        v->second.kind != config::JsonValue::Kind::kString) {
      SendError(res, 400, ErrorCode::INVALID_PARAMS, "Missing key or value");
      return;
    }
    key = k->second.text;
    json_value = v->second.text;
    value = json_value;
  } else if (key.empty()) {
    key = req.get_param_value("key");
  }
  if (key.empty()) {
    SendError(res, 400, ErrorCode::INVALID_PARAMS,
              "Missing key: send JSON {\"key\", \"value\"} or the raw body with ?key=K");
    return;
  }
  Status st = b.Put(key, {reinterpret_cast<const uint8_t*>(value.data()), value.size()});
  if (!st.ok()) return SendFailure(res, st, c);
  res.set_content("{\"status\":\"success\"}\n", kJson);
}

// A PUT's body, read through a content reader: read_content's default path
// would treat a body sent as application/x-www-form-urlencoded (curl's
// --data-binary and urllib's default) as a form and refuse it past 8 KiB
// with 413. Multipart bodies are refused (415) before a byte is read; the
// connection is closed so their unread bytes cannot become a request.
void ReadPutBody(const httplib::Request& req, httplib::Response& res, uint64_t limit,
                 const httplib::ContentReader& reader,
                 const std::function<void(std::string_view)>& put) {
  if (req.is_multipart_form_data()) {
    res.set_header("Connection", "close");
    SendError(res, 415, ErrorCode::INVALID_PARAMS,
              "multipart bodies are not taken: send the value as the raw body");
    return;
  }
  std::string body;
  // Content-Length is only a claim until the reader checks it against limit.
  body.reserve(std::min(req.get_header_value<uint64_t>("Content-Length"), limit));
  const bool whole = reader([&body](const char* data, size_t n) {
    body.append(data, n);
    return true;
  });
  if (!whole) {  // past the limit (413, set by the reader) or cut short
    if (res.status < 400) res.status = 400;
    res.set_header("Connection", "close");
    return;  // the error handler writes the answer
  }
  put(body);
}

void InstallDataRoutes(httplib::Server& srv, RestBackend& b, Counters* c, uint64_t limit) {
  srv.Put("/api/put", [&b, c, limit](const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& reader) {
    ReadPutBody(req, res, limit, reader, [&](std::string_view body) {
      HandlePut(b, c, limit, req, body, res, "");
    });
  });
  srv.Put(R"(/api/put/(.+))", [&b, c, limit](const httplib::Request& req, httplib::Response& res,
                                             const httplib::ContentReader& reader) {
    ReadPutBody(req, res, limit, reader, [&](std::string_view body) {
      HandlePut(b, c, limit, req, body, res, req.matches[1]);
    });
  });
  srv.Get(R"(/api/get/(.+))", [&b, c](const httplib::Request& req, httplib::Response& res) {
    auto v = b.Get(req.matches[1]);
    if (!v.ok()) return SendFailure(res, v.status(), c);
    res.set_content(std::move(v.value()), "application/octet-stream");
  });
  srv.Get(R"(/api/exist/(.+))", [&b, c](const httplib::Request& req, httplib::Response& res) {
    auto e = b.Exists(req.matches[1]);
    if (!e.ok()) return SendFailure(res, e.status(), c);
    res.set_content(std::string("{\"exists\":") + (e.value() ? "true" : "false") + "}\n", kJson);
  });
  srv.Delete(R"(/api/remove/(.+))", [&b, c](const httplib::Request& req, httplib::Response& res) {
    Status st = b.Remove(req.matches[1]);
    if (!st.ok()) return SendFailure(res, st, c);
    res.set_content("{\"status\":\"success\"}\n", kJson);
  });
  srv.Delete("/api/remove_all", [&b, c](const httplib::Request&, httplib::Response& res) {
    auto n = b.RemoveAll();
    if (!n.ok()) return SendFailure(res, n.status(), c);
    res.set_content("{\"status\":\"success removed " + std::to_string(n.value()) + " keys\"}\n",
                    kJson);
  });
}

std::string OwnMetrics(const Counters& c, const BearerGuard& guard) {
  std::string out;
  auto counter = [&out](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(v) + "\n";
  };
  counter("client_http_requests_total", "HTTP requests to the client's API port", c.requests);
  counter("client_http_body_too_large_total", "Requests refused with 413 (max_body_bytes)",
          c.too_large);
  counter("client_http_failures_total", "API requests that failed with 500", c.failed);
  counter("client_http_auth_failures_total", "API requests refused for a missing or wrong token",
          guard.refused());
  return out;
}

void InstallStatusRoutes(httplib::Server& srv, RestBackend& b, const Counters* c,
                         const BearerGuard* guard) {
  srv.Get("/health", [&b](const httplib::Request&, httplib::Response& res) {
    Status st = b.Health();
    if (st.ok()) {
      res.set_content("{\"status\":\"healthy\",\"code\":0}\n", kJson);
      return;
    }
    res.status = 503;
    res.set_content("{\"status\":\"unhealthy\",\"code\":" +
                        std::to_string(static_cast<int>(st.code())) + ",\"error\":\"" +
                        JsonEscape(st.message()) + "\"}\n",
                    kJson);
  });
  srv.Get("/metrics", [&b, c, guard](const httplib::Request&, httplib::Response& res) {
    res.set_content(b.MetricsText() + OwnMetrics(*c, *guard), "text/plain; version=0.0.4");
  });
  srv.Get("/metrics/summary", [&b](const httplib::Request&, httplib::Response& res) {
    res.set_content(b.SummaryText(), "text/plain");
  });
}

// Body limit and auth before any handler reads the body. cpp-httplib
// (0.11) bounds only a body with a Content-Length (payload_max_length: 413
// without reading it, which the error handler explains); a chunked body or
// one read until the peer closes is not bounded at all. So a body comes
// with a Content-Length or not at all: 411 otherwise, before a byte of it
// is read. Every request passes the token check on its own, so bytes left
// unread after a refusal can only become requests that are checked too.
void InstallGuards(httplib::Server& srv, uint64_t limit, Counters* c, BearerGuard* guard) {
  srv.set_payload_max_length(limit);
  srv.set_pre_routing_handler([c, guard](const httplib::Request& req,
                                                httplib::Response& res) {
    c->requests.fetch_add(1);
    const bool carries_body = req.method == "PUT" || req.method == "POST" ||
                              req.method == "PATCH" || req.method == "PRI";
    if (req.has_header("Transfer-Encoding") ||
        (carries_body && !req.has_header("Content-Length"))) {
      SendError(res, 411, ErrorCode::INVALID_PARAMS,
                "send the body with a Content-Length (chunked or unsized bodies cannot be "
                "bounded by max_body_bytes)");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path.starts_with("/api/") &&
        !guard->Admit(req.get_header_value("Authorization"),
                      req.remote_addr + ":" + std::to_string(req.remote_port), req.method,
                      req.path)) {
      res.set_header("WWW-Authenticate", kBearerChallenge);
      SendError(res, 401, ErrorCode::ILLEGAL_CLIENT, kBearerRefusal);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  srv.set_error_handler([c, limit](const httplib::Request&, httplib::Response& res) {
    if (res.status == 413) {
      c->too_large.fetch_add(1);
      SendError(res, 413, ErrorCode::INVALID_PARAMS, TooLargeMessage(limit));
    } else if (res.body.empty()) {
      SendError(res, res.status, ErrorCode::INVALID_PARAMS,
                res.status == 404 ? "no such route" : "request refused");
    }
  });
}

}  // namespace

struct RestRoutes::State {
  RestBackend& backend;
  uint64_t max_body_bytes;
  BearerGuard guard;
  Counters counters;
  State(RestBackend& b, const RestOptions& o)
      : backend(b), max_body_bytes(o.max_body_bytes), guard("client http", o.auth_token) {}
};

RestRoutes::RestRoutes(RestBackend& backend, const RestOptions& options)
    : state_(std::make_unique<State>(backend, options)) {}
RestRoutes::~RestRoutes() = default;

void RestRoutes::Install(httplib::Server& server) {
  InstallGuards(server, state_->max_body_bytes, &state_->counters, &state_->guard);
  InstallDataRoutes(server, state_->backend, &state_->counters, state_->max_body_bytes);
  InstallStatusRoutes(server, state_->backend, &state_->counters, &state_->guard);
}

struct RestServer::Impl {
  RestOptions options;
  RestRoutes routes;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  std::atomic<bool> listen_done{false};
  uint16_t port = 0;
  Impl(RestBackend& b, RestOptions o) : options(std::move(o)), routes(b, options) {}
};

RestServer::RestServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RestServer::~RestServer() { Stop(); }
uint16_t RestServer::port() const { return impl_->port; }
bool RestServer::tls() const { return static_cast<bool>(impl_->options.tls); }

Result<std::unique_ptr<RestServer>> RestServer::Start(RestBackend& backend, RestOptions options) {
  if (options.max_body_bytes == 0 || options.max_body_bytes > kMaxBodyBytesCeiling) {
    return Error(ErrorCode::INVALID_PARAMS, "max_body_bytes must be 1.." +
                                                std::to_string(kMaxBodyBytesCeiling));
  }
  if (options.threads < 1 || options.threads > kMaxRestThreads) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "threads must be 1.." + std::to_string(kMaxRestThreads));
  }
  auto impl = std::make_unique<Impl>(backend, std::move(options));
  const RestOptions& o = impl->options;
  if (o.tls) {
    impl->server = std::make_unique<httplib::SSLServer>([&o](SSL_CTX& ctx) { return o.tls(ctx); });
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  if (!impl->server->is_valid()) {
    return Error(ErrorCode::INVALID_PARAMS, "client HTTP port: TLS setup failed");
  }
  const int threads = o.threads;
  impl->server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl->routes.Install(*impl->server);
  const int port = o.port == 0 ? impl->server->bind_to_any_port(o.host)
                               : (impl->server->bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) {
    return Error(ErrorCode::INTERNAL_ERROR, "cannot listen on " + o.host + ":" +
                                                std::to_string(o.port) + " for the client HTTP port");
  }
  impl->port = static_cast<uint16_t>(port);
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] {
    raw->server->listen_after_bind();
    raw->listen_done = true;
  });
  // httplib's stop() is lost before the accept loop runs (see masterd's
  // admin HTTP): wait for it to run or return.
  while (!raw->server->is_running() && !raw->listen_done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!raw->server->is_running()) {
    raw->thread.join();
    return Error(ErrorCode::INTERNAL_ERROR, "the client HTTP server did not start");
  }
  MC_LOG(INFO) << "client HTTP API on " << o.host << ":" << port << (o.tls ? " (TLS)" : "")
               << (o.auth_token.empty() ? " (no auth)" : " (bearer token on /api/)");
  return std::unique_ptr<RestServer>(new RestServer(std::move(impl)));
}

void RestServer::Stop() {
  if (!impl_) return;
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace mc::rest
