#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "engine/engine_config.h"
#include "engine/engine_impl.h"
#include "mooncake/client.h"

namespace {

mc::config::GetEnvFn Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST_CASE("setup keys use the reference's names and sizes may be strings") {
  auto c = mc::engine::ResolveSetupConfig({{"local_hostname", "10.0.0.1"},
                                           {"master_server_addr", "10.0.0.2:50051"},
                                           {"global_segment_size", "4gb"},
                                           {"local_buffer_size", "512MB"},
                                           {"rdma_devices", "mlx5_0"},
                                           {"tenant_id", "ignored"}},
                                          Env({}));
  REQUIRE(c.ok());
  CHECK(c->cluster.local_hostname == "10.0.0.1");
  CHECK(c->cluster.master == "10.0.0.2:50051");
  CHECK(c->store.global_segment_size_bytes == (4ull << 30));
  CHECK(c->client.local_buffer_size_bytes == (512ull << 20));
  CHECK(c->cluster.device_name == "mlx5_0");
}

TEST_CASE("setup keys override the environment, which fills what is not given") {
  auto c = mc::engine::ResolveSetupConfig(
      {{"global_segment_size", "0"}},
      Env({{"MOONCAKE_MASTER", "h:1"}, {"MOONCAKE_GLOBAL_SEGMENT_SIZE", "1gb"}}));
  REQUIRE(c.ok());
  CHECK(c->cluster.master == "h:1");
  CHECK(c->store.global_segment_size_bytes == 0);
}

TEST_CASE("tls_* setup keys and MOONCAKE_TLS_* fill the [tls] settings") {
  auto c = mc::engine::ResolveSetupConfig(
      {{"tls_cert", "/c.pem"}, {"tls_key", "/k.pem"}, {"tls_verify_peer", "true"}},
      Env({{"MOONCAKE_TLS_CA", "/ca.pem"}, {"MOONCAKE_TLS_CERT", "/env.pem"}}));
  REQUIRE(c.ok());
  CHECK(c->tls.cert == "/c.pem");  // the dict wins over the environment
  CHECK(c->tls.key == "/k.pem");
  CHECK(c->tls.ca == "/ca.pem");
  CHECK(c->tls.verify_peer);
  auto bad = mc::engine::ResolveSetupConfig({{"tls_min_version", "1.1"}}, Env({}));
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("tls_min_version") != std::string::npos);
}

TEST_CASE("a bad size names the key") {
  auto c = mc::engine::ResolveSetupConfig({{"global_segment_size", "4xb"}}, Env({}));
  REQUIRE(!c.ok());
  CHECK(c.status().message().find("global_segment_size") != std::string::npos);
}

TEST_CASE("calls before setup return INVALID_PARAMS and never crash") {
  mooncake::Store s;
  uint8_t buf[16] = {};
  std::vector<uint8_t> out;
  CHECK(s.Put("k", std::span<const uint8_t>(buf, 16)) == mooncake::kInvalidParams);
  CHECK(s.Get("k", &out) == mooncake::kInvalidParams);
  CHECK(s.GetInto("k", buf, sizeof buf) == mooncake::kInvalidParams);
  CHECK(s.RegisterBuffer(buf, sizeof buf) == mooncake::kInvalidParams);
  CHECK(s.BatchIsExist({"a", "b"}) == std::vector<int>{-600, -600});
  CHECK(s.HealthCheck() == 1);
  CHECK(s.GetHostname().empty());
  CHECK(s.Close() == 0);
}

TEST_CASE("a put asking for NVMe-oF replicas is not supported") {
  mooncake::ReplicateConfig c;
  c.nof_replica_num = 1;
  CHECK(mooncake::internal::CheckConfig(c, 1).code() == mc::ErrorCode::NOT_SUPPORTED);
  c.nof_replica_num = 0;
  c.preferred_nof_segments = {"nof0"};
  CHECK(mooncake::internal::CheckConfig(c, 1).code() == mc::ErrorCode::NOT_SUPPORTED);
}

TEST_CASE("a put asking for DFS replicas is not supported") {
  mooncake::ReplicateConfig c;
  c.dfs_replica_num = 1;
  CHECK(mooncake::internal::CheckConfig(c, 1).code() == mc::ErrorCode::NOT_SUPPORTED);
  c.dfs_replica_num = 0;
  CHECK(mooncake::internal::CheckConfig(c, 1).ok());
}

TEST_CASE("a soft-pin ttl needs the pin enabled, by either spelling") {
  using mooncake::SoftPinAction;
  mooncake::ReplicateConfig c;
  c.soft_pin_ttl_ms = 1000;
  CHECK(mooncake::internal::CheckConfig(c, 1).code() == mc::ErrorCode::INVALID_PARAMS);
  c.soft_pin_action = SoftPinAction::kEnable;
  REQUIRE(mooncake::internal::CheckConfig(c, 1).ok());
  auto o = mooncake::internal::ToOptions(c);
  CHECK(o.soft_pin);
  CHECK(o.placement.soft_pin_ttl_ms == 1000);
  c.soft_pin_action = SoftPinAction::kPreserve;
  c.with_soft_pin = true;
  CHECK(mooncake::internal::CheckConfig(c, 1).ok());
  c.soft_pin_action = SoftPinAction::kDisable;
  CHECK_FALSE(mooncake::internal::CheckConfig(c, 1).ok());
  c = {};
  c.soft_pin_action = SoftPinAction::kDisable;
  CHECK(mooncake::internal::CheckConfig(c, 1).ok());
  CHECK_FALSE(mooncake::internal::ToOptions(c).soft_pin);
}

TEST_CASE("group_ids give one group per key of the call") {
  mooncake::ReplicateConfig c;
  c.group_ids = std::vector<std::string>{"g", ""};
  CHECK(mooncake::internal::CheckConfig(c, 2).ok());
  CHECK(mooncake::internal::CheckConfig(c, 3).code() == mc::ErrorCode::INVALID_PARAMS);
}

TEST_CASE("setup's enable_ssd_offload and ssd_offload_path give the store its disk tier") {
  auto on = mc::engine::ResolveSetupConfig(
      {{"enable_ssd_offload", "true"}, {"ssd_offload_path", "/tmp/x"}, {"ssd_size", "1gb"}},
      Env({}));
  REQUIRE(on.ok());
  CHECK(on->store.ssd_offload_path == "/tmp/x");
  CHECK(on->store.ssd_size_bytes == 1ull << 30);
  auto off = mc::engine::ResolveSetupConfig(
      {{"enable_ssd_offload", "false"}, {"ssd_offload_path", "/tmp/x"}}, Env({}));
  REQUIRE(off.ok());
  CHECK(off->store.ssd_offload_path.empty());
  auto from_env = mc::engine::ResolveSetupConfig(
      {{"enable_ssd_offload", "true"}}, Env({{"MOONCAKE_SSD_OFFLOAD_PATH", "/tmp/y"}}));
  REQUIRE(from_env.ok());
  CHECK(from_env->store.ssd_offload_path == "/tmp/y");
  // The reference's variable for its client's disk path, ours first.
  auto from_ref = mc::engine::ResolveSetupConfig(
      {{"enable_ssd_offload", "true"}}, Env({{"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "/tmp/r"}}));
  REQUIRE(from_ref.ok());
  CHECK(from_ref->store.ssd_offload_path == "/tmp/r");
  // setup() passes ssd_offload_path="" when the caller gives none: the
  // environment's path still counts.
  auto empty_given = mc::engine::ResolveSetupConfig(
      {{"enable_ssd_offload", "true"}, {"ssd_offload_path", ""}},
      Env({{"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "/tmp/r"}}));
  REQUIRE(empty_given.ok());
  CHECK(empty_given->store.ssd_offload_path == "/tmp/r");
  auto both = mc::engine::ResolveSetupConfig(
      {{"enable_ssd_offload", "true"}},
      Env({{"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "/tmp/r"}, {"MOONCAKE_SSD_OFFLOAD_PATH", "/tmp/y"}}));
  REQUIRE(both.ok());
  CHECK(both->store.ssd_offload_path == "/tmp/y");
  CHECK(mc::engine::ResolveSetupConfig({{"enable_ssd_offload", "true"}}, Env({})).code() ==
        mc::ErrorCode::INVALID_PARAMS);
}

TEST_CASE("a put of a key that exists counts as stored") {
  using mc::ErrorCode;
  CHECK(mooncake::internal::PutCode(mc::Error(ErrorCode::OBJECT_ALREADY_EXISTS, "k")) == 0);
  CHECK(mooncake::internal::PutCode(mc::Error(ErrorCode::NO_AVAILABLE_HANDLE, "full")) == -200);
  CHECK(mooncake::internal::PutCode(mc::Status::Ok()) == 0);
}

TEST_CASE("setup keys of features not built are accepted and set nothing") {
  auto c = mc::engine::ResolveSetupConfig({{"tenant_id", "t1"},
                                           {"enable_client_http_server", "true"},
                                           {"client_http_port", "9400"},
                                           {"engine", "TransferEngine"}},
                                          Env({}));
  REQUIRE(c.ok());
}
