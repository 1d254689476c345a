// Helpers shared by the transfer unit tests: a seeded RNG (prints its seed,
// MC_SEED replays) and a store-like fixture (segment + TCP data server).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/test_seed.h"
#include "transfer/segment.h"
#include "transfer/tcp_server.h"

namespace mc::transfer::testing {

// One seed for the whole transfer test binary; each test offsets it.
inline uint64_t TestSeed() {
  static const uint64_t seed = mc::TestSeed("transfer tests");
  return seed;
}

inline std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t len) {
  std::vector<uint8_t> v(len);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < len; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

struct Store {
  std::unique_ptr<Segment> segment;
  std::unique_ptr<TcpDataServer> server;
  Endpoint endpoint;

  static Store Make(uint64_t size_bytes, AccessCheck check = AllowAll(),
                    TcpDataServerOptions options = {},
                    SegmentBacking backing = SegmentBacking::kMemfd) {
    Store s;
    SegmentOptions so;
    so.size_bytes = size_bytes;
    so.backing = backing;
    auto seg = Segment::Create(so);
    if (!seg.ok()) std::abort();
    s.segment = std::move(*seg);
    options.listen_host = "127.0.0.1";
    options.port = 0;
    auto srv = TcpDataServer::Start(s.segment->base(), s.segment->size_bytes(), std::move(check),
                                    std::move(options));
    if (!srv.ok()) std::abort();
    s.server = std::move(*srv);
    s.endpoint.host = "127.0.0.1";
    s.endpoint.port = s.server->port();
    s.endpoint.shm_path = s.segment->shm_path();
    return s;
  }
};

}  // namespace mc::transfer::testing
