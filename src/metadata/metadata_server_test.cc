#include "metadata/metadata_server.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include "metadata/kv_store.h"

using mc::metadata::MetadataServer;

namespace {

std::unique_ptr<MetadataServer> Started(mc::MetadataServerConfig config = {}) {
  auto s = MetadataServer::Open(config);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  mc::Status st = (*s)->Start("127.0.0.1", 0);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  REQUIRE((*s)->port() != 0);
  return std::move(s).value();
}

}  // namespace

TEST_CASE("the server answers the reference API over HTTP") {
  auto server = Started();
  httplib::Client c("127.0.0.1", server->port());
  auto put = c.Put("/metadata?key=mooncake/ram/a", "seg", "application/json");
  REQUIRE(put);
  CHECK(put->status == 200);
  auto get = c.Get("/metadata?key=mooncake/ram/a");
  REQUIRE(get);
  CHECK(get->status == 200);
  CHECK(get->body == "seg");
  CHECK(c.Get("/metadata?key=absent")->status == 404);
  CHECK(c.Get("/metadata")->status == 400);
  CHECK(c.Post("/metadata?key=a", "x", "text/plain")->status == 405);
  CHECK(c.Delete("/metadata?key=mooncake/ram/a")->status == 200);
  CHECK(c.Delete("/metadata?key=mooncake/ram/a")->status == 404);
  CHECK(c.Get("/health")->status == 200);
  CHECK(c.Get("/nowhere")->status == 404);
}

TEST_CASE("a value past the limit gets 413 naming the limit") {
  mc::MetadataServerConfig config;
  config.max_value_bytes = 10;
  auto server = Started(config);
  httplib::Client c("127.0.0.1", server->port());
  auto res = c.Put("/metadata?key=k", std::string(11, 'x'), "application/octet-stream");
  REQUIRE(res);
  CHECK(res->status == 413);
  CHECK(res->body.find("max_value_size = 10 bytes") != std::string::npos);
  // The connection is still usable afterwards.
  CHECK(c.Put("/metadata?key=k", std::string(10, 'x'), "application/octet-stream")->status == 200);
}

TEST_CASE("bad limits are refused when the server is opened") {
  mc::MetadataServerConfig config;
  config.threads = 0;
  CHECK_FALSE(MetadataServer::Open(config).ok());
  config = {};
  config.max_key_bytes = 100000;
  auto r = MetadataServer::Open(config);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("max_key_size") != std::string::npos);
}

TEST_CASE("a port in use is reported and stop is idempotent") {
  auto first = Started();
  auto second = MetadataServer::Open({});
  REQUIRE(second.ok());
  mc::Status st = (*second)->Start("127.0.0.1", first->port());
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find(std::to_string(first->port())) != std::string::npos);
  first->Stop();
  first->Stop();
  CHECK(first->port() == 0);
}

TEST_CASE("with a token, writes need it and reads, health and metrics stay open") {
  mc::MetadataServerConfig config;
  config.auth_token = "s3cret";
  auto server = Started(config);
  httplib::Client c("127.0.0.1", server->port());
  const char* key = "/metadata?key=mooncake/ram/seg0";
  auto anon = c.Put(key, "evil", "application/json");
  REQUIRE(anon);
  CHECK(anon->status == 401);
  CHECK(anon->get_header_value("WWW-Authenticate").find("Bearer") == 0);
  httplib::Headers wrong = {{"Authorization", "Bearer guess"}};
  auto bad = c.Put(key, wrong, "evil", "application/json");
  REQUIRE(bad);
  CHECK(bad->status == 401);
  CHECK(bad->body.find("guess") == std::string::npos);  // never echoed
  CHECK(c.Get(key)->status == 404);                     // nothing was written
  httplib::Headers right = {{"Authorization", "Bearer s3cret"}};
  CHECK(c.Put(key, right, "seg", "application/json")->status == 200);
  CHECK(c.Get(key)->body == "seg");                     // GET is open
  CHECK(c.Delete(key)->status == 401);
  CHECK(c.Delete(key, wrong)->status == 401);
  CHECK(c.Get(key)->body == "seg");
  CHECK(c.Get("/health")->status == 200);
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
  CHECK(metrics->body.find("metadata_auth_failures_total 4\n") != std::string::npos);
  CHECK(metrics->body.find("metadata_keys 1\n") != std::string::npos);
  CHECK(c.Delete(key, right)->status == 200);
}

TEST_CASE("without a token, writes stay open as in the reference") {
  auto server = Started();
  httplib::Client c("127.0.0.1", server->port());
  CHECK(c.Put("/metadata?key=k", "v", "text/plain")->status == 200);
  CHECK(c.Delete("/metadata?key=k")->status == 200);
  CHECK(c.Get("/metrics")->body.find("metadata_auth_failures_total 0\n") != std::string::npos);
}
