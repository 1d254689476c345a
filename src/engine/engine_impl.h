// Store::Impl and the helpers engine.cc shares with engine_session.cc and
// engine_segments.cc (libmooncake's internals; not installed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/result.h"
#include "config/config.h"
#include "mooncake/client.h"
#include "msg/messages.h"
#include "store/segment_host.h"

namespace mc::rest {
class RestServer;
}
namespace mc::client {
class ClientRestBackend;
class DummyClient;
}

namespace mooncake {

namespace internal {

int Code(const mc::Status& st);
// OBJECT_ALREADY_EXISTS is 0: the first writer's object stays as it was.
int PutCode(const mc::Status& st);
bool KeyOk(const std::string& key);
mc::Status CheckKeys(const std::vector<std::string>& keys);
// NOT_SUPPORTED for NVMe-oF replicas; INVALID_PARAMS for a bad replica
// count or group_ids not one per key (`keys` keys in the put).
mc::Status CheckConfig(const ReplicateConfig& c, size_t keys);
mc::msg::PutOptions ToOptions(const ReplicateConfig& c);
// A segment of config.store.global_segment_size_bytes for client `id`,
// mounted (a few attempts) and serving. With no store port configured its
// data port is a free one in 12300..14300, the reference's range (so its
// name looks like the reference's), else any. `port_is_a_name`: the port
// came from local_hostname ("host:port"), so when it is in use another is
// taken as if none was given (the segment is named after that one).
mc::Result<std::unique_ptr<mc::store::SegmentHost>> StartHost(const mc::Config& config,
                                                              mc::msg::ClientId id,
                                                              bool port_is_a_name = false);

struct HttpSettings;

}  // namespace internal

struct Store::Impl {
  // Held shared by every call and exclusively by Setup and Close, so Close
  // waits for calls in flight and no call sees a half-built client.
  mutable std::shared_mutex state_mu;
  std::unique_ptr<mc::client::Client> client;
  std::string hostname;
  mc::Config resolved;  // the setup's resolved config (extra segments use it)
  // SetupDummy's client (also `client`); its pool counts as registered.
  mc::client::DummyClient* dummy = nullptr;
  uintptr_t pool_base = 0;
  size_t pool_size = 0;

  // Segments this process serves, by name: setup's and any allocated later.
  std::mutex hosts_mu;
  std::map<std::string, std::unique_ptr<mc::store::SegmentHost>> hosts;

  // Registered caller memory: start address -> size.
  mutable std::shared_mutex buf_mu;
  std::map<uintptr_t, size_t> buffers;

  // Sessions: a put's staged bytes until PutSessionEnd; a get's copy of the
  // object until GetSessionEnd.
  struct PutSession {
    std::vector<uint8_t> bytes;
    ReplicateConfig config;
    std::shared_mutex mu;  // shared by range copies, exclusive at end/revoke
    bool ended = false;    // under mu: taken by end or revoke
  };
  std::mutex session_mu;
  std::map<std::string, std::shared_ptr<PutSession>> put_sessions;
  std::map<std::string, std::shared_ptr<const std::vector<uint8_t>>> get_sessions;

  bool Registered(const void* ptr, size_t size) const {
    if (ptr == nullptr || size == 0) return false;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    return size <= PoolRoom(p) || size <= ExplicitRoom(p);
  }
  // Bytes from `p` to the end of the dummy's pool (0 outside it).
  size_t PoolRoom(uintptr_t p) const {
    return p >= pool_base && p - pool_base < pool_size ? pool_size - (p - pool_base) : 0;
  }
  // Bytes from `p` to the end of the register_buffer region holding it (0
  // when none does).
  size_t ExplicitRoom(uintptr_t p) const {
    std::shared_lock lock(buf_mu);
    auto it = buffers.upper_bound(p);
    if (it == buffers.begin()) return 0;
    --it;
    return p - it->first < it->second ? it->second - (p - it->first) : 0;
  }

  // Bytes from `ptr` to the end of the memory registered for it: the
  // register_buffer region holding it, else (a dummy) the pool; 0 when
  // neither does. A ranged call whose offsets count from a buffer's start
  // stays inside that buffer's registration, as the reference checks.
  size_t RegisteredRoom(const void* ptr) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    if (p == 0) return 0;
    const size_t explicit_room = ExplicitRoom(p);
    return explicit_room != 0 ? explicit_room : PoolRoom(p);
  }

  // The client HTTP API (engine_http.h), when setup asked for it. Stopped
  // before the state lock is taken by Close, so no request waits on it.
  std::mutex http_mu;
  std::unique_ptr<mc::client::ClientRestBackend> http_backend;
  std::unique_ptr<mc::rest::RestServer> http;

  Impl();
  ~Impl();
  int Open(const SetupConfig& given);
  int OpenDummy(size_t pool_size, const std::string& socket_path);
  void Shut();
  void StartHttp(const internal::HttpSettings& settings);
  void StopHttp();
  void ShutDummy();
};

// Every data call: shared state lock, then INVALID_PARAMS (or `fail`) when
// not set up. The macro keeps that one line per call.
#define MC_ENGINE_CLIENT(fail)                   \
  std::shared_lock state_lock(impl_->state_mu); \
  if (!impl_->client) return fail;              \
  mc::client::Client& cl = *impl_->client

}  // namespace mooncake
