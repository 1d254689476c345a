#include "config/registry.h"

#include <cassert>
#include <charconv>
#include <cstdio>
#include <limits>

namespace mc::config {

namespace {

#define MC_FIELD(path) [](Config& c) -> void* { return &c.path; }

using DU = DurationUnit;

// The rows. Help texts are one line; the default and the unit are added by
// whoever prints them, from the row itself, so they cannot drift.
const Setting kSettings[] = {
    // [cluster]: where a client or store finds the cluster.
    {.section = kCluster, .key = "master", .type = Type::kString,
     .field = MC_FIELD(cluster.master),
     .help = "Master RPC address host:port; for an HA group a list h1:p,h2:p or"
             " etcd://h1:2379,h2:2379 (the leader key of MC_STORE_CLUSTER_ID)",
     .env = "MOONCAKE_MASTER", .json_key = "master_server_address"},
    {.section = kCluster, .key = "metadata_server", .type = Type::kString,
     .field = MC_FIELD(cluster.metadata_server),
     .help = "Transfer-engine metadata service URL (http://h:8080/metadata)",
     .env = "MOONCAKE_TE_META_DATA_SERVER", .json_key = "metadata_server"},
    {.section = kCluster, .key = "local_hostname", .type = Type::kString,
     .field = MC_FIELD(cluster.local_hostname),
     .help = "Address other nodes use to reach this one",
     .env = "MOONCAKE_LOCAL_HOSTNAME", .json_key = "local_hostname"},
    {.section = kCluster, .key = "protocol", .type = Type::kString,
     .field = MC_FIELD(cluster.protocol), .help = "Transport: tcp or rdma",
     .env = "MOONCAKE_PROTOCOL", .json_key = "protocol", .choices = "tcp|rdma"},
    {.section = kCluster, .key = "device_name", .type = Type::kString,
     .field = MC_FIELD(cluster.device_name),
     .help = "RDMA devices, comma separated (mlx5_0,mlx5_1); empty: all",
     .env = "MOONCAKE_DEVICE", .json_key = "device_name", .flags = "--device"},
    {.section = kCluster, .key = "auth_token", .type = Type::kString,
     .field = MC_FIELD(cluster.auth_token),
     .help = "Shared secret every peer must present; empty: no authentication",
     .env = "MOONCAKE_AUTH_TOKEN"},
    {.section = kCluster, .key = "shm", .type = Type::kBool, .field = MC_FIELD(cluster.shm),
     .help = "Use shared memory with stores on the same host (false forces TCP)"},
    {.section = kCluster, .key = "direct_read_ttl", .type = Type::kDuration,
     .field = MC_FIELD(cluster.direct_read_ttl_us),
     .help = "How long a get may reuse a key's location without asking the master "
             "(a sealed read, stale answers fall back); 0: always ask",
     .plain_unit = DU::kMilliseconds, .max = kSealedReadGrantTtlUs},
    {.section = kCluster, .key = "rpc_timeout", .type = Type::kDuration,
     .field = MC_FIELD(cluster.rpc_timeout_us), .help = "Timeout of one RPC to the master",
     .plain_unit = DU::kMilliseconds, .zero_ok = false},
    {.section = kCluster, .key = "rpc_retries", .type = Type::kU32,
     .field = MC_FIELD(cluster.rpc_retries),
     .help = "Retries with backoff before the master counts as unavailable"},

    // [master]: the control plane.
    {.section = kMaster, .key = "rpc_address", .type = Type::kString,
     .field = MC_FIELD(master.rpc_address), .help = "Address the master RPC server binds"},
    {.section = kMaster, .key = "rpc_port", .type = Type::kPort,
     .field = MC_FIELD(master.rpc_port), .help = "Master RPC port", .flags = "--port",
     .zero_ok = false},
    {.section = kMaster, .key = "metrics_port", .type = Type::kPort,
     .field = MC_FIELD(master.metrics_port),
     .help = "Admin HTTP port (/metrics, /health, /query_key)", .zero_ok = false},
    {.section = kMaster, .key = "metrics_host", .type = Type::kString,
     .field = MC_FIELD(master.metrics_host),
     .help = "Address the admin HTTP port binds; empty: rpc_address"},
    {.section = kMaster, .key = "enable_http_metadata_server", .type = Type::kBool,
     .field = MC_FIELD(master.enable_http_metadata_server),
     .help = "Embed the HTTP metadata server in the master"},
    {.section = kMaster, .key = "http_metadata_server_host", .type = Type::kString,
     .field = MC_FIELD(master.http_metadata_server_host),
     .help = "Address the embedded metadata server binds"},
    {.section = kMaster, .key = "http_metadata_server_port", .type = Type::kPort,
     .field = MC_FIELD(master.http_metadata_server_port),
     .help = "Port of the embedded metadata server", .zero_ok = false},
    {.section = kMaster, .key = "default_kv_lease_ttl", .type = Type::kDuration,
     .field = MC_FIELD(master.default_kv_lease_ttl_us),
     .help = "Lease a get grants; a leased object is not removed or evicted",
     .plain_unit = DU::kMilliseconds},
    {.section = kMaster, .key = "default_kv_soft_pin_ttl", .type = Type::kDuration,
     .field = MC_FIELD(master.default_kv_soft_pin_ttl_us),
     .help = "How long a soft-pinned object is evicted only after unpinned ones",
     .plain_unit = DU::kMilliseconds},
    {.section = kMaster, .key = "eviction_high_watermark_ratio", .type = Type::kRatio,
     .field = MC_FIELD(master.eviction_high_watermark_ratio),
     .help = "Eviction starts when used/capacity exceeds this"},
    {.section = kMaster, .key = "eviction_ratio", .type = Type::kRatio,
     .field = MC_FIELD(master.eviction_ratio),
     .help = "Most of the capacity one background eviction round frees"},
    {.section = kMaster, .key = "eviction_policy", .type = Type::kString,
     .field = MC_FIELD(master.eviction_policy),
     .help = "Which objects eviction drops first: adaptive (ARC with a duel against LRU),"
             " probation (new objects wait in a small queue until read again) or lru",
     .choices = "probation|adaptive|lru"},
    {.section = kMaster, .key = "client_ttl", .type = Type::kDuration,
     .field = MC_FIELD(master.client_ttl_us),
     .help = "A client silent this long is dead: its segments are unmounted",
     .plain_unit = DU::kSeconds, .zero_ok = false},
    {.section = kMaster, .key = "put_timeout", .type = Type::kDuration,
     .field = MC_FIELD(master.put_timeout_us),
     .help = "A put neither ended nor revoked this long is discarded",
     .plain_unit = DU::kSeconds, .zero_ok = false},
    {.section = kMaster, .key = "stripe_size", .type = Type::kSize,
     .field = MC_FIELD(master.stripe_size_bytes),
     .help = "Largest slice of a replica moved in one transfer", .zero_ok = false},
    {.section = kMaster, .key = "data_dir", .type = Type::kString,
     .field = MC_FIELD(master.data_dir),
     .help = "Where the master keeps its state across restarts; \"none\": memory only"},
    {.section = kMaster, .key = "fsync", .type = Type::kString, .field = MC_FIELD(master.fsync),
     .help = "When a journal commit is fdatasynced: always, before its replies; everysec,"
             " within a second (before its replies if it frees space)",
     .choices = "always|everysec"},
    {.section = kMaster, .key = "max_connections", .type = Type::kU32,
     .field = MC_FIELD(master.max_connections), .help = "Most client connections at once",
     .zero_ok = false},
    {.section = kMaster, .key = "max_batch", .type = Type::kU32,
     .field = MC_FIELD(master.max_batch), .help = "Most keys in one batch request",
     .zero_ok = false, .max = kMaxBatchItems},
    {.section = kMaster, .key = "max_key_size", .type = Type::kSize32,
     .field = MC_FIELD(master.max_key_bytes), .help = "Longest object key", .zero_ok = false,
     .max = kMaxStringBytes},
    {.section = kMaster, .key = "hugepages", .type = Type::kBool,
     .field = MC_FIELD(master.hugepages),
     .help = "Keep the object index on reserved huge pages (vm.nr_hugepages) while free ones"
             " last; off: stores on this host may have reserved them for their segments"},
    {.section = kMaster, .key = "metrics_log_interval", .type = Type::kDuration,
     .field = MC_FIELD(master.metrics_log_interval_us),
     .help = "Period of the \"Master Metrics:\" log line; 0: never",
     .plain_unit = DU::kSeconds},
    {.section = kMaster, .key = "enable_offload", .type = Type::kBool,
     .field = MC_FIELD(master.enable_offload),
     .help = "Keep the disk replicas stores with ssd_offload_path hold and serve them"},
    {.section = kMaster, .key = "offload_on_evict", .type = Type::kBool,
     .field = MC_FIELD(master.offload_on_evict),
     .help = "Eviction moves objects to a store's disk tier instead of dropping them"},
    {.section = kMaster, .key = "promotion_on_hit", .type = Type::kBool,
     .field = MC_FIELD(master.promotion_on_hit),
     .help = "Copy an object read from disk often enough back into memory"},
    {.section = kMaster, .key = "promotion_admission_threshold", .type = Type::kU32,
     .field = MC_FIELD(master.promotion_admission_threshold),
     .help = "Reads from disk of one object within 60 s that promote it (promotion_on_hit); "
             "1: the first",
     .zero_ok = false, .max = 1000},

    // [ha]: master high availability on etcd.
    {.section = kHa, .key = "etcd", .type = Type::kString, .field = MC_FIELD(ha.etcd),
     .help = "etcd members the masters elect a leader and keep their log in"
             " (http://h1:2379,http://h2:2379); empty: no HA",
     .flags = "--etcd_endpoints", .flag = "--ha-etcd"},
    {.section = kHa, .key = "enable_ha", .type = Type::kBool, .field = MC_FIELD(ha.enable_ha),
     .help = "The reference's switch for HA; HA runs whenever etcd is set, and this without"
             " etcd is refused", .flags = "--enable_ha", .flag = "--enable-ha"},
    {.section = kHa, .key = "cluster", .type = Type::kString, .field = MC_FIELD(ha.cluster),
     .help = "Name of this pool in etcd, so several pools share one etcd",
     .env = "MC_STORE_CLUSTER_ID", .flags = "--cluster_id", .flag = "--ha-cluster"},
    {.section = kHa, .key = "lease_ttl", .type = Type::kDuration,
     .field = MC_FIELD(ha.lease_ttl_us),
     .help = "The leader's etcd lease: a dead leader is replaced after this (whole seconds)",
     .flag = "--ha-lease-ttl", .plain_unit = DU::kSeconds, .zero_ok = false},
    {.section = kHa, .key = "advertise_address", .type = Type::kString,
     .field = MC_FIELD(ha.advertise_address),
     .help = "host:port clients reach this master's RPC port at; empty: rpc_address (or"
             " [cluster] local_hostname when it binds every address) and rpc_port",
     .flag = "--ha-advertise-address"},
    {.section = kHa, .key = "snapshot_every", .type = Type::kU32,
     .field = MC_FIELD(ha.snapshot_every),
     .help = "Log entries between snapshots of the state (each trims the log behind it)",
     .flag = "--ha-snapshot-every", .zero_ok = false},
    {.section = kHa, .key = "entries_in_flight", .type = Type::kU32,
     .field = MC_FIELD(ha.entries_in_flight),
     .help = "Log entries the leader has in etcd's hands at once, each on its own connection"
             " (replies still leave in log order)",
     .flag = "--ha-entries-in-flight", .zero_ok = false, .max = kMaxHaEntriesInFlight},
    {.section = kHa, .key = "linger", .type = Type::kDuration, .field = MC_FIELD(ha.linger_us),
     .help = "Under load (the last log entry held 32 records or more), how long the oldest"
             " waiting change waits before its entry is cut: fewer, larger etcd txns; 0: never",
     .flag = "--ha-linger", .plain_unit = DU::kMilliseconds, .max = kMaxHaLingerUs},
    {.section = kHa, .key = "compress_log", .type = Type::kBool,
     .field = MC_FIELD(ha.compress_log),
     .help = "Deflate each log entry before it goes to etcd (less etcd CPU and disk per put);"
             " off while a master from before it is still in the group",
     .flag = "--ha-compress-log"},

    // [store]: memory contributed to the pool.
    {.section = kStore, .key = "global_segment_size", .type = Type::kSize,
     .field = MC_FIELD(store.global_segment_size_bytes),
     .help = "Memory this store contributes to the pool; 0: pure client",
     .env = "MOONCAKE_GLOBAL_SEGMENT_SIZE", .json_key = "global_segment_size",
     .flags = "--segment"},
    {.section = kStore, .key = "port", .type = Type::kPort, .field = MC_FIELD(store.port),
     .help = "Data port transfers reach this store on; 0 picks a free one"},
    {.section = kStore, .key = "hugepages", .type = Type::kBool,
     .field = MC_FIELD(store.hugepages),
     .help = "Back the segment with huge pages when the system has them"},
    {.section = kStore, .key = "prefault", .type = Type::kBool,
     .field = MC_FIELD(store.prefault),
     .help = "Fault the whole segment into memory on a background thread after start"},
    {.section = kStore, .key = "max_connections", .type = Type::kU32,
     .field = MC_FIELD(store.max_connections), .help = "Most transfer connections at once",
     .zero_ok = false},
    {.section = kStore, .key = "ssd_offload_path", .type = Type::kString,
     .field = MC_FIELD(store.ssd_offload_path),
     .help = "Directory of this store's disk tier (local NVMe); empty: memory only",
     .env = "MOONCAKE_SSD_OFFLOAD_PATH", .env_alias = "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH",
     .json_key = "ssd_offload_path"},
    {.section = kStore, .key = "ssd_size", .type = Type::kSize,
     .field = MC_FIELD(store.ssd_size_bytes),
     .help = "Bytes the disk tier may hold under ssd_offload_path; 0: 90% of its free space at start",
     .env = "MOONCAKE_SSD_SIZE", .json_key = "ssd_size"},

    // [client]: put/get from this process.
    {.section = kClient, .key = "local_buffer_size", .type = Type::kSize,
     .field = MC_FIELD(client.local_buffer_size_bytes),
     .help = "Staging buffer for this process's own put/get; 0: pure storage node",
     .env = "MOONCAKE_LOCAL_BUFFER_SIZE", .json_key = "local_buffer_size"},
    {.section = kClient, .key = "replicas", .type = Type::kU32,
     .field = MC_FIELD(client.replicas),
     .help = "Replicas of each put, each on a different segment", .zero_ok = false,
     .max = kMaxReplicas},
    {.section = kClient, .key = "tcp_streams", .type = Type::kU32,
     .field = MC_FIELD(client.tcp_streams),
     .help = "TCP connections a transfer is striped over (objects from 512 KiB up, in pieces of at most 1 MiB)", .zero_ok = false,
     .max = kMaxTcpStreams},
    {.section = kClient, .key = "transfer_timeout", .type = Type::kDuration,
     .field = MC_FIELD(client.transfer_timeout_us),
     .help = "A data-plane connect, send or receive with no progress this long fails the"
             " transfer (a get then tries the next replica)",
     .json_key = "transfer_timeout", .plain_unit = DU::kSeconds, .zero_ok = false},

    // [metadata_server]: the HTTP key-value service of the transfer engine.
    {.section = kMetadataServer, .key = "host", .type = Type::kString,
     .field = MC_FIELD(metadata_server.host), .help = "Address the metadata server binds"},
    {.section = kMetadataServer, .key = "port", .type = Type::kPort,
     .field = MC_FIELD(metadata_server.port), .help = "Metadata server HTTP port",
     .zero_ok = false},
    {.section = kMetadataServer, .key = "db", .type = Type::kString,
     .field = MC_FIELD(metadata_server.db),
     .help = "SQLite file that keeps the metadata across restarts; empty: memory only"},
    {.section = kMetadataServer, .key = "max_key_size", .type = Type::kSize32,
     .field = MC_FIELD(metadata_server.max_key_bytes), .help = "Longest metadata key",
     .zero_ok = false},
    {.section = kMetadataServer, .key = "max_value_size", .type = Type::kSize,
     .field = MC_FIELD(metadata_server.max_value_bytes), .help = "Largest metadata value",
     .zero_ok = false},
    {.section = kMetadataServer, .key = "threads", .type = Type::kU32,
     .field = MC_FIELD(metadata_server.threads), .help = "HTTP worker threads",
     .zero_ok = false},
    {.section = kMetadataServer, .key = "auth_token", .type = Type::kString,
     .field = MC_FIELD(metadata_server.auth_token),
     .help = "Token PUT and DELETE must present (Authorization: Bearer); empty: open",
     .env = "MOONCAKE_AUTH_TOKEN"},

    // [log]
    {.section = kLog, .key = "level", .type = Type::kString, .field = MC_FIELD(log.level),
     .help = "Least severe messages logged: debug, info, warn or error",
     .flag = "--log-level", .choices = "debug|info|warn|error"},

    // [tls]: TLS on every listener and connection (net/tls.h); off without a cert or CA.
    {.section = kTls, .key = "cert", .type = Type::kString, .field = MC_FIELD(tls.cert),
     .help = "PEM certificate (chain): servers speak TLS with it, clients present it for mutual TLS",
     .env = "MOONCAKE_TLS_CERT", .flag = "--tls-cert"},
    {.section = kTls, .key = "key", .type = Type::kString, .field = MC_FIELD(tls.key),
     .help = "PEM private key of the certificate; empty: read it from the cert file",
     .env = "MOONCAKE_TLS_KEY", .flag = "--tls-key"},
    {.section = kTls, .key = "ca", .type = Type::kString, .field = MC_FIELD(tls.ca),
     .help = "PEM CA bundle that verifies peers; a client with only a CA speaks TLS",
     .env = "MOONCAKE_TLS_CA", .flag = "--tls-ca"},
    {.section = kTls, .key = "verify_peer", .type = Type::kBool,
     .field = MC_FIELD(tls.verify_peer),
     .help = "Servers require a client certificate signed by the CA (mutual TLS)",
     .flag = "--tls-verify-peer"},
    {.section = kTls, .key = "min_version", .type = Type::kString,
     .field = MC_FIELD(tls.min_version), .help = "Oldest TLS version accepted",
     .flag = "--tls-min-version", .choices = "1.3|1.2"},
};

#undef MC_FIELD

template <typename T>
T& At(const Setting& s, Config& c) {
  return *static_cast<T*>(s.field(c));
}
template <typename T>
const T& At(const Setting& s, const Config& c) {
  return *static_cast<T*>(s.field(const_cast<Config&>(c)));
}

std::string Quote(std::string_view text) { return "'" + std::string(text) + "'"; }

Status Bad(std::string message) { return Error(ErrorCode::INVALID_PARAMS, std::move(message)); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A whole non-negative decimal number no larger than `max`.
Result<uint64_t> ParseCount(std::string_view raw, uint64_t max, const char* what) {
  std::string_view text = Trim(raw);
  if (!text.empty() && text.front() == '-') return Bad(Quote(raw) + ": must not be negative");
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size()) {
    return Bad(Quote(raw) + ": not a whole number");
  }
  if (ec == std::errc::result_out_of_range || v > max) {
    return Bad(Quote(raw) + ": " + what + " must be at most " + std::to_string(max));
  }
  return v;
}

Status CheckZero(const Setting& s, uint64_t v, std::string_view raw, const char* why) {
  if (v == 0 && !s.zero_ok) return Bad(Quote(raw) + ": " + why);
  return Status::Ok();
}

// The ceiling of the row, if any. Refused, never clamped: a clamped setting
// would run with a value the operator did not ask for.
Status CheckMax(const Setting& s, uint64_t v) {
  if (s.max == 0 || v <= s.max) return Status::Ok();
  return Bad(SettingName(s) + " = " + std::to_string(v) + " is above its ceiling " +
             std::to_string(s.max));
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// above U+10FFFF). A config is text: ToToml must print every value as a TOML
// string, and TOML (toml++) refuses anything else, so a value that is not
// UTF-8 (a mooncake.json string, a variable or a flag in Latin-1) is refused
// where it enters instead of making --print-config unloadable.
bool IsUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    size_t extra;
    uint32_t cp;
    if (b < 0x80) { ++i; continue; }
    if (b >= 0xc2 && b <= 0xdf) { extra = 1; cp = b & 0x1f; }
    else if (b >= 0xe0 && b <= 0xef) { extra = 2; cp = b & 0x0f; }
    else if (b >= 0xf0 && b <= 0xf4) { extra = 3; cp = b & 0x07; }
    else return false;
    if (text.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const unsigned char cont = static_cast<unsigned char>(text[i + k]);
      if ((cont & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cont & 0x3f);
    }
    if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10ffff))) return false;
    if (cp >= 0xd800 && cp <= 0xdfff) return false;
    i += extra + 1;
  }
  return true;
}

Status SetString(const Setting& s, std::string_view text, Config& c) {
  if (!IsUtf8(text)) return Bad("the value is not valid UTF-8 text");
  if (s.choices != nullptr) {
    if (!ListHas(s.choices, '|', text)) {
      std::string list = s.choices;
      for (char& ch : list) ch = ch == '|' ? ',' : ch;
      return Bad(Quote(text) + ": unknown " + s.key + " (use one of " + list + ")");
    }
  }
  At<std::string>(s, c) = std::string(text);
  return Status::Ok();
}

Status SetBool(const Setting& s, std::string_view raw, Config& c) {
  std::string t(Trim(raw));
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t == "true" || t == "1" || t == "yes" || t == "on") {
    At<bool>(s, c) = true;
  } else if (t == "false" || t == "0" || t == "no" || t == "off") {
    At<bool>(s, c) = false;
  } else {
    return Bad(Quote(raw) + ": not a boolean (use true or false)");
  }
  return Status::Ok();
}

Status SetRatio(const Setting& s, std::string_view raw, Config& c) {
  std::string_view text = Trim(raw);
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Bad(Quote(raw) + ": not a number");
  }
  if (!(v >= 0.0 && v <= 1.0)) return Bad(std::string(text) + " is outside 0..1");
  At<double>(s, c) = v;
  return Status::Ok();
}

const char* PlainUnitName(DurationUnit u) {
  switch (u) {
    case DurationUnit::kMicroseconds: return "us";
    case DurationUnit::kMilliseconds: return "ms";
    case DurationUnit::kSeconds: return "s";
  }
  return "us";
}

}  // namespace

std::span<const Setting> AllSettings() { return kSettings; }

const char* SectionName(unsigned section) {
  switch (section) {
    case kCluster: return "cluster";
    case kMaster: return "master";
    case kStore: return "store";
    case kClient: return "client";
    case kMetadataServer: return "metadata_server";
    case kLog: return "log";
    case kTls: return "tls";
    case kHa: return "ha";
  }
  assert(false && "SectionName takes exactly one Section bit");
  return "?";
}

const Setting* FindSetting(std::string_view section, std::string_view key) {
  for (const Setting& s : kSettings) {
    if (SectionName(s.section) == section && key == s.key) return &s;
  }
  return nullptr;
}

bool ListHas(std::string_view list, char sep, std::string_view item) {
  while (!list.empty()) {
    size_t at = list.find(sep);
    if (list.substr(0, at) == item) return true;
    list = at == std::string_view::npos ? std::string_view() : list.substr(at + 1);
  }
  return false;
}

std::string SettingName(const Setting& s) {
  return std::string("[") + SectionName(s.section) + "] " + s.key;
}

Status SetFromText(const Setting& s, std::string_view text, Config& c) {
  switch (s.type) {
    case Type::kString: return SetString(s, text, c);
    case Type::kBool: return SetBool(s, text, c);
    case Type::kRatio: return SetRatio(s, text, c);
    case Type::kPort: {
      MC_ASSIGN_OR_RETURN(uint64_t v, ParseCount(text, 65535, "a port"));
      MC_RETURN_IF_ERROR(CheckZero(s, v, text, "port 0 is not allowed here (use 1..65535)"));
      At<uint16_t>(s, c) = static_cast<uint16_t>(v);
      return Status::Ok();
    }
    case Type::kU32: {
      MC_ASSIGN_OR_RETURN(uint64_t v,
                          ParseCount(text, std::numeric_limits<uint32_t>::max(), "a count"));
      MC_RETURN_IF_ERROR(CheckZero(s, v, text, "must be at least 1"));
      MC_RETURN_IF_ERROR(CheckMax(s, v));
      At<uint32_t>(s, c) = static_cast<uint32_t>(v);
      return Status::Ok();
    }
    case Type::kSize32:
    case Type::kSize: {
      MC_ASSIGN_OR_RETURN(uint64_t v, ParseSize(text));
      MC_RETURN_IF_ERROR(CheckZero(s, v, text, "must be at least 1 byte"));
      MC_RETURN_IF_ERROR(CheckMax(s, v));
      if (s.type == Type::kSize32) {
        if (v > std::numeric_limits<uint32_t>::max()) {
          return Bad(Quote(text) + ": must be below 4 GiB");
        }
        At<uint32_t>(s, c) = static_cast<uint32_t>(v);
      } else {
        At<uint64_t>(s, c) = v;
      }
      return Status::Ok();
    }
    case Type::kDuration: {
      MC_ASSIGN_OR_RETURN(uint64_t v, ParseDurationUs(text, s.plain_unit));
      MC_RETURN_IF_ERROR(CheckZero(s, v, text, "must be longer than 0"));
      At<uint64_t>(s, c) = v;
      return Status::Ok();
    }
  }
  return Bad("unhandled setting type");
}

namespace {

std::string TomlString(std::string_view v) {
  std::string out = "\"";
  for (char ch : v) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string RatioText(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  assert(ec == std::errc());
  std::string out(buf, end);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

}  // namespace

std::string FormatValue(const Setting& s, const Config& c) {
  switch (s.type) {
    case Type::kString: return TomlString(At<std::string>(s, c));
    case Type::kBool: return At<bool>(s, c) ? "true" : "false";
    case Type::kPort: return std::to_string(At<uint16_t>(s, c));
    case Type::kU32:
    case Type::kSize32: return std::to_string(At<uint32_t>(s, c));
    case Type::kSize: {
      // TOML integers are 64-bit signed: a size above that (accepted from
      // "18339220632606081004b", say) is printed as a string, which the
      // size parser reads back the same (found by config_json_fuzz).
      const uint64_t v = At<uint64_t>(s, c);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return TomlString(std::to_string(v));
      }
      return std::to_string(v);
    }
    case Type::kDuration: return TomlString(FormatDurationUs(At<uint64_t>(s, c)));
    case Type::kRatio: return RatioText(At<double>(s, c));
  }
  return "";
}

std::string DefaultText(const Setting& s) {
  const Config defaults;
  switch (s.type) {
    case Type::kString: return At<std::string>(s, defaults);
    case Type::kSize32:
    case Type::kSize: {
      uint64_t v = s.type == Type::kSize ? At<uint64_t>(s, defaults) : At<uint32_t>(s, defaults);
      for (const char* unit : {"tb", "gb", "mb", "kb"}) {
        int shift = unit[0] == 't' ? 40 : unit[0] == 'g' ? 30 : unit[0] == 'm' ? 20 : 10;
        if (v != 0 && v % (1ull << shift) == 0) return std::to_string(v >> shift) + unit;
      }
      return std::to_string(v);
    }
    case Type::kDuration: return FormatDurationUs(At<uint64_t>(s, defaults));
    default: {
      std::string v = FormatValue(s, defaults);
      return v;
    }
  }
}

std::string UnitText(const Setting& s) {
  switch (s.type) {
    case Type::kString: return s.choices != nullptr ? std::string("(") + s.choices + ")" : "";
    case Type::kBool: return "(true|false)";
    case Type::kPort: return s.zero_ok ? "(port, 0 picks)" : "(port)";
    case Type::kU32: return "(count)";
    case Type::kSize32:
    case Type::kSize: return "(size: bytes or 512mb, 50gb)";
    case Type::kDuration:
      return std::string("(duration: plain number in ") + PlainUnitName(s.plain_unit) +
             ", or 500ms, 10s, 5m)";
    case Type::kRatio: return "(ratio 0..1)";
  }
  return "";
}

}  // namespace mc::config
