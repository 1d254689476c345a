#include "engine/engine_config.h"

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

}  // namespace

Result<Config> ResolveSetupConfig(const std::map<std::string, std::string>& given,
                                  const config::GetEnvFn& getenv) {
  config::Sources sources;
  sources.getenv = getenv;
  MC_ASSIGN_OR_RETURN(Config config, config::LoadConfig(sources));
  for (const auto& [key, value] : given) {
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
  return config;
}

}  // namespace mc::engine
