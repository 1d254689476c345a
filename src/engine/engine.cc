// mooncake::Store over mc::client::Client (bytes and metadata) and
// mc::store::SegmentHost (the memory this process contributes).
#include "mooncake/client.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "client/client.h"
#include "common/crypto.h"
#include "common/host_identity.h"
#include "common/log.h"
#include "engine/engine_config.h"
#include "engine/engine_http.h"
#include "client/rest_backend.h"
#include "rest/rest_server.h"
#include "engine/engine_impl.h"
#include "common/ceilings.h"
#include "msg/messages.h"
#include "store/segment_host.h"

namespace mooncake {

namespace internal {

using mc::ErrorCode;
using mc::Status;

int Code(const Status& st) { return static_cast<int>(st.code()); }

// The wire bounds every key and batch (the master applies its own, smaller
// max_key_bytes and max_batch and answers INVALID_KEY / INVALID_PARAMS).
constexpr size_t kMaxKeyBytes = mc::kMaxStringBytes;
constexpr size_t kMaxBatchKeys = mc::kMaxBatchItems;
// Parts of one object in put_parts / the multi-buffer calls.
constexpr size_t kMaxPartsPerObject = 4096;

bool KeyOk(const std::string& key) { return !key.empty() && key.size() <= kMaxKeyBytes; }

Status CheckKeys(const std::vector<std::string>& keys) {
  if (keys.size() > kMaxBatchKeys) {
    return mc::Error(ErrorCode::INVALID_PARAMS, "batch of " + std::to_string(keys.size()) +
                                                    " keys is over the limit");
  }
  for (const auto& k : keys) {
    if (!KeyOk(k)) return mc::Error(ErrorCode::INVALID_KEY, "empty or too long key");
  }
  return Status::Ok();
}

mc::msg::PutOptions ToOptions(const ReplicateConfig& c) {
  mc::msg::PutOptions o;
  o.replicas = static_cast<uint32_t>(std::min<size_t>(c.replica_num, UINT32_MAX));
  o.soft_pin = c.with_soft_pin || c.soft_pin_action == SoftPinAction::kEnable;
  o.placement.soft_pin_ttl_ms = o.soft_pin ? c.soft_pin_ttl_ms.value_or(0) : 0;
  o.placement.hard_pin = c.with_hard_pin;
  if (!c.preferred_segments.empty()) {
    o.placement.preferred_segments = c.preferred_segments;
  } else if (!c.preferred_segment.empty()) {
    o.placement.preferred_segments = {c.preferred_segment};
  }
  if (c.prefer_alloc_in_same_node) o.placement.preferred_host = mc::HostIdentity();
  return o;
}

// `keys`: how many keys the put carries (group_ids needs one per key).
Status CheckConfig(const ReplicateConfig& c, size_t keys) {
  if (c.nof_replica_num > 0 || !c.preferred_nof_segments.empty()) {
    return mc::Error(ErrorCode::NOT_SUPPORTED, "NVMe-oF replicas are not supported");
  }
  if (c.dfs_replica_num > 0) {
    return mc::Error(ErrorCode::NOT_SUPPORTED, "DFS replicas are not supported");
  }
  // As the reference's newest master: a TTL needs the pin enabled (with
  // with_soft_pin, the release's spelling, or ENABLE), and enabling and
  // disabling at once is a contradiction.
  const bool enable = c.with_soft_pin || c.soft_pin_action == SoftPinAction::kEnable;
  if ((!enable && c.soft_pin_ttl_ms.has_value()) ||
      (c.with_soft_pin && c.soft_pin_action == SoftPinAction::kDisable)) {
    return mc::Error(ErrorCode::INVALID_PARAMS, "soft_pin_ttl_ms needs the soft pin enabled");
  }
  if (c.group_ids.has_value() && c.group_ids->size() != keys) {
    return mc::Error(ErrorCode::INVALID_PARAMS, "group_ids must give one group per key");
  }
  if (c.replica_num == 0 || c.replica_num > mc::kMaxReplicas) {
    return mc::Error(ErrorCode::INVALID_PARAMS, "replica_num must be 1.." +
                                                    std::to_string(mc::kMaxReplicas));
  }
  if (c.preferred_segments.size() > mc::kMaxReplicas) {
    return mc::Error(ErrorCode::INVALID_PARAMS, "more preferred_segments than replicas allowed");
  }
  return Status::Ok();
}

// A put of a key that exists is a success that leaves the stored object as
// it was (the reference's convention): the first writer's bytes stay.
int PutCode(const Status& st) {
  return st.code() == ErrorCode::OBJECT_ALREADY_EXISTS ? kOk : Code(st);
}

}  // namespace internal

using namespace internal;

Store::Impl::Impl() = default;
Store::Impl::~Impl() { StopHttp(); }

int Store::Impl::Open(const SetupConfig& given) {
  auto http_settings = internal::ParseHttpSettings(given, [](const char* n) { return std::getenv(n); });
  if (!http_settings.ok()) {
    MC_LOG(ERROR) << "setup: " << http_settings.status().message();
    return Code(http_settings.status());
  }
  auto config = mc::engine::ResolveSetupConfig(given, [](const char* n) { return std::getenv(n); });
  if (!config.ok()) {
    MC_LOG(ERROR) << "setup: " << config.status().message();
    return Code(config.status());
  }
  mc::LogLevel level;
  if (mc::ParseLogLevel(config->log.level, &level)) mc::SetLogLevel(level);
  // The reference takes "host:port" as local_hostname, the port being its
  // transfer engine's: here it becomes the segment's data port, so the
  // segment keeps the name the caller gave.
  std::string& local = config->cluster.local_hostname;
  bool port_is_a_name = false;
  if (auto colon = local.rfind(':');
      colon != std::string::npos && local.find(':') == colon && config->store.port == 0 &&
      config->store.global_segment_size_bytes > 0) {
    const std::string digits = local.substr(colon + 1);
    const long port = digits.empty() || digits.size() > 5 ||
                              digits.find_first_not_of("0123456789") != std::string::npos
                          ? 0
                          : std::stol(digits);
    if (port > 0 && port <= 65535) {
      config->store.port = static_cast<uint16_t>(port);
      local.resize(colon);
      port_is_a_name = true;
    }
  }
  auto c = mc::client::Client::Connect(*config);
  if (!c.ok()) {
    MC_LOG(ERROR) << "setup: " << c.status().ToString();
    return Code(c.status());
  }
  std::unique_ptr<mc::store::SegmentHost> h;
  if (config->store.global_segment_size_bytes > 0) {
    auto made = StartHost(*config, (*c)->id(), port_is_a_name);
    if (!made.ok()) {
      MC_LOG(ERROR) << "setup: " << made.status().ToString();
      return Code(made.status());
    }
    h = std::move(*made);
    MC_LOG(INFO) << "this process contributes segment " << h->Describe();
  }
  client = std::move(*c);
  hostname = h ? h->name() : config->cluster.local_hostname;
  if (h) {
    const std::string name = h->name();
    hosts.emplace(name, std::move(h));
  }
  resolved = *config;
  StartHttp(*http_settings);
  return kOk;
}

void Store::Impl::Shut() {
  ShutDummy();
  {
    std::lock_guard lock(hosts_mu);
    for (auto& [name, h] : hosts) h->Stop();
    hosts.clear();
  }
  {
    std::lock_guard lock(session_mu);
    put_sessions.clear();
    get_sessions.clear();
  }
  client.reset();
  hostname.clear();
}

Store::Store() : impl_(std::make_unique<Impl>()) {}
Store::~Store() { Close(); }

int Store::Setup(const SetupConfig& config) {
  std::unique_lock lock(impl_->state_mu);
  if (impl_->client) {
    MC_LOG(ERROR) << "setup: this store is already set up; close() it first";
    return kInvalidParams;
  }
  return impl_->Open(config);
}

int Store::Close() {
  impl_->StopHttp();  // its requests take the state lock: stop them first
  std::unique_lock lock(impl_->state_mu);
  impl_->Shut();
  return kOk;
}

std::string Store::GetHostname() const {
  std::shared_lock lock(impl_->state_mu);
  return impl_->hostname;
}

int Store::HealthCheck() {
  std::shared_lock lock(impl_->state_mu);
  if (!impl_->client) return 1;
  {
    std::lock_guard lock(impl_->hosts_mu);
    for (const auto& [name, h] : impl_->hosts) {
      if (!h->failure().ok()) return 2;
    }
  }
  return impl_->client->ClusterStatus().ok() ? 0 : 2;
}


int Store::Put(const std::string& key, std::span<const uint8_t> value,
               const ReplicateConfig& config) {
  return PutParts(key, {value}, config);
}

int Store::PutParts(const std::string& key, const std::vector<std::span<const uint8_t>>& parts,
                    const ReplicateConfig& config) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  if (Status st = CheckConfig(config, 1); !st.ok()) return Code(st);
  if (parts.size() > kMaxPartsPerObject) return kInvalidParams;
  auto st = cl.BatchPutParts({key}, {parts}, ToOptions(config));
  return PutCode(st[0]);
}

int Store::PutBatch(const std::vector<std::string>& keys,
                    const std::vector<std::span<const uint8_t>>& values,
                    const ReplicateConfig& config) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (keys.size() != values.size()) return kInvalidParams;
  if (Status st = CheckConfig(config, keys.size()); !st.ok()) return Code(st);
  if (Status st = CheckKeys(keys); !st.ok()) return Code(st);
  if (keys.empty()) return kOk;
  for (const Status& st : cl.BatchPut(keys, values, ToOptions(config))) {
    if (PutCode(st) != kOk) return Code(st);
  }
  return kOk;
}

int64_t Store::Get(const std::string& key, std::vector<uint8_t>* out) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  auto r = cl.Get(key);
  if (!r.ok()) return Code(r.status());
  *out = std::move(*r);
  return static_cast<int64_t>(out->size());
}

std::vector<int64_t> Store::BatchGet(const std::vector<std::string>& keys,
                                     std::vector<std::vector<uint8_t>>* out) {
  out->assign(keys.size(), {});
  MC_ENGINE_CLIENT(std::vector<int64_t>(keys.size(), kInvalidParams));
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int64_t>(keys.size(), Code(st));
  std::vector<int64_t> codes(keys.size(), 0);
  if (keys.empty()) return codes;
  auto r = cl.BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!r[i].ok()) {
      codes[i] = Code(r[i].status());
      continue;
    }
    (*out)[i] = std::move(*r[i]);
    codes[i] = static_cast<int64_t>((*out)[i].size());
  }
  return codes;
}

int Store::RegisterBuffer(void* ptr, size_t size) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (ptr == nullptr || size == 0) return kInvalidParams;
  // protocol rdma: pinned and registered on every NIC once, here.
  mc::Status reg = cl.RegisterBuffer(ptr, size);
  if (!reg.ok()) {
    MC_LOG(ERROR) << "register_buffer: " << reg.ToString();
    return Code(reg);
  }
  std::unique_lock lock(impl_->buf_mu);
  size_t& known = impl_->buffers[reinterpret_cast<uintptr_t>(ptr)];
  known = std::max(known, size);
  return kOk;
}

int Store::UnregisterBuffer(void* ptr) {
  MC_ENGINE_CLIENT(kInvalidParams);
  (void)cl.UnregisterBuffer(ptr);
  std::unique_lock lock(impl_->buf_mu);
  return impl_->buffers.erase(reinterpret_cast<uintptr_t>(ptr)) == 1 ? kOk : kInvalidParams;
}

int Store::PutFrom(const std::string& key, const void* ptr, size_t size,
                   const ReplicateConfig& config) {
  return BatchPutFrom({key}, {const_cast<void*>(ptr)}, {size}, config)[0];
}

int64_t Store::GetInto(const std::string& key, void* ptr, size_t size) {
  return BatchGetInto({key}, {ptr}, {size})[0];
}

namespace {

// Runs the puts of the keys whose `codes` are still 0 (their parts checked)
// and stores each outcome in `codes`. Keys and parts are passed through
// untouched when every key is usable (the common case: no copies).
void RunPuts(mc::client::Client& cl, const std::vector<std::string>& keys,
             std::vector<mc::client::Client::ConstParts>& parts, const ReplicateConfig& config,
             std::vector<int>& codes) {
  std::vector<size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (codes[i] == kOk) index.push_back(i);
  }
  if (index.empty()) return;
  if (index.size() == keys.size()) {
    auto st = cl.BatchPutParts(keys, parts, ToOptions(config));
    for (size_t i = 0; i < keys.size(); ++i) codes[i] = PutCode(st[i]);
    return;
  }
  std::vector<std::string> k;
  std::vector<mc::client::Client::ConstParts> p;
  for (size_t i : index) {
    k.push_back(keys[i]);
    p.push_back(std::move(parts[i]));
  }
  auto st = cl.BatchPutParts(k, p, ToOptions(config));
  for (size_t j = 0; j < index.size(); ++j) codes[index[j]] = PutCode(st[j]);
}

// The same for gets: bytes read or a negative code into `codes`.
void RunGets(mc::client::Client& cl, const std::vector<std::string>& keys,
             std::vector<mc::client::Client::Parts>& parts, std::vector<int64_t>& codes) {
  std::vector<size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (codes[i] == kOk) index.push_back(i);
  }
  if (index.empty()) return;
  auto store = [&](size_t i, const mc::Result<uint64_t>& r) {
    codes[i] = r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
  };
  if (index.size() == keys.size()) {
    auto r = cl.BatchGetIntoParts(keys, parts);
    for (size_t i = 0; i < keys.size(); ++i) store(i, r[i]);
    return;
  }
  std::vector<std::string> k;
  std::vector<mc::client::Client::Parts> p;
  for (size_t i : index) {
    k.push_back(keys[i]);
    p.push_back(std::move(parts[i]));
  }
  auto r = cl.BatchGetIntoParts(k, p);
  for (size_t j = 0; j < index.size(); ++j) store(index[j], r[j]);
}

// Key i's parts from its buffers, each inside registered memory; the key's
// code stays 0 when they are usable, else INVALID_PARAMS.
template <typename Span, typename IsRegistered>
int MakeParts(const void* const* ptrs, const size_t* sizes, size_t n,
              const IsRegistered& registered, std::vector<Span>* parts) {
  if (n == 0 || n > kMaxPartsPerObject) return kInvalidParams;
  parts->reserve(n);
  for (size_t j = 0; j < n; ++j) {
    if (!registered(ptrs[j], sizes[j])) return kInvalidParams;
    parts->emplace_back(static_cast<typename Span::pointer>(const_cast<void*>(ptrs[j])),
                        sizes[j]);
  }
  return kOk;
}

}  // namespace

std::vector<int> Store::BatchPutFrom(const std::vector<std::string>& keys,
                                     const std::vector<void*>& ptrs,
                                     const std::vector<size_t>& sizes,
                                     const ReplicateConfig& config) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  if (Status st = CheckConfig(config, keys.size()); !st.ok()) {
    return std::vector<int>(keys.size(), Code(st));
  }
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int>(keys.size(), Code(st));
  auto registered = [this](const void* p, size_t n) { return impl_->Registered(p, n); };
  std::vector<mc::client::Client::ConstParts> parts(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = MakeParts(&ptrs[i], &sizes[i], 1, registered, &parts[i]);
  }
  RunPuts(cl, keys, parts, config, out);
  return out;
}

std::vector<int64_t> Store::BatchGetInto(const std::vector<std::string>& keys,
                                         const std::vector<void*>& ptrs,
                                         const std::vector<size_t>& sizes) {
  std::vector<int64_t> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int64_t>(keys.size(), Code(st));
  auto registered = [this](const void* p, size_t n) { return impl_->Registered(p, n); };
  std::vector<mc::client::Client::Parts> parts(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = MakeParts(&ptrs[i], &sizes[i], 1, registered, &parts[i]);
  }
  RunGets(cl, keys, parts, out);
  return out;
}

std::vector<int> Store::BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<void*>>& ptrs,
                                                 const std::vector<std::vector<size_t>>& sizes,
                                                 const ReplicateConfig& config) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  if (Status st = CheckConfig(config, keys.size()); !st.ok()) {
    return std::vector<int>(keys.size(), Code(st));
  }
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int>(keys.size(), Code(st));
  auto registered = [this](const void* p, size_t n) { return impl_->Registered(p, n); };
  std::vector<mc::client::Client::ConstParts> parts(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = ptrs[i].size() != sizes[i].size()
                 ? kInvalidParams
                 : MakeParts(ptrs[i].data(), sizes[i].data(), ptrs[i].size(), registered, &parts[i]);
  }
  RunPuts(cl, keys, parts, config, out);
  return out;
}

std::vector<int64_t> Store::BatchGetIntoMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<void*>>& ptrs,
    const std::vector<std::vector<size_t>>& sizes) {
  std::vector<int64_t> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int64_t>(keys.size(), Code(st));
  auto registered = [this](const void* p, size_t n) { return impl_->Registered(p, n); };
  std::vector<mc::client::Client::Parts> parts(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = ptrs[i].size() != sizes[i].size()
                 ? kInvalidParams
                 : MakeParts(ptrs[i].data(), sizes[i].data(), ptrs[i].size(), registered, &parts[i]);
  }
  RunGets(cl, keys, parts, out);
  return out;
}

int Store::IsExist(const std::string& key) { return BatchIsExist({key})[0]; }

std::vector<int> Store::BatchIsExist(const std::vector<std::string>& keys) {
  MC_ENGINE_CLIENT(std::vector<int>(keys.size(), kInvalidParams));
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int>(keys.size(), Code(st));
  std::vector<int> out(keys.size(), 0);
  if (keys.empty()) return out;
  if (keys.size() == 1) {
    auto r = cl.Exists(keys[0]);
    out[0] = r.ok() ? (*r ? 1 : 0) : Code(r.status());
    return out;
  }
  auto r = cl.BatchExists(keys);
  for (size_t i = 0; i < keys.size(); ++i) out[i] = r[i].ok() ? (*r[i] ? 1 : 0) : Code(r[i].status());
  return out;
}

int64_t Store::GetSize(const std::string& key) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  auto r = cl.Size(key);
  return r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
}

int Store::Remove(const std::string& key, bool force) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  return Code(cl.Remove(key, force));
}

std::vector<int> Store::BatchRemove(const std::vector<std::string>& keys, bool force) {
  MC_ENGINE_CLIENT(std::vector<int>(keys.size(), kInvalidParams));
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int>(keys.size(), Code(st));
  std::vector<int> out;
  for (const Status& st : cl.BatchRemove(keys, force)) out.push_back(Code(st));
  return out;
}

int64_t Store::RemoveAll(bool force) {
  MC_ENGINE_CLIENT(kInvalidParams);
  auto r = cl.RemoveAll(force);
  return r.ok() ? static_cast<int64_t>(*r) : Code(r.status());
}

const char* ErrorName(int code) {
  return mc::ErrorCodeName(static_cast<ErrorCode>(code)).data();
}

}  // namespace mooncake
