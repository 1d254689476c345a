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
