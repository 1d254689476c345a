#include "config/ref_flags.h"

#include <ifaddrs.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "config/json_reader.h"
#include "config/registry.h"

namespace mc::config {

namespace {

using K = RefKind;
using T = RefType;

constexpr char kTaskQueue[] =
    "copy and move tasks are run by the client that created them, with no queue at the master";
constexpr char kTierTuning[] =
    "the disk tier here offloads on the stores' own threads; see DISK TIER in mooncake-master(1)";
constexpr char kOplog[] =
    "with --ha-etcd every change is in etcd's log before it is acknowledged; see HIGH "
    "AVAILABILITY in mooncake-master(1)";
constexpr char kSnapshot[] =
    "the master journals every change to SQLite in [master] data_dir and loads it at start "
    "(DURABILITY in mooncake-master(1)); there is no separate snapshot";
constexpr char kNoKvEvents[] = "KV cache events (ZMQ) are not built in this master";
constexpr char kNoCxl[] = "CXL memory segments are not supported by this master";
constexpr char kNoNof[] = "NVMe-oF segments are not supported by this master";
constexpr char kNoTenants[] = "multi-tenant namespaces and quotas are not built in this master";
constexpr char kNoDfs[] =
    "the shared-file (3FS/NFS) segment is not built; stores keep a disk tier of their own "
    "(ssd_offload_path)";
constexpr char kLogging[] = "this master logs to stderr (the journal under systemd)";
constexpr char kRpc[] = "the RPC server runs its own I/O threads, with TCP_NODELAY always set";

// Every flag of the reference master (0.3.12.post1 and its newest code) that
// has no registry setting of the same name, plus glog's common flags.
const RefFlag kFlags[] = {
    {"config_path", K::kNoEffect, T::kString, "read as the reference's JSON config file"},
    {"max_threads", K::kNoEffect, T::kInt, kRpc},
    {"rpc_thread_num", K::kNoEffect, T::kInt, kRpc},
    {"rpc_conn_timeout_seconds", K::kNoEffect, T::kInt, kRpc},
    {"rpc_enable_tcp_no_delay", K::kNoEffect, T::kBool, kRpc},
    {"rpc_interface", K::kInterface, T::kString, nullptr},
    {"enable_metric_reporting", K::kNoEffect, T::kBool,
     "the summary line's period is [master] metrics_log_interval (0: off)"},
    {"max_kv_soft_pin_ttl", K::kNoEffect, T::kString,
     "a soft pin lasts [master] default_kv_soft_pin_ttl; requests carry no TTL of their own"},
    {"allow_evict_soft_pinned_objects", K::kNoEffect, T::kBool,
     "soft-pinned objects are evicted only after every unpinned one, as the reference's "
     "default"},
    {"put_start_discard_timeout_sec", K::kNoEffect, T::kUint,
     "an unfinished put is revoked and its space freed after [master] put_timeout"},
    {"put_start_release_timeout_sec", K::kNoEffect, T::kUint,
     "an unfinished put is revoked and its space freed after [master] put_timeout"},
    {"memory_allocator", K::kChoice, T::kString,
     "space in a segment is given out best fit by this master's own allocator", "offset|cachelib"},
    {"allocation_strategy", K::kChoice, T::kString,
     "replicas go to the writer's host first, then to the emptiest segments",
     "random|free_ratio_first|local_first|ssd_free_ratio_first"},
    {"ha_backend_type", K::kChoice, T::kString, "only etcd is supported as the HA backend", "etcd",
     "redis|k8s"},
    {"ha_backend_connstring", K::kSetting, T::kString, nullptr, nullptr, nullptr, "ha.etcd"},
    {"enable_oplog", K::kNoEffect, T::kBool, kOplog},
    {"oplog_poll_interval_ms", K::kNoEffect, T::kInt, kOplog},
    {"oplog_batch_max_entries", K::kNoEffect, T::kUint, kOplog},
    {"batch_oplog_retry_timeout_sec", K::kNoEffect, T::kUint, kOplog},
    {"root_fs_dir", K::kOffOnly, T::kString, kNoDfs},
    {"global_file_segment_size", K::kNoEffect, T::kInt, kNoDfs},
    {"enable_disk_eviction", K::kNoEffect, T::kBool, kTierTuning},
    {"quota_bytes", K::kNoEffect, T::kUint, kTierTuning},
    {"offload_force_evict", K::kNoEffect, T::kBool, kTierTuning},
    {"offloading_queue_limit", K::kNoEffect, T::kUint, kTierTuning},
    {"offload_cap_ratio", K::kNoEffect, T::kDouble, kTierTuning},
    {"promotion_queue_limit", K::kNoEffect, T::kUint, kTierTuning},
    {"promotion_max_per_heartbeat", K::kNoEffect, T::kUint, kTierTuning},
    {"dynamic_replication_mode", K::kChoice, T::kString,
     "dynamic replication is not built in this master", "off", "observe|enforce"},
    {"dynamic_replication_heat_window_seconds", K::kNoEffect, T::kUint,
     "dynamic replication is not built in this master"},
    {"dynamic_replication_admission_qps_threshold", K::kNoEffect, T::kDouble,
     "dynamic replication is not built in this master"},
    {"dynamic_replication_max_memory_replicas", K::kNoEffect, T::kUint,
     "dynamic replication is not built in this master"},
    {"enable_kv_events", K::kOffOnly, T::kBool, kNoKvEvents},
    {"kv_events_bind_endpoint", K::kNoEffect, T::kString, kNoKvEvents},
    {"kv_events_model_name", K::kNoEffect, T::kString, kNoKvEvents},
    {"kv_events_backend_id", K::kNoEffect, T::kString, kNoKvEvents},
    {"kv_events_tenant_id", K::kNoEffect, T::kString, kNoKvEvents},
    {"kv_events_additional_salt", K::kNoEffect, T::kString, kNoKvEvents},
    {"kv_events_lora_name", K::kNoEffect, T::kString, kNoKvEvents},
    {"kv_events_block_size", K::kNoEffect, T::kUint, kNoKvEvents},
    {"kv_events_dp_rank", K::kNoEffect, T::kUint, kNoKvEvents},
    {"kv_events_emit_legacy_compat", K::kNoEffect, T::kBool, kNoKvEvents},
    {"kv_events_emit_object_key", K::kNoEffect, T::kBool, kNoKvEvents},
    {"kv_events_queue_capacity", K::kNoEffect, T::kUint, kNoKvEvents},
    {"enable_cxl", K::kOffOnly, T::kBool, kNoCxl},
    {"cxl_path", K::kNoEffect, T::kString, kNoCxl},
    {"cxl_size", K::kNoEffect, T::kUint, kNoCxl},
    {"nof_eviction_ratio", K::kNoEffect, T::kDouble, kNoNof},
    {"nof_eviction_high_watermark_ratio", K::kNoEffect, T::kDouble, kNoNof},
    {"nof_heartbeat_interval_sec", K::kNoEffect, T::kInt, kNoNof},
    {"nof_heartbeat_probe_timeout_ms", K::kNoEffect, T::kUint, kNoNof},
    {"nof_heartbeat_failures_threshold", K::kNoEffect, T::kUint, kNoNof},
    {"enable_multi_tenants", K::kOffOnly, T::kBool, kNoTenants},
    {"tenant_quota_connector_type", K::kNoEffect, T::kString, kNoTenants},
    {"tenant_quota_connector_uri", K::kNoEffect, T::kString, kNoTenants},
    {"enable_metadata_cleanup_on_timeout", K::kNoEffect, T::kBool,
     "a store's segment descriptor is removed from the metadata server when it unmounts"},
    {"pod_name", K::kNoEffect, T::kString, "there is no Kubernetes label routing here"},
    {"pod_namespace", K::kNoEffect, T::kString, "there is no Kubernetes label routing here"},
    {"enable_snapshot", K::kNoEffect, T::kBool, kSnapshot},
    {"enable_snapshot_restore", K::kNoEffect, T::kBool, kSnapshot},
    {"snapshot_backup_dir", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_interval_seconds", K::kNoEffect, T::kUint, kSnapshot},
    {"snapshot_child_timeout_seconds", K::kNoEffect, T::kUint, kSnapshot},
    {"snapshot_retention_count", K::kNoEffect, T::kUint, kSnapshot},
    {"snapshot_object_store_type", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_payload_store_type", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_payload_backend_type", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_catalog_store_type", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_catalog_backend_type", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_catalog_store_connstring", K::kNoEffect, T::kString, kSnapshot},
    {"snapshot_catalog_backend_connstring", K::kNoEffect, T::kString, kSnapshot},
    {"max_total_finished_tasks", K::kNoEffect, T::kUint, kTaskQueue},
    {"max_total_pending_tasks", K::kNoEffect, T::kUint, kTaskQueue},
    {"max_total_processing_tasks", K::kNoEffect, T::kUint, kTaskQueue},
    {"pending_task_timeout_sec", K::kNoEffect, T::kUint, kTaskQueue},
    {"processing_task_timeout_sec", K::kNoEffect, T::kUint, kTaskQueue},
    {"max_retry_attempts", K::kNoEffect, T::kUint, kTaskQueue},
    // glog, which the reference logs through.
    {"v", K::kLogVerbosity, T::kInt, nullptr},
    {"minloglevel", K::kLogMinLevel, T::kInt, nullptr},
    {"logtostderr", K::kNoEffect, T::kBool, kLogging},
    {"alsologtostderr", K::kNoEffect, T::kBool, kLogging},
    {"colorlogtostderr", K::kNoEffect, T::kBool, kLogging},
    {"stderrthreshold", K::kNoEffect, T::kInt, kLogging},
    {"log_dir", K::kNoEffect, T::kString, kLogging},
};

const RefFlag kClientFlags[] = {
    {"tenant_id", K::kChoice, T::kString, "multi-tenant namespaces are not built here", "default"},
    {"enable_offload", K::kNoEffect, T::kBool,
     "the client's disk tier is on whenever [store] ssd_offload_path "
     "(MOONCAKE_OFFLOAD_FILE_STORAGE_PATH) is set"},
    {"start_offload_rpc_server", K::kNoEffect, T::kBool,
     "disk-tier reads are served on the client's data port"},
};

Status Invalid(const std::string& source, std::string_view value, const std::string& why) {
  return Error(ErrorCode::INVALID_PARAMS, source + "=" + std::string(value) + ": " + why);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// gflags' spellings of a boolean.
bool ParseBool(std::string_view text, bool* out) {
  std::string t = Lower(text);
  if (t == "true" || t == "1" || t == "yes" || t == "y" || t == "t") return *out = true, true;
  if (t == "false" || t == "0" || t == "no" || t == "n" || t == "f") return *out = false, true;
  return false;
}

bool ParseInt(std::string_view text, long long* out) {
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, *out);
  return !text.empty() && r.ec == std::errc() && r.ptr == end;
}

Status CheckType(const RefFlag& f, std::string_view value, const std::string& source) {
  long long n = 0;
  bool b = false;
  switch (f.type) {
    case T::kBool:
      if (!ParseBool(value, &b)) return Invalid(source, value, "not a boolean (true or false)");
      break;
    case T::kInt:
      if (!ParseInt(value, &n)) return Invalid(source, value, "not a whole number");
      break;
    case T::kUint:
      if (!ParseInt(value, &n) || n < 0) {
        return Invalid(source, value, "not a whole number of zero or more");
      }
      break;
    case T::kDouble: {
      std::string text(value);
      char* end = nullptr;
      std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) {
        return Invalid(source, value, "not a number");
      }
      break;
    }
    case T::kString: break;
  }
  return Status::Ok();
}

std::string ListText(std::string_view list) {
  std::string out(list);
  std::replace(out.begin(), out.end(), '|', ',');
  return out;
}

const Setting* SettingOf(std::string_view dotted) {
  size_t dot = dotted.find('.');
  return FindSetting(dotted.substr(0, dot), dotted.substr(dot + 1));
}

// The IPv4 address of interface `name`, as the reference resolves rpc_interface.
Result<std::string> InterfaceAddress(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error(ErrorCode::INTERNAL_ERROR, "getifaddrs failed");
  std::string found;
  bool seen = false;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr || name != a->ifa_name) continue;
    seen = true;
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) {
      found = text;
      break;
    }
  }
  freeifaddrs(list);
  if (!found.empty()) return found;
  return Error(ErrorCode::INVALID_PARAMS,
               seen ? "interface has no IPv4 address" : "no such network interface");
}

std::string Accepted(const std::string& source, std::string_view value, const char* what) {
  return source + "=" + std::string(value) + ": accepted for compatibility with the reference's "
         "mooncake_master; " + what;
}

// A registry setting of the sections the master reads, by its reference
// spelling: its key, or one of its extra flag names without the dashes.
const Setting* MasterSettingByRefName(std::string_view name) {
  for (const Setting& s : AllSettings()) {
    if ((s.section & (kMaster | kHa | kCluster | kLog)) == 0) continue;
    if (name == s.key) return &s;
    if (s.flags != nullptr && ListHas(s.flags, ',', "--" + std::string(name))) return &s;
  }
  return nullptr;
}

}  // namespace

std::span<const RefFlag> RefMasterFlags() { return kFlags; }

std::span<const RefFlag> RefClientFlags() { return kClientFlags; }

const RefFlag* FindRefMasterFlag(std::string_view name) {
  for (const RefFlag& f : kFlags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

Status ApplyRefFlag(const RefFlag& f, std::string_view value, const std::string& source,
                    Config& config, std::vector<std::string>& notes) {
  MC_RETURN_IF_ERROR(CheckType(f, value, source));
  switch (f.kind) {
    case K::kNoEffect:
      notes.push_back(Accepted(source, value, (std::string("no effect here: ") + f.why).c_str()));
      return Status::Ok();
    case K::kOffOnly: {
      bool on = false;
      if (f.type == T::kBool) {
        ParseBool(value, &on);
      } else {
        on = !value.empty();
      }
      if (on) return Invalid(source, value, std::string(f.why) + " (refused rather than ignored)");
      return Status::Ok();
    }
    case K::kChoice:
      if (ListHas(f.choices, '|', value)) {
        notes.push_back(Accepted(source, value, f.why));
        return Status::Ok();
      }
      if (f.refused != nullptr && ListHas(f.refused, '|', value)) return Invalid(source, value, f.why);
      if (std::string_view(f.choices).find('|') == std::string_view::npos) {
        return Invalid(source, value, std::string(f.why) + " (only " + f.choices + ")");
      }
      return Invalid(source, value, "expected one of " + ListText(f.choices));
    case K::kSetting: {
      if (value.empty()) return Status::Ok();  // the reference's "unset"
      const Setting* s = SettingOf(f.setting);
      Status st = SetFromText(*s, value, config);
      if (!st.ok()) return Invalid(source, value, st.message());
      return Status::Ok();
    }
    case K::kInterface: {
      if (value.empty()) return Status::Ok();
      auto addr = InterfaceAddress(std::string(value));
      if (!addr.ok()) return Invalid(source, value, addr.status().message());
      config.master.rpc_address = *addr;
      notes.push_back(source + "=" + std::string(value) + ": RPC address " + *addr);
      return Status::Ok();
    }
    case K::kLogVerbosity: {
      long long v = 0;
      ParseInt(value, &v);
      if (v >= 1) config.log.level = "debug";
      return Status::Ok();
    }
    case K::kLogMinLevel: {
      long long v = 0;
      ParseInt(value, &v);
      if (v < 0 || v > 3) return Invalid(source, value, "expected 0 (INFO) to 3 (FATAL)");
      static const char* const kLevels[] = {"info", "warn", "error", "error"};
      config.log.level = kLevels[v];
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status ApplyRefMasterJson(std::string_view text, const std::string& source, Config& config,
                          std::vector<std::string>& notes) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return Error(ErrorCode::INVALID_PARAMS, source + ": " + doc.status().message());
  if (doc->kind != JsonValue::Kind::kObject) {
    return Error(ErrorCode::INVALID_PARAMS, source + ": expected a JSON object");
  }
  // The reference runs HA only with enable_ha; here HA runs whenever etcd is
  // set, so the file's etcd endpoints count only when it enables HA (its
  // shipped master.json lists endpoints with HA off).
  const JsonValue& enable_ha = (*doc)["enable_ha"];
  bool file_enables_ha = enable_ha.kind == JsonValue::Kind::kBool && enable_ha.boolean;
  std::vector<std::string> unknown;
  for (const auto& [key, v] : doc->members) {
    std::string name = key == "client_live_ttl_sec" ? std::string("client_ttl") : key;
    if (!file_enables_ha && (name == "etcd_endpoints" || name == "ha_backend_connstring")) {
      if (v.kind == JsonValue::Kind::kString && !v.text.empty()) {
        notes.push_back(source + ": " + key + "=" + v.text +
                        ": not used, the file does not set enable_ha (HA runs here whenever "
                        "[ha] etcd is set)");
      }
      continue;
    }
    const RefFlag* ref = FindRefMasterFlag(name);
    const Setting* s = ref == nullptr ? MasterSettingByRefName(name) : nullptr;
    if (ref == nullptr && s == nullptr) {
      unknown.push_back(key);
      continue;
    }
    if (v.kind == JsonValue::Kind::kNull) continue;
    if (v.kind == JsonValue::Kind::kArray || v.kind == JsonValue::Kind::kObject) {
      return Error(ErrorCode::INVALID_PARAMS, source + ": " + key + ": expected a single value");
    }
    std::string value =
        v.kind == JsonValue::Kind::kBool ? (v.boolean ? "true" : "false") : v.text;
    std::string where = source + ": " + key;
    if (ref != nullptr) {
      if (ref->name == std::string_view("config_path")) continue;  // no nesting
      MC_RETURN_IF_ERROR(ApplyRefFlag(*ref, value, where, config, notes));
      continue;
    }
    Status st = SetFromText(*s, value, config);
    if (!st.ok()) return Error(ErrorCode::INVALID_PARAMS, where + ": " + st.message());
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& k : unknown) list += (list.empty() ? "" : ", ") + k;
    return Error(ErrorCode::INVALID_PARAMS,
                 source + ": unknown key" + (unknown.size() > 1 ? "s " : " ") + list +
                     " (not a flag of the reference's mooncake_master nor a setting here)");
  }
  return Status::Ok();
}

void NormalizeGflagsArgs(std::vector<std::string>& args) {
  auto is_bool = [](std::string_view name) {
    if (const RefFlag* f = FindRefMasterFlag(name)) return f->type == T::kBool;
    for (const RefFlag& f : kClientFlags) {
      if (name == f.name) return f.type == T::kBool;
    }
    const Setting* s = MasterSettingByRefName(name);
    return s != nullptr && s->type == Type::kBool;
  };
  for (std::string& a : args) {
    if (a == "--") break;
    // -port=50051, -v=1, -enable_ha: one dash before a long name.
    bool one_dash = a.size() >= 2 && a[0] == '-' && a[1] != '-' &&
                    std::isalpha(static_cast<unsigned char>(a[1]));
    if (one_dash && a != "-h" && a.rfind("-h=", 0) != 0) a = "-" + a;
    // --noenable_ha: gflags' negation of a boolean.
    bool negated = a.rfind("--no", 0) == 0 && a.size() > 4 && a[4] != '-' &&
                   a.find('=') == std::string::npos;
    if (negated && is_bool(std::string_view(a).substr(4))) {
      a = "--" + a.substr(4) + "=false";
    }
  }
}

}  // namespace mc::config
