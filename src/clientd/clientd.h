// The `mooncake client` process (mooncake-client(1)): the standalone client
// of one host. Connects to the master, contributes the host's segment
// (store's SegmentHost, global_segment_size) and serves the host's engine
// ranks as dummy clients on a Unix socket (DummyServer), so one process
// holds the memory and the connections while the ranks stay small and an
// engine restart does not drop the host's share of the cache. Runs until a
// stop signal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "clientd/dummy_server.h"
#include "common/result.h"
#include "config/config.h"

namespace mc::clientd {

// The reference's service port: the default socket is named after it.
inline constexpr uint16_t kDefaultClientPort = 50052;

struct ClientdOptions {
  uint16_t port = kDefaultClientPort;
  DummyServerOptions dummies;  // socket_path empty: "@mooncake_client_PORT.sock"
  uint64_t global_segment_size_bytes = 0;  // 0: contributes no memory
  uint16_t data_port = 0;                  // the segment's data port; 0: any
  uint32_t threads = 1;                    // accepted for the reference; see the man page
  // Where the HTTP API (issue 30 point 3) is served once it lands; 0: none.
  uint16_t http_port = 0;
};

// "@mooncake_client_PORT.sock".
std::string DefaultSocketPath(uint16_t port);

// Runs until a stop signal (OK) or a setup error.
Status RunClientd(const Config& config, const ClientdOptions& options);

}  // namespace mc::clientd
