// The one typed configuration tree of mooncake, with its defaults (those the
// lower modules' options structs share come from common/defaults.h).
//
// Sources fill it in this order, each overriding the one before:
//   1. the defaults below,
//   2. a TOML file (--config FILE),
//   3. a reference-style mooncake.json (path in MOONCAKE_CONFIG_PATH),
//   4. the environment (MOONCAKE_MASTER, MOONCAKE_TE_META_DATA_SERVER, ...),
//   5. command-line flags.
// TOML section and key names are the member names below without their unit
// suffix (`default_kv_lease_ttl_us` is `[master] default_kv_lease_ttl`,
// `global_segment_size_bytes` is `[store] global_segment_size`). Sizes are
// bytes and durations microseconds internally; the loader accepts "50gb" and
// "10s", and a plain number in the unit noted beside the member.
// Plain data: copy it freely, do not share one instance across threads while
// it is being written.
#pragma once

#include <cstdint>
#include <string>

#include "common/defaults.h"

namespace mc {

// Where a client or store finds the cluster, and how it talks to it.
struct ClusterConfig {
  std::string master = kDefaultMasterAddress;                      // MOONCAKE_MASTER
  std::string metadata_server = "http://127.0.0.1:8080/metadata";  // MOONCAKE_TE_META_DATA_SERVER
  std::string local_hostname = "127.0.0.1";                        // MOONCAKE_LOCAL_HOSTNAME
  std::string protocol = "tcp";                                    // MOONCAKE_PROTOCOL: tcp | rdma
  std::string device_name;                                         // MOONCAKE_DEVICE
  std::string auth_token;                                          // MOONCAKE_AUTH_TOKEN
  bool shm = true;  // same-host shared-memory fast path
  // Direct reads (issue 33): a get reuses a key's cached location this long.
  uint64_t direct_read_ttl_us = kDefaultDirectReadTtlUs;
  uint64_t rpc_timeout_us = kDefaultRpcTimeoutUs;
  uint32_t rpc_retries = kDefaultRpcRetries;  // with backoff, before "master unavailable"
};

struct MasterConfig {
  std::string rpc_address = kDefaultMasterRpcBindAddress;
  uint16_t rpc_port = kDefaultMasterRpcPort;
  uint16_t metrics_port = 9003;
  std::string metrics_host;  // admin HTTP bind address; empty: rpc_address
  bool enable_http_metadata_server = false;
  std::string http_metadata_server_host = "0.0.0.0";
  uint16_t http_metadata_server_port = 8080;
  uint64_t default_kv_lease_ttl_us = kDefaultKvLeaseTtlUs;        // plain numbers: ms
  uint64_t default_kv_soft_pin_ttl_us = kDefaultKvSoftPinTtlUs;   // plain numbers: ms
  double eviction_high_watermark_ratio = kDefaultEvictionHighWatermarkRatio;
  double eviction_ratio = kDefaultEvictionRatio;
  std::string eviction_policy = "adaptive";  // adaptive | probation | lru
  uint64_t client_ttl_us = kDefaultClientTtlUs;                  // plain numbers: s
  uint64_t put_timeout_us = kDefaultPutTimeoutUs;                // plain numbers: s
  uint64_t stripe_size_bytes = kDefaultStripeSizeBytes;
  std::string data_dir = "/var/lib/mooncake";         // "none": memory only
  std::string fsync = "everysec";                     // always | everysec
  uint32_t max_connections = kDefaultMasterMaxConnections;
  uint32_t max_batch = kDefaultMaxBatch;
  uint32_t max_key_bytes = kDefaultMaxKeyBytes;
  bool hugepages = false;  // the object index on reserved huge pages, while free ones last
  uint64_t metrics_log_interval_us = 10000000;        // plain numbers: s
  // The disk tier (issue 31): stores with ssd_offload_path hold disk replicas.
  bool enable_offload = false;      // record disk replicas stores announce
  bool offload_on_evict = false;    // eviction moves objects to disk, not away
  bool promotion_on_hit = false;    // disk reads often enough bring it back
  uint32_t promotion_admission_threshold = 2;  // reads from disk within the window that promote
};

// Master high availability on etcd (mooncake-master(1), HIGH AVAILABILITY):
// masters given the same etcd and cluster elect one leader; the others are
// hot standbys. Off while `etcd` is empty.
struct HaConfig {
  std::string etcd;                       // http://h1:2379,http://h2:2379
  bool enable_ha = false;                 // the reference's switch: needs `etcd`
  std::string cluster = "mooncake_cluster";  // MC_STORE_CLUSTER_ID; several pools share one etcd
  uint64_t lease_ttl_us = 5000000;        // plain numbers: s; whole seconds
  std::string advertise_address;          // host:port clients reach the RPC port at; empty: derived
  uint32_t snapshot_every = 10000;        // log entries between snapshots
  uint32_t entries_in_flight = 1;         // log entries in etcd's hands at once
  uint64_t linger_us = 3000;              // under load, an entry's oldest change waits this
  bool compress_log = true;               // entries deflated (masters before it cannot follow)
};

struct StoreConfig {
  uint64_t global_segment_size_bytes = 1ull << 30;    // MOONCAKE_GLOBAL_SEGMENT_SIZE
  uint16_t port = 0;                                  // data port; 0 picks a free one
  bool hugepages = true;
  bool prefault = true;                               // fault the segment in after start
  uint32_t max_connections = 1024;
  std::string ssd_offload_path;                       // MOONCAKE_SSD_OFFLOAD_PATH; empty: no disk tier
  uint64_t ssd_size_bytes = 0;                        // MOONCAKE_SSD_SIZE; 0 with a path: refused
};

struct ClientConfig {
  uint64_t local_buffer_size_bytes = 64ull << 20;     // MOONCAKE_LOCAL_BUFFER_SIZE
  uint32_t replicas = 1;
  uint32_t tcp_streams = kDefaultTcpStreams;          // connections a transfer is striped over
  uint64_t transfer_timeout_us = 10000000;            // plain numbers: s
};

struct MetadataServerConfig {
  std::string host = "0.0.0.0";
  uint16_t port = 8080;
  std::string db;                                     // SQLite file; empty: memory only
  uint32_t max_key_bytes = kDefaultMetadataMaxKeyBytes;
  uint64_t max_value_bytes = kDefaultMetadataMaxValueBytes;
  uint32_t threads = 8;
  std::string auth_token;                             // empty: PUT/DELETE open to all
};

struct LogConfig {
  std::string level = "info";  // debug | info | warn | error
};

// TLS for every listener and client connection; plain TCP when no cert or
// CA is set. The settings pass down as net::TlsSettings.
struct TlsConfig {
  std::string cert;                  // MOONCAKE_TLS_CERT
  std::string key;                   // MOONCAKE_TLS_KEY; empty: in the cert file
  std::string ca;                    // MOONCAKE_TLS_CA
  bool verify_peer = false;          // mutual TLS
  std::string min_version = "1.3";   // 1.3 | 1.2
};

struct Config {
  ClusterConfig cluster;
  MasterConfig master;
  HaConfig ha;
  StoreConfig store;
  ClientConfig client;
  MetadataServerConfig metadata_server;
  LogConfig log;
  TlsConfig tls;
};

}  // namespace mc
