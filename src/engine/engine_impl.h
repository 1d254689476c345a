// Store::Impl and the helpers engine.cc shares with engine_ops.cc
// (libmooncake's internals; not installed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/result.h"
#include "mooncake/client.h"
#include "msg/messages.h"
#include "store/segment_host.h"

namespace mooncake {

namespace internal {

int Code(const mc::Status& st);
bool KeyOk(const std::string& key);
mc::Status CheckKeys(const std::vector<std::string>& keys);
// INVALID_PARAMS for a bad replica count (`keys`: keys in the put).
mc::Status CheckConfig(const ReplicateConfig& c, size_t keys);
mc::msg::PutOptions ToOptions(const ReplicateConfig& c);

}  // namespace internal

struct Store::Impl {
  // Held shared by every call and exclusively by Setup and Close, so Close
  // waits for calls in flight and no call sees a half-built client.
  mutable std::shared_mutex state_mu;
  std::unique_ptr<mc::client::Client> client;
  std::unique_ptr<mc::store::SegmentHost> host;
  std::string hostname;

  // Registered caller memory: start address -> size.
  mutable std::shared_mutex buf_mu;
  std::map<uintptr_t, size_t> buffers;

  bool Registered(const void* ptr, size_t size) const {
    if (ptr == nullptr || size == 0) return false;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::shared_lock lock(buf_mu);
    auto it = buffers.upper_bound(p);
    if (it == buffers.begin()) return false;
    --it;
    return p - it->first <= it->second && size <= it->second - (p - it->first);
  }

  int Open(const SetupConfig& given);
  void Shut();
};

// Every data call: shared state lock, then INVALID_PARAMS (or `fail`) when
// not set up. The macro keeps that one line per call.
#define MC_ENGINE_CLIENT(fail)                   \
  std::shared_lock state_lock(impl_->state_mu); \
  if (!impl_->client) return fail;              \
  mc::client::Client& cl = *impl_->client

}  // namespace mooncake
