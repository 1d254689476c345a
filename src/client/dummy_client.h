// DummyClient: a Client that does little itself. An engine rank attached
// to the host's standalone client (`mooncake client`) forwards every call
// over the client's Unix socket (proto/dummy_ops.h); the standalone client
// runs it with its own Client, segment and connections. Except puts (not
// upserts), which the dummy makes itself with a master connection of its own
// (client/dummy_puts.h), and repeated gets of same-host keys
// (client/dummy_direct.h).
//
// At attach the standalone client creates the dummy's pool (a memfd of
// pool_size_bytes) and passes it over the socket; both processes map it.
// Buffers inside the pool travel as offsets, so put_from/get_into of pool
// memory are zero copy; buffers outside it are staged through a temporary
// range of the pool (one memcpy each way). Alloc()/Free() hand out ranges
// of the pool (alloc_from_mem_pool, MooncakeHostMemAllocator).
//
// When the standalone client goes away every call fails at once with
// RPC_FAIL ("mooncake client at PATH is gone"); the next call tries to
// attach again and, once the client is back, maps the new pool at the same
// address, so buffers keep their addresses (not their contents: the old
// pool died with the old client).
//
// Thread-safe: calls are serialized on the one connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client/client.h"
#include "common/result.h"

namespace mc::client {

struct DummyOptions {
  std::string socket_path;     // "@mooncake_client_50052.sock" or a file path
  uint64_t pool_size_bytes = 0;
  // The longest one call may wait for its reply (a stuck client, not a dead
  // one: a dead one closes the socket and fails the call at once).
  uint64_t call_timeout_us = 120'000'000;
};

// "@mooncake_client_PORT.sock" for "host:PORT" (the reference's name);
// INVALID_PARAMS for an address without a port.
Result<std::string> DummySocketPath(const std::string& server_address);

class DummyClient : public Client {
 public:
  // Attaches (the pool is mapped on return). RPC_FAIL when no client listens.
  static Result<std::unique_ptr<DummyClient>> Connect(const DummyOptions& options);

  // A range of the pool: null when it is full.
  virtual void* Alloc(uint64_t size_bytes) = 0;
  // False for a pointer Alloc did not return.
  virtual bool Free(void* ptr) = 0;
  virtual void* pool_base() const = 0;
  virtual uint64_t pool_size_bytes() const = 0;
  // The standalone client's segment name (get_hostname).
  virtual std::string hostname() const = 0;
};

}  // namespace mc::client
