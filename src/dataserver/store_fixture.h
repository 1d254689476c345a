// A store-like fixture for the data server's tests: a segment served by a
// TcpDataServer on a free loopback port. The seeded RNG helpers are in
// transfer/transfer_test_util.h.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#include "dataserver/tcp_server.h"
#include "transfer/segment.h"
#include "transfer/transfer_test_util.h"

namespace mc::transfer::testing {

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
    if (!options.epochs.valid()) options.epochs = s.segment->epochs();
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
