#include "engine/engine_http.h"

#include <charconv>

#include "client/rest_backend.h"
#include "common/log.h"
#include "engine/engine_impl.h"
#include "rest/rest_server.h"
#include "tls/tls_setup.h"

namespace mooncake::internal {
namespace {

constexpr std::string_view kEnableKey = "enable_client_http_server";
constexpr std::string_view kPortKey = "client_http_port";

// The setup key's value, else the environment's, else null.
const std::string* Given(const SetupConfig& given, std::string_view key, const char* env_name,
                         const mc::config::GetEnvFn& getenv, std::string* env_value) {
  if (auto it = given.find(std::string(key)); it != given.end()) return &it->second;
  const char* env = getenv ? getenv(env_name) : nullptr;
  if (env == nullptr) return nullptr;
  *env_value = env;
  return env_value;
}

}  // namespace

bool IsHttpSetupKey(std::string_view key) { return key == kEnableKey || key == kPortKey; }

mc::Result<HttpSettings> ParseHttpSettings(const SetupConfig& given,
                                           const mc::config::GetEnvFn& getenv) {
  HttpSettings s;
  std::string env;
  if (const std::string* v =
          Given(given, kEnableKey, "MOONCAKE_ENABLE_CLIENT_HTTP_SERVER", getenv, &env)) {
    if (*v != "true" && *v != "false" && *v != "1" && *v != "0") {
      return mc::Error(mc::ErrorCode::INVALID_PARAMS,
                       std::string(kEnableKey) + ": '" + *v + "' is not true or false");
    }
    s.enabled = *v == "true" || *v == "1";
  }
  if (const std::string* v = Given(given, kPortKey, "MOONCAKE_CLIENT_HTTP_PORT", getenv, &env)) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), port);
    if (ec != std::errc() || end != v->data() + v->size() || port > 65535) {
      return mc::Error(mc::ErrorCode::INVALID_PARAMS,
                       std::string(kPortKey) + ": '" + *v + "' is not a port 0..65535");
    }
    s.port = static_cast<uint16_t>(port);
  }
  return s;
}

}  // namespace mooncake::internal

namespace mooncake {

void Store::Impl::StartHttp(const internal::HttpSettings& settings) {
  if (!settings.enabled) return;
  auto tls = mc::ServerTls(resolved.tls, {.listeners = "the client HTTP port"});
  if (!tls.ok()) {
    MC_LOG(WARN) << "client HTTP server not started: " << tls.status().message();
    return;
  }
  auto backend = std::make_unique<mc::client::ClientRestBackend>(*client, [this] {
    std::lock_guard lock(hosts_mu);
    for (const auto& [name, h] : hosts) {
      if (mc::Status st = h->failure(); !st.ok()) return st;
    }
    return mc::Status::Ok();
  });
  mc::rest::RestOptions o;
  o.port = settings.port;
  o.auth_token = resolved.cluster.auth_token;
  o.tls = mc::HttpServerTls(*tls);
  auto server = mc::rest::RestServer::Start(*backend, std::move(o));
  if (!server.ok()) {
    MC_LOG(WARN) << "client HTTP server not started on port " << settings.port << ": "
                 << server.status().message() << "; continuing without HTTP endpoints";
    return;
  }
  std::lock_guard lock(http_mu);
  http_backend = std::move(backend);
  http = std::move(server.value());
}

void Store::Impl::StopHttp() {
  std::lock_guard lock(http_mu);
  if (http) http->Stop();
  http.reset();
  http_backend.reset();
}

}  // namespace mooncake
