#include "config/command_config.h"

#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

using namespace mc::config;
using mc::Config;

namespace {

// Parses `args` as `mooncake sub ARGS` and resolves the config.
struct Parsed {
  CLI::App app{"test"};
  CLI::App* sub = app.add_subcommand("sub");
  CommandConfig cc;
  explicit Parsed(unsigned sections, bool server = true) : cc(*sub, sections, server) {}
  mc::Result<Config> Run(std::vector<std::string> args) {
    args.insert(args.begin(), "sub");
    std::reverse(args.begin(), args.end());
    app.parse(args);
    return cc.Resolve();
  }
};

// Environment variables for one test, removed afterwards.
struct ScopedEnv {
  std::vector<std::string> names;
  void Set(const char* name, const char* value) {
    setenv(name, value, 1);
    names.push_back(name);
  }
  ~ScopedEnv() {
    for (const auto& n : names) unsetenv(n.c_str());
  }
};

}  // namespace

TEST_CASE("every command's flag set has each name once") {
  // CLI11 throws on a repeated name and CommandConfig asserts; each role's
  // combination must construct.
  for (unsigned sections : {kMaster | kCluster | kLog, kStore | kCluster | kClient | kLog,
                            kMetadataServer | kLog, kCluster | kClient | kLog}) {
    CLI::App app;
    CHECK_NOTHROW(CommandConfig(*app.add_subcommand("x"), sections, true));
  }
}

TEST_CASE("flags, their underscore spellings and aliases set the tree") {
  Parsed p(kMaster | kCluster | kLog);
  auto c = p.Run({"--rpc_port", "7000", "--default-kv-lease-ttl", "2500", "--client_ttl", "3",
                  "--eviction-high-watermark-ratio", "0.8", "--eviction_ratio", "0.1",
                  "--metrics-port", "9100", "--enable-http-metadata-server",
                  "--http-metadata-server-port", "8181", "--http_metadata_server_host", "::1",
                  "--rpc-address", "127.0.0.1", "--master", "h:1", "--metadata-server", "u",
                  "--auth-token", "t", "--no-shm", "--data-dir", "none", "--log-level", "warn"});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->master.rpc_port == 7000);
  CHECK(c->master.default_kv_lease_ttl_us == 2500000);
  CHECK(c->master.client_ttl_us == 3000000);
  CHECK(c->master.eviction_high_watermark_ratio == doctest::Approx(0.8));
  CHECK(c->master.eviction_ratio == doctest::Approx(0.1));
  CHECK(c->master.metrics_port == 9100);
  CHECK(c->master.enable_http_metadata_server);
  CHECK(c->master.http_metadata_server_port == 8181);
  CHECK(c->master.http_metadata_server_host == "::1");
  CHECK(c->master.rpc_address == "127.0.0.1");
  CHECK(c->cluster.master == "h:1");
  CHECK(c->cluster.metadata_server == "u");
  CHECK(c->cluster.auth_token == "t");
  CHECK_FALSE(c->cluster.shm);
  CHECK(c->master.data_dir == "none");
  CHECK(c->log.level == "warn");
  CHECK_FALSE(p.cc.print_config_requested());
}

TEST_CASE("a boolean flag takes =true and =false, and the last spelling wins") {
  Parsed p(kMaster | kCluster | kLog);
  auto c = p.Run({"--enable-http-metadata-server=false", "--port", "1", "--rpc-port", "2",
                  "--no-shm", "--shm", "--print-config"});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK_FALSE(c->master.enable_http_metadata_server);
  CHECK(c->master.rpc_port == 2);
  CHECK(c->cluster.shm);
  CHECK(p.cc.print_config_requested());
}

TEST_CASE("store and metadata-server flags") {
  Parsed store(kStore | kCluster | kClient | kLog);
  auto c = store.Run({"--segment", "2gb", "--port", "0", "--local-buffer-size", "1mb"});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->store.global_segment_size_bytes == 2ull << 30);
  CHECK(c->client.local_buffer_size_bytes == 1ull << 20);

  Parsed meta(kMetadataServer | kLog);
  c = meta.Run({"--host", "127.0.0.1", "--port", "8081", "--db", "/tmp/m.db"});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->metadata_server.host == "127.0.0.1");
  CHECK(c->metadata_server.port == 8081);
  CHECK(c->metadata_server.db == "/tmp/m.db");
}

TEST_CASE("flags beat the environment, which beats the defaults") {
  ScopedEnv env;
  env.Set("MOONCAKE_GLOBAL_SEGMENT_SIZE", "50gb");
  env.Set("MOONCAKE_MASTER", "env:1");
  Parsed p(kStore | kCluster | kClient | kLog);
  auto c = p.Run({"--segment", "1gb"});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->store.global_segment_size_bytes == 1ull << 30);
  CHECK(c->cluster.master == "env:1");
}

TEST_CASE("the environment applies even to sections a command does not show") {
  ScopedEnv env;
  env.Set("MOONCAKE_GLOBAL_SEGMENT_SIZE", "2gb");
  Parsed p(kMetadataServer | kLog);
  auto c = p.Run({});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->store.global_segment_size_bytes == 2ull << 30);
}

TEST_CASE("a bad flag value names the spelling used") {
  Parsed p(kStore | kCluster | kClient | kLog);
  auto c = p.Run({"--segment", "12xb"});
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().rfind("--segment: '12xb': unknown size suffix", 0) == 0);
  Parsed q(kMaster | kCluster | kLog);
  c = q.Run({"--shm=maybe"});
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().rfind("--shm: 'maybe'", 0) == 0);
}

TEST_CASE("RunWithConfig returns 2 on a config error and the body's code otherwise") {
  Parsed bad(kMaster | kCluster | kLog);
  REQUIRE(!bad.Run({"--eviction-ratio", "1.5"}).ok());
  bool ran = false;
  CHECK(RunWithConfig("master", bad.cc, kMaster, [&](const Config&) {
          ran = true;
          return 0;
        }) == 2);
  CHECK_FALSE(ran);
  Parsed good(kMaster | kCluster | kLog);
  REQUIRE(good.Run({"--rpc-port", "5"}).ok());
  CHECK(RunWithConfig("master", good.cc, kMaster, [&](const Config& c) {
          return c.master.rpc_port == 5 ? 7 : 1;
        }) == 7);
}
