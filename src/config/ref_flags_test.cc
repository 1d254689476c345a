#include "config/ref_flags.h"

#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "config/command_config.h"
#include "config/registry.h"

using namespace mc::config;
using mc::Config;

namespace {

constexpr unsigned kMasterSections = kMaster | kHa | kCluster | kLog | kTls;

// `mooncake master ARGS`, parsed and resolved as the master command does.
struct Master {
  CLI::App app{"test"};
  CLI::App* sub = app.add_subcommand("master");
  CommandConfig cc{*sub, kMasterSections, true, RefMasterFlags()};
  mc::Result<Config> Run(std::vector<std::string> args) {
    NormalizeGflagsArgs(args);
    args.insert(args.begin(), "master");
    std::reverse(args.begin(), args.end());
    app.parse(args);
    return cc.Resolve();
  }
  bool Noted(const std::string& part) const {
    return std::any_of(cc.notes().begin(), cc.notes().end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
  }
};

// Every DEFINE_* flag of the reference's mooncake-store/src/master.cpp, in
// release 0.3.12.post1 and in its newest code (3b5a594, 2026-08-22), and the
// glog flags its users pass.
const char* const kReferenceFlags[] = {
    "allocation_strategy", "allow_evict_soft_pinned_objects", "batch_oplog_retry_timeout_sec",
    "client_ttl", "cluster_id", "config_path", "cxl_path", "cxl_size", "default_kv_lease_ttl",
    "default_kv_soft_pin_ttl", "dynamic_replication_admission_qps_threshold",
    "dynamic_replication_heat_window_seconds", "dynamic_replication_max_memory_replicas",
    "dynamic_replication_mode", "enable_cxl", "enable_disk_eviction", "enable_ha",
    "enable_http_metadata_server", "enable_kv_events", "enable_metadata_cleanup_on_timeout",
    "enable_metric_reporting", "enable_multi_tenants", "enable_offload", "enable_oplog",
    "enable_snapshot", "enable_snapshot_restore", "etcd_endpoints", "eviction_high_watermark_ratio",
    "eviction_ratio", "global_file_segment_size", "ha_backend_connstring", "ha_backend_type",
    "http_metadata_server_host", "http_metadata_server_port", "kv_events_additional_salt",
    "kv_events_backend_id", "kv_events_bind_endpoint", "kv_events_block_size",
    "kv_events_dp_rank", "kv_events_emit_legacy_compat", "kv_events_emit_object_key",
    "kv_events_lora_name", "kv_events_model_name", "kv_events_queue_capacity",
    "kv_events_tenant_id", "max_kv_soft_pin_ttl", "max_retry_attempts", "max_threads",
    "max_total_finished_tasks", "max_total_pending_tasks", "max_total_processing_tasks",
    "memory_allocator", "metrics_host", "metrics_port", "nof_eviction_high_watermark_ratio",
    "nof_eviction_ratio", "nof_heartbeat_failures_threshold", "nof_heartbeat_interval_sec",
    "nof_heartbeat_probe_timeout_ms", "offload_cap_ratio", "offload_force_evict",
    "offload_on_evict", "offloading_queue_limit", "oplog_batch_max_entries",
    "oplog_poll_interval_ms", "pending_task_timeout_sec", "pod_name", "pod_namespace", "port",
    "processing_task_timeout_sec", "promotion_admission_threshold", "promotion_max_per_heartbeat",
    "promotion_on_hit", "promotion_queue_limit", "put_start_discard_timeout_sec",
    "put_start_release_timeout_sec", "quota_bytes", "root_fs_dir", "rpc_address",
    "rpc_conn_timeout_seconds", "rpc_enable_tcp_no_delay", "rpc_interface", "rpc_port",
    "rpc_thread_num", "snapshot_backup_dir", "snapshot_catalog_backend_connstring",
    "snapshot_catalog_backend_type", "snapshot_catalog_store_connstring",
    "snapshot_catalog_store_type", "snapshot_child_timeout_seconds", "snapshot_interval_seconds",
    "snapshot_object_store_type", "snapshot_payload_backend_type", "snapshot_payload_store_type",
    "snapshot_retention_count", "tenant_quota_connector_type", "tenant_quota_connector_uri",
    "v", "minloglevel", "logtostderr", "alsologtostderr", "log_dir",
};

std::string TempFile(const std::string& text) {
  char path[] = "/tmp/mc-ref-master-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("every flag of the reference master is a flag of ours") {
  Master m;
  for (const char* name : kReferenceFlags) {
    INFO(name);
    bool bound = false;
    for (const CLI::Option* opt : m.sub->get_options()) {
      bound = bound || opt->check_lname(name);
    }
    CHECK(bound);
  }
}

TEST_CASE("gflags spellings become ours") {
  std::vector<std::string> args = {"-port=50051", "-v=1", "-v", "2", "-h", "-1",
                                   "--noenable_http_metadata_server", "--no-shm",
                                   "--nosuch_flag", "--noenable_offload=x", "--", "-port=1"};
  NormalizeGflagsArgs(args);
  CHECK(args == std::vector<std::string>{"--port=50051", "--v=1", "--v", "2", "-h", "-1",
                                         "--enable_http_metadata_server=false", "--no-shm",
                                         "--nosuch_flag", "--noenable_offload=x", "--",
                                         "-port=1"});
}

TEST_CASE("a reference command line runs, and what has no effect here is noted") {
  Master m;
  auto c = m.Run({"-port=50061", "-v=1", "--rpc_thread_num=8", "--max_threads", "4",
                  "--enable_kv_events=false", "--memory_allocator=cachelib",
                  "--enable_snapshot", "--noenable_cxl", "--metrics_host", "127.0.0.2",
                  "--ha_backend_type", "etcd", "--ha_backend_connstring", "http://h1:2379",
                  "--root_fs_dir", ""});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->master.rpc_port == 50061);
  CHECK(c->log.level == "debug");
  CHECK(c->master.metrics_host == "127.0.0.2");
  CHECK(c->ha.etcd == "http://h1:2379");
  CHECK(m.Noted("--rpc_thread_num=8: accepted for compatibility"));
  CHECK(m.Noted("--max_threads=4: accepted"));
  CHECK(m.Noted("--memory_allocator=cachelib: accepted"));
  CHECK(m.Noted("--enable_snapshot=true: accepted for compatibility with the reference's "
                "mooncake_master; no effect here: the master journals every change"));
  CHECK_FALSE(m.Noted("enable_kv_events"));  // off, as here: nothing to say
}

TEST_CASE("a feature not built here is refused when turned on, naming the flag") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"--enable_kv_events=true"}, "--enable_kv_events=true: KV cache events"},
      {{"--enable_cxl"}, "--enable_cxl=true: CXL memory segments are not supported"},
      {{"--enable_multi_tenants=1"}, "--enable_multi_tenants=1: multi-tenant"},
      {{"--root_fs_dir", "/mnt/3fs"}, "--root_fs_dir=/mnt/3fs: the shared-file (3FS/NFS)"},
      {{"--memory_allocator=slab"}, "--memory_allocator=slab: expected one of offset,cachelib"},
      {{"--ha_backend_type=redis"}, "--ha_backend_type=redis: only etcd"},
      {{"--dynamic_replication_mode=enforce"}, "--dynamic_replication_mode=enforce: dynamic"},
      {{"--allocation_strategy=cxl"}, "--allocation_strategy=cxl: expected one of random,"},
      {{"--rpc_thread_num=many"}, "--rpc_thread_num=many: not a whole number"},
      {{"--offloading_queue_limit=-5"}, "--offloading_queue_limit=-5: not a whole number of zero"},
      {{"--offload_cap_ratio=half"}, "--offload_cap_ratio=half: not a number"},
      {{"--minloglevel=7"}, "--minloglevel=7: expected 0 (INFO) to 3 (FATAL)"},
      {{"--rpc_interface", "nosuch0"}, "--rpc_interface=nosuch0: no such network interface"},
  };
  for (const Case& k : cases) {
    Master m;
    auto c = m.Run(k.args);
    INFO(k.args[0]);
    REQUIRE_FALSE(c.ok());
    CHECK_MESSAGE(c.status().message().rfind(k.message, 0) == 0, c.status().message());
  }
}

TEST_CASE("rpc_interface resolves to the interface's IPv4 address; minloglevel sets the level") {
  Master m;
  auto c = m.Run({"--rpc_interface", "lo", "--minloglevel=2"});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->master.rpc_address == "127.0.0.1");
  CHECK(c->log.level == "error");
  CHECK(m.Noted("--rpc_interface=lo: RPC address 127.0.0.1"));
}

TEST_CASE("--config_path reads the reference's master.json; flags override it") {
  // The reference's mooncake-store/conf/master.json, as it ships.
  const std::string shipped = R"({
  "enable_metric_reporting": true, "metrics_port": 9003, "rpc_port": 50051,
  "rpc_thread_num": 16, "rpc_address": "0.0.0.0", "rpc_interface": "",
  "rpc_conn_timeout_seconds": 0, "rpc_enable_tcp_no_delay": true,
  "default_kv_lease_ttl": 10000, "default_kv_soft_pin_ttl": 1800000,
  "max_kv_soft_pin_ttl": 86400000, "allow_evict_soft_pinned_objects": true,
  "eviction_ratio": 0.1, "eviction_high_watermark_ratio": 1.0,
  "dynamic_replication_mode": "off", "dynamic_replication_heat_window_seconds": 10,
  "dynamic_replication_admission_qps_threshold": 0.8,
  "dynamic_replication_max_memory_replicas": 2, "enable_ha": false, "enable_oplog": false,
  "etcd_endpoints": "http://localhost:2379", "root_fs_dir": "", "cluster_id": "mooncake_cluster",
  "memory_allocator": "offset", "client_live_ttl_sec": 60, "enable_http_metadata_server": false,
  "http_metadata_server_host": "0.0.0.0", "http_metadata_server_port": 8080,
  "enable_kv_events": false, "kv_events_bind_endpoint": "tcp://0.0.0.0:5557",
  "kv_events_model_name": "", "kv_events_backend_id": "", "kv_events_tenant_id": "default",
  "kv_events_block_size": 0, "kv_events_dp_rank": 0, "kv_events_emit_object_key": true
})";
  std::string path = TempFile(shipped);
  {
    Master m;
    auto c = m.Run({"--config_path", path});
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->master.rpc_port == 50051);
    CHECK(c->master.eviction_ratio == doctest::Approx(0.1));
    CHECK(c->master.eviction_high_watermark_ratio == doctest::Approx(1.0));
    CHECK(c->master.client_ttl_us == 60'000'000);
    CHECK(c->master.default_kv_lease_ttl_us == 10'000'000);
    CHECK(c->master.default_kv_soft_pin_ttl_us == 1'800'000'000);
    CHECK(c->ha.cluster == "mooncake_cluster");
    CHECK(c->ha.etcd.empty());  // enable_ha false: no HA, as in the reference
    CHECK(m.Noted("etcd_endpoints=http://localhost:2379: not used"));
    CHECK(m.Noted(": rpc_thread_num=16: accepted"));
  }
  {
    Master m;
    auto c = m.Run({"-config_path=" + path, "--rpc_port", "7000", "--eviction_ratio=0.2"});
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->master.rpc_port == 7000);
    CHECK(c->master.eviction_ratio == doctest::Approx(0.2));
  }
  std::remove(path.c_str());

  path = TempFile(R"({"enable_ha": true, "etcd_endpoints": "127.0.0.1:2379;127.0.0.2:2379"})");
  {
    Master m;
    auto c = m.Run({"--config_path", path});
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->ha.enable_ha);
    CHECK(c->ha.etcd == "127.0.0.1:2379;127.0.0.2:2379");
  }
  std::remove(path.c_str());

  path = TempFile(R"({"rpc_port": 1, "rpc_portt": 2, "enable_gc": true})");
  {
    Master m;
    auto c = m.Run({"--config_path", path});
    REQUIRE_FALSE(c.ok());
    CHECK_MESSAGE(c.status().message() == path + ": unknown keys enable_gc, rpc_portt (not a "
                                                  "flag of the reference's mooncake_master nor "
                                                  "a setting here)",
                  c.status().message());
  }
  std::remove(path.c_str());

  path = TempFile(R"({"eviction_ratio": 3})");
  {
    Master m;
    auto c = m.Run({"--config_path", path});
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().rfind(path + ": eviction_ratio: ", 0) == 0);
  }
  std::remove(path.c_str());

  Master missing;
  auto c = missing.Run({"--config_path", "/nonexistent/master.json"});
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find("/nonexistent/master.json: cannot read") != std::string::npos);
}

TEST_CASE("other commands do not take the reference master's flags") {
  CLI::App app{"test"};
  CLI::App* sub = app.add_subcommand("store");
  CommandConfig cc(*sub, kStore | kCluster | kClient | kLog, true);
  std::vector<std::string> args = {"--rpc_thread_num=8", "store"};
  CHECK_THROWS_AS(app.parse(args), CLI::ExtrasError);
}

TEST_CASE("mooncake-master(1) names every reference flag it takes") {
  std::ifstream in(std::string(MC_SOURCE_ROOT) + "/man/mooncake-master.1");
  REQUIRE(in);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t section = page.find(".SH REFERENCE FLAGS");
  REQUIRE(section != std::string::npos);
  page = page.substr(section, page.find(".SH ", section + 1) - section);
  for (const RefFlag& f : RefMasterFlags()) {
    std::string name(f.name);
    std::string escaped;
    for (char ch : name) escaped += ch == '-' ? std::string("\\-") : std::string(1, ch);
    INFO(name);
    CHECK((page.find("\\-\\-" + escaped) != std::string::npos ||
           page.find("\\-" + escaped + "=") != std::string::npos));
  }
}

TEST_CASE("the standalone client takes the reference client's remaining flags") {
  CLI::App app{"test"};
  CLI::App* sub = app.add_subcommand("client");
  CommandConfig cc(*sub, kCluster | kClient | kLog | kTls, true, RefClientFlags());
  std::vector<std::string> args = {"--tenant_id", "default", "--enable_offload",
                                   "--start_offload_rpc_server=false"};
  NormalizeGflagsArgs(args);
  args.insert(args.begin(), "client");
  std::reverse(args.begin(), args.end());
  app.parse(args);
  auto c = cc.Resolve();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  bool noted = std::any_of(cc.notes().begin(), cc.notes().end(), [](const std::string& n) {
    return n.rfind("--enable_offload=true: accepted", 0) == 0;
  });
  CHECK(noted);

  CLI::App app2{"test"};
  CLI::App* sub2 = app2.add_subcommand("client");
  CommandConfig cc2(*sub2, kCluster | kClient | kLog | kTls, true, RefClientFlags());
  app2.parse(std::vector<std::string>{"--tenant_id=tenant-a", "client"});
  c = cc2.Resolve();
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message() ==
        "--tenant_id=tenant-a: multi-tenant namespaces are not built here (only default)");
}
