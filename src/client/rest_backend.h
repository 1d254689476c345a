// ClientRestBackend: the HTTP API's operations (rest/rest_server.h) over a
// connected Client, for every process that mounts the API on one: the
// embedded client (engine, setup(enable_client_http_server=True)) and
// `mooncake client --http-port`. The client must outlive it and the
// RestServer using it (stop the server before dropping the client).
// Thread-safe as the Client is.
#pragma once

#include <functional>

#include "client/client.h"
#include "rest/rest_server.h"

namespace mc::client {

class ClientRestBackend final : public rest::RestBackend {
 public:
  // `extra_health`: what else must be well for /health to say healthy (the
  // engine's own segments); empty: only the master's reachability.
  explicit ClientRestBackend(Client& client, std::function<Status()> extra_health = {})
      : client_(client), extra_health_(std::move(extra_health)) {}

  Status Put(const std::string& key, std::span<const uint8_t> value) override;
  Result<std::string> Get(const std::string& key) override;
  Result<bool> Exists(const std::string& key) override;
  Status Remove(const std::string& key) override;
  Result<int64_t> RemoveAll() override;
  Status Health() override;
  std::string MetricsText() override;
  std::string SummaryText() override;

 private:
  Client& client_;
  std::function<Status()> extra_health_;
};

}  // namespace mc::client
