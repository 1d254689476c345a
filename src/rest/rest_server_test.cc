#include "rest/rest_server.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <map>
#include <mutex>

namespace mc::rest {
namespace {

// An in-memory backend: a map, and a switch that makes it unhealthy.
class MapBackend : public RestBackend {
 public:
  Status Put(const std::string& key, std::span<const uint8_t> value) override {
    std::lock_guard lock(mu_);
    map_[key] = std::string(value.begin(), value.end());
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& key) override {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Error(ErrorCode::OBJECT_NOT_FOUND, key);
    return it->second;
  }
  Result<bool> Exists(const std::string& key) override {
    std::lock_guard lock(mu_);
    return map_.count(key) > 0;
  }
  Status Remove(const std::string& key) override {
    std::lock_guard lock(mu_);
    if (map_.erase(key) == 0) return Error(ErrorCode::OBJECT_NOT_FOUND, key);
    return Status::Ok();
  }
  Result<int64_t> RemoveAll() override {
    std::lock_guard lock(mu_);
    const auto n = static_cast<int64_t>(map_.size());
    map_.clear();
    return n;
  }
  Status Health() override {
    return healthy ? Status::Ok() : Error(ErrorCode::RPC_FAIL, "master unreachable");
  }
  std::string MetricsText() override { return "backend_objects " + std::to_string(map_.size()) + "\n"; }
  std::string SummaryText() override { return "objects: " + std::to_string(map_.size()) + "\n"; }

  bool healthy = true;
  std::mutex mu_;
  std::map<std::string, std::string> map_;
};

std::unique_ptr<RestServer> Serve(MapBackend& b, RestOptions o = {}) {
  o.host = "127.0.0.1";
  auto s = RestServer::Start(b, o);
  REQUIRE(s.ok());
  return std::move(s.value());
}

constexpr uint64_t kSmallLimitBytes = 1024;

RestOptions WithBodyLimit(uint64_t bytes) {
  RestOptions o;
  o.max_body_bytes = bytes;
  return o;
}

}  // namespace

TEST_CASE("a value put as JSON or raw bytes comes back byte for byte") {
  MapBackend b;
  auto s = Serve(b);
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Put("/api/put", R"({"key":"k1","value":"hello"})", "application/json");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "{\"status\":\"success\"}\n");
  const std::string binary("\0\xff\x01zero\0end", 11);
  r = c.Put("/api/put?key=bin%2Fkey", binary, "application/octet-stream");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(b.map_.at("bin/key") == binary);
  r = c.Get("/api/get/bin%2Fkey");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == binary);
  CHECK(r->get_header_value("Content-Type") == "application/octet-stream");
  r = c.Put("/api/put/raw", binary, "application/octet-stream");
  REQUIRE(r);
  CHECK(b.map_.at("raw") == binary);
  CHECK(c.Get("/api/get/k1")->body == "hello");
}

TEST_CASE("exist, remove and remove_all answer as the reference's service does") {
  MapBackend b;
  auto s = Serve(b);
  httplib::Client c("127.0.0.1", s->port());
  REQUIRE(c.Put("/api/put?key=a", "1", "text/plain")->status == 200);
  REQUIRE(c.Put("/api/put?key=b", "2", "text/plain")->status == 200);
  CHECK(c.Get("/api/exist/a")->body == "{\"exists\":true}\n");
  CHECK(c.Get("/api/exist/zz")->body == "{\"exists\":false}\n");
  CHECK(c.Delete("/api/remove/a")->status == 200);
  auto r = c.Delete("/api/remove/a");
  CHECK(r->status == 404);
  CHECK(r->body.find("-704") != std::string::npos);
  CHECK(c.Get("/api/get/a")->status == 404);
  CHECK(c.Delete("/api/remove_all")->body == "{\"status\":\"success removed 1 keys\"}\n");
}

TEST_CASE("a put without a key or value is a 400 naming what is missing") {
  MapBackend b;
  auto s = Serve(b);
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Put("/api/put", R"({"key":"k"})", "application/json");
  CHECK(r->status == 400);
  CHECK(r->body.find("Missing key or value") != std::string::npos);
  r = c.Put("/api/put", "raw", "application/octet-stream");
  CHECK(r->status == 400);
  r = c.Put("/api/put", "{not json", "application/json");
  CHECK(r->status == 400);
  CHECK(b.map_.empty());
}

TEST_CASE("a body past the limit is a 413 that names the limit") {
  MapBackend b;
  auto s = Serve(b, WithBodyLimit(kSmallLimitBytes));
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Put("/api/put?key=big", std::string(kSmallLimitBytes + 1, 'x'), "application/octet-stream");
  REQUIRE(r);
  CHECK(r->status == 413);
  CHECK(r->body.find("1024 bytes (max_body_bytes)") != std::string::npos);
  CHECK(c.Put("/api/put?key=ok", std::string(kSmallLimitBytes, 'x'), "application/octet-stream")->status ==
        200);
  CHECK(b.map_.count("big") == 0);
  CHECK(c.Get("/metrics")->body.find("client_http_body_too_large_total 1") != std::string::npos);
}

TEST_CASE("a body without a content length is refused with 411 before it is read") {
  MapBackend b;
  auto s = Serve(b, WithBodyLimit(kSmallLimitBytes));
  httplib::Client c("127.0.0.1", s->port());
  // A chunked body of any size: cpp-httplib would read it without bound.
  auto r = c.Put("/api/put?key=chunked",
                 [](size_t offset, httplib::DataSink& sink) {
                   const std::string piece(64 << 10, 'c');
                   sink.write(piece.data(), piece.size());
                   if (offset + piece.size() >= (1u << 20)) sink.done();
                   return true;
                 },
                 "application/octet-stream");
  // The client may see the 411 or a reset, depending on when it is answered.
  if (r) CHECK(r->status == 411);
  CHECK(b.map_.count("chunked") == 0);
  r = c.Put("/api/put?key=ok", "fine", "text/plain");
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("with a token the api routes need it and health and metrics stay open") {
  MapBackend b;
  RestOptions o;
  o.auth_token = "s3cret";
  auto s = Serve(b, o);
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Put("/api/put?key=k", "v", "text/plain");
  CHECK(r->status == 401);
  CHECK(r->get_header_value("WWW-Authenticate").find("Bearer") != std::string::npos);
  CHECK(c.Get("/api/get/k", {{"Authorization", "Bearer wrong"}})->status == 401);
  CHECK(b.map_.empty());
  httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  CHECK(c.Put("/api/put?key=k", auth, "v", "text/plain")->status == 200);
  CHECK(c.Get("/api/get/k", auth)->body == "v");
  CHECK(c.Get("/health")->status == 200);
  CHECK(c.Get("/metrics")->body.find("client_http_auth_failures_total 2") != std::string::npos);
}

TEST_CASE("health is 503 with the reason while the backend cannot serve") {
  MapBackend b;
  auto s = Serve(b);
  httplib::Client c("127.0.0.1", s->port());
  CHECK(c.Get("/health")->body == "{\"status\":\"healthy\",\"code\":0}\n");
  b.healthy = false;
  auto r = c.Get("/health");
  CHECK(r->status == 503);
  CHECK(r->body.find("master unreachable") != std::string::npos);
  CHECK(c.Get("/metrics/summary")->body == "objects: 0\n");
  CHECK(c.Get("/metrics")->body.find("backend_objects 0\n") == 0);
}

TEST_CASE("limits out of range are refused at start") {
  MapBackend b;
  RestOptions o;
  o.max_body_bytes = kMaxBodyBytesCeiling + 1;
  CHECK(RestServer::Start(b, o).code() == ErrorCode::INVALID_PARAMS);
  o = {};
  o.threads = 0;
  CHECK(RestServer::Start(b, o).code() == ErrorCode::INVALID_PARAMS);
}

}  // namespace mc::rest
