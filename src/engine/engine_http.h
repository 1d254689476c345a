// The embedded client's HTTP API (rest/rest_server.h) that setup() starts
// when given enable_client_http_server=true, on client_http_port (the
// reference's names; its default 9300, 0 for any free port). The reference
// service's environment names MOONCAKE_ENABLE_CLIENT_HTTP_SERVER and
// MOONCAKE_CLIENT_HTTP_PORT ask for it too. It uses the cluster's auth
// token and [tls] like every other port. Like the reference, a port that
// cannot be bound is logged and setup goes on without the API.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "config/sources.h"
#include "mooncake/client.h"

namespace mooncake::internal {

inline constexpr uint16_t kDefaultClientHttpPort = 9300;  // the reference's

struct HttpSettings {
  bool enabled = false;
  uint16_t port = kDefaultClientHttpPort;
};

// INVALID_PARAMS naming the key for a flag that is not true/false or a port
// outside 0..65535.
mc::Result<HttpSettings> ParseHttpSettings(const SetupConfig& given, const mc::config::GetEnvFn& getenv);

// Whether `key` is one ParseHttpSettings reads (the config resolution skips them).
bool IsHttpSetupKey(std::string_view key);

}  // namespace mooncake::internal
