#include "engine/engine_config.h"

#include <mutex>
#include <set>
#include <string_view>

#include "common/log.h"
#include "config/registry.h"

namespace mc::engine {

namespace {

// The setting a setup() key names: its mooncake.json key, the reference
// Python argument names, or one of ours.
const config::Setting* SettingFor(std::string_view key) {
  if (key == "master_server_addr") key = "master_server_address";
  if (key == "rdma_devices") key = "device_name";
  for (const config::Setting& s : config::AllSettings()) {
    if (s.json_key != nullptr && key == s.json_key) return &s;
  }
  if (key == "auth_token") return config::FindSetting("cluster", "auth_token");
  if (key == "tcp_streams") return config::FindSetting("client", "tcp_streams");
  if (key == "shm") return config::FindSetting("cluster", "shm");
  if (key == "log_level") return config::FindSetting("log", "level");
  // TLS: tls_cert, tls_key, tls_ca, tls_verify_peer, tls_min_version.
  if (key.starts_with("tls_")) return config::FindSetting("tls", key.substr(4));
  return nullptr;
}

// setup() keywords of the reference whose feature is not built here: the
// value that asks for nothing, and what a different one would do.
struct PlannedKey {
  std::string_view key;
  std::string_view idle;  // "" = any value asks for the feature
  std::string_view would;
};
constexpr PlannedKey kPlannedKeys[] = {
    {"engine", "", "share the caller's TransferEngine; this store moves bytes itself"},
    {"tenant_id", "default", "keep this tenant's keys and quota apart from other tenants'"},
    {"ipc_socket_path", "", "let dummy clients attach over this Unix socket"},
};

// Says once per process and key, at INFO, that a planned key was given.
// True when `key` is one of them (it then sets nothing).
bool TellPlanned(const std::string& key, const std::string& value) {
  for (const PlannedKey& p : kPlannedKeys) {
    if (key != p.key) continue;
    const bool asks = value != p.idle && !value.empty();
    static std::mutex mu;
    static std::set<std::string, std::less<>> told;
    std::lock_guard lock(mu);
    if (asks && told.insert(key).second) {
      MC_LOG(INFO) << "setup: " << key << "=" << value << " accepted; not built yet (it would "
                   << p.would << "); see mooncake-python(3)";
    }
    return true;
  }
  return false;
}

bool SsdOffloadEnabled(const std::map<std::string, std::string>& given) {
  auto it = given.find("enable_ssd_offload");
  return it != given.end() && (it->second == "true" || it->second == "1");
}

}  // namespace

Result<Config> ResolveSetupConfig(const std::map<std::string, std::string>& given,
                                  const config::GetEnvFn& getenv) {
  config::Sources sources;
  sources.getenv = getenv;
  MC_ASSIGN_OR_RETURN(Config config, config::LoadConfig(sources));
  for (const auto& [key, value] : given) {
    if (TellPlanned(key, value)) continue;
    // The disk tier: ssd_offload_path counts only with enable_ssd_offload
    // true (the reference's pair), which then needs a path.
    if (key == "enable_ssd_offload") continue;
    // An empty path (the binding's default) leaves the environment's.
    if (key == "ssd_offload_path" && (!SsdOffloadEnabled(given) || value.empty())) continue;
    // The client HTTP API's keys: engine_http.h reads them.
    if (key == "enable_client_http_server" || key == "client_http_port") continue;
    const config::Setting* s = SettingFor(key);
    if (s == nullptr) {
      MC_LOG(DEBUG) << "setup: ignoring '" << key << "' (not used by this client)";
      continue;
    }
    // An empty value means "not given" (engines pass "" for rdma_devices).
    if (value.empty() && s->type != config::Type::kString) continue;
    Status st = config::SetFromText(*s, value, config);
    if (!st.ok()) return Error(ErrorCode::INVALID_PARAMS, key + ": " + st.message());
  }
  if (SsdOffloadEnabled(given) && config.store.ssd_offload_path.empty())
    return Error(ErrorCode::INVALID_PARAMS,
                 "enable_ssd_offload=True needs ssd_offload_path (or MOONCAKE_SSD_OFFLOAD_PATH, "
                 "or the reference's MOONCAKE_OFFLOAD_FILE_STORAGE_PATH)");
  return config;
}

}  // namespace mc::engine
