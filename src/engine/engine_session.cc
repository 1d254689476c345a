// mooncake::Store's ranged and session calls, replica descriptors and the
// put with a metadata prefix (the reference's newer Python methods), over
// the whole-object calls of mc::client::Client.
//
// Sessions and ranges are served from a copy of each object held in this
// process (staged puts, fetched gets): the master has no ranged transfer,
// so these calls move whole objects and copy the ranges in memory. Their
// cost and where they differ from the reference are in mooncake-python(3).
#include <cstring>
#include <set>

#include "common/log.h"
#include "engine/engine_impl.h"

namespace mooncake {

using namespace internal;
using mc::ErrorCode;
using mc::Status;

namespace {

// Bytes one process may hold staged in put sessions or copied for get
// sessions at once; a start beyond it is NO_AVAILABLE_HANDLE.
constexpr uint64_t kMaxSessionBytes = 16ull << 30;
// Ranges in one call's entry (one key, or one buffer and key).
constexpr size_t kMaxRangesPerEntry = 4096;

// [offset, offset + size) inside [0, limit).
bool InRange(size_t offset, size_t size, size_t limit) {
  return offset <= limit && size <= limit - offset;
}

// One key's ranges of a session call: lists of one length, each range
// inside the object (`limit` bytes) and inside registered memory.
bool RangesOk(const Store::Impl& impl, const std::vector<void*>& ptrs,
              const std::vector<size_t>& sizes, const std::vector<size_t>& offsets, size_t limit) {
  const size_t n = ptrs.size();
  if (sizes.size() != n || offsets.size() != n || n > kMaxRangesPerEntry) return false;
  for (size_t k = 0; k < n; ++k) {
    if (!InRange(offsets[k], sizes[k], limit) || !impl.Registered(ptrs[k], sizes[k])) return false;
  }
  return true;
}

uint64_t SessionBytes(const Store::Impl& impl) {
  uint64_t n = 0;
  for (const auto& [k, s] : impl.put_sessions) n += s->bytes.size();
  for (const auto& [k, b] : impl.get_sessions) n += b->size();
  return n;
}

}  // namespace

int Store::GetReplicaDesc(const std::string& key, std::vector<ReplicaInfo>* out) {
  out->clear();
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  // The key's tiers first, which reads nothing: locating a key that only a
  // disk tier holds would have the master stage it into memory, and the
  // answer would then show that passing copy instead of the disk one.
  auto tier = mc::msg::KeyTier::kMemory;
  uint64_t size = 0;
  if (auto t = cl.ListTiered(mc::msg::ListKeysRequest{key, 1, ""});
      t.ok() && !t->list.keys.empty() && t->list.keys[0].key == key && !t->tiers.empty()) {
    tier = static_cast<mc::msg::KeyTier>(t->tiers[0]);
    size = t->list.keys[0].size_bytes;
  }  // else (a key still being written, an older master, a dummy): as a get sees it
  auto disk = [&] {
    ReplicaInfo d;
    d.complete = d.on_disk = true;
    d.disk_size_bytes = size;
    out->push_back(std::move(d));
  };
  if (tier == mc::msg::KeyTier::kDisk) {
    disk();
    return kOk;
  }
  auto r = cl.Locate(key);
  if (!r.ok()) return Code(r.status());
  for (const auto& rep : r->replicas) {
    ReplicaInfo info;
    info.complete = rep.status == mc::msg::ReplicaStatus::kComplete;
    for (const auto& b : rep.buffers) {
      info.buffers.push_back({b.segment_name, b.endpoint, b.offset, b.size_bytes});
    }
    out->push_back(std::move(info));
  }
  if (tier == mc::msg::KeyTier::kBoth) disk();
  return kOk;
}

std::vector<std::vector<std::vector<int64_t>>> Store::GetIntoRanges(
    const std::vector<void*>& buffers, const std::vector<std::vector<std::string>>& all_keys,
    const Ranges3& dst_offsets, const Ranges3& src_offsets, const Ranges3& sizes) {
  // The answer's shape follows all_keys and dst_offsets, as the reference's.
  std::vector<std::vector<std::vector<int64_t>>> out(all_keys.size());
  for (size_t i = 0; i < all_keys.size(); ++i) {
    out[i].resize(all_keys[i].size());
    for (size_t j = 0; j < all_keys[i].size(); ++j) {
      size_t n = i < dst_offsets.size() && j < dst_offsets[i].size() ? dst_offsets[i][j].size() : 0;
      out[i][j].assign(n, kInvalidParams);
    }
  }
  MC_ENGINE_CLIENT(out);
  if (buffers.size() != all_keys.size() || dst_offsets.size() != all_keys.size() ||
      src_offsets.size() != all_keys.size() || sizes.size() != all_keys.size()) {
    return out;
  }
  std::set<std::string> unique;
  for (const auto& keys : all_keys) unique.insert(keys.begin(), keys.end());
  std::vector<std::string> keys(unique.begin(), unique.end());
  if (keys.empty()) return out;
  if (Status st = CheckKeys(keys); !st.ok()) {
    for (auto& per_buffer : out) {
      for (auto& per_key : per_buffer) per_key.assign(per_key.size(), Code(st));
    }
    return out;
  }
  auto objects = cl.BatchGet(keys);
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < keys.size(); ++k) index[keys[k]] = k;
  for (size_t i = 0; i < all_keys.size(); ++i) {
    const size_t room = impl_->RegisteredRoom(buffers[i]);  // offsets count from its start
    for (size_t j = 0; j < all_keys[i].size(); ++j) {
      if (j >= dst_offsets[i].size() || j >= src_offsets[i].size() || j >= sizes[i].size()) {
        continue;
      }
      const auto& obj = objects[index[all_keys[i][j]]];
      const auto& dst = dst_offsets[i][j];
      const auto& src = src_offsets[i][j];
      const auto& len = sizes[i][j];
      if (src.size() != dst.size() || len.size() != dst.size() ||
          dst.size() > kMaxRangesPerEntry) {
        continue;
      }
      for (size_t k = 0; k < dst.size(); ++k) {
        if (!obj.ok()) {
          out[i][j][k] = Code(obj.status());
          continue;
        }
        auto* to = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(buffers[i]) + dst[k]);
        if (!InRange(src[k], len[k], obj->size()) || !InRange(dst[k], len[k], room)) continue;
        std::memcpy(to, obj->data() + src[k], len[k]);
        out[i][j][k] = static_cast<int64_t>(len[k]);
      }
    }
  }
  return out;
}

int Store::PutFromWithMetadata(const std::string& key, const void* ptr, const void* metadata,
                               size_t size, size_t metadata_size, const ReplicateConfig& config) {
  return BatchPutFromMultiBuffers({key}, {{const_cast<void*>(metadata), const_cast<void*>(ptr)}},
                                  {{metadata_size, size}}, config)[0];
}

std::vector<int> Store::PutSessionStart(const std::vector<std::string>& keys,
                                        const std::vector<size_t>& sizes,
                                        const ReplicateConfig& config) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (sizes.size() != keys.size()) return out;
  Status st = CheckConfig(config, keys.size());
  if (st.ok()) st = CheckKeys(keys);
  if (!st.ok()) return std::vector<int>(keys.size(), Code(st));
  if (keys.empty()) return out;
  // A key that exists fails here, as the reference's start does: nothing
  // is staged for it and its object stays as it was.
  auto exists = cl.BatchExists(keys);
  std::lock_guard lock(impl_->session_mu);
  uint64_t held = SessionBytes(*impl_);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!exists[i].ok()) {
      out[i] = Code(exists[i].status());
    } else if (*exists[i]) {
      out[i] = kObjectAlreadyExists;
    } else if (sizes[i] == 0 || impl_->put_sessions.count(keys[i]) != 0) {
      out[i] = kInvalidParams;
    } else if (sizes[i] > kMaxSessionBytes - held) {
      out[i] = kNoAvailableHandle;
    } else {
      auto s = std::make_shared<Impl::PutSession>();
      s->bytes.resize(sizes[i]);
      s->config = config;
      s->config.group_ids.reset();
      impl_->put_sessions.emplace(keys[i], std::move(s));
      held += sizes[i];
      out[i] = kOk;
    }
  }
  return out;
}

std::vector<int> Store::PutSessionWriteRanges(const std::vector<std::string>& keys,
                                              const std::vector<std::vector<void*>>& ptrs,
                                              const std::vector<std::vector<size_t>>& sizes,
                                              const std::vector<std::vector<size_t>>& dst_offsets) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  (void)cl;
  if (ptrs.size() != keys.size() || sizes.size() != keys.size() ||
      dst_offsets.size() != keys.size()) {
    return out;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    std::shared_ptr<Impl::PutSession> s;
    {
      std::lock_guard lock(impl_->session_mu);
      auto it = impl_->put_sessions.find(keys[i]);
      if (it != impl_->put_sessions.end()) s = it->second;
    }
    if (!s || !RangesOk(*impl_, ptrs[i], sizes[i], dst_offsets[i], s->bytes.size())) continue;
    const size_t n = ptrs[i].size();
    // Copies run under the session's own lock, shared: End takes it
    // exclusively, so it never stores a half-copied range.
    std::shared_lock copy_lock(s->mu);
    if (s->ended) continue;
    size_t written = 0;
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(s->bytes.data() + dst_offsets[i][k], ptrs[i][k], sizes[i][k]);
      written += sizes[i][k];
    }
    out[i] = static_cast<int>(std::min<size_t>(written, INT32_MAX));
  }
  return out;
}

namespace {

// Takes the sessions of `keys` out of `sessions`: null where there is none.
template <typename Map>
std::vector<typename Map::mapped_type> TakeSessions(std::mutex& mu, Map& sessions,
                                                    const std::vector<std::string>& keys) {
  std::vector<typename Map::mapped_type> taken(keys.size());
  std::lock_guard lock(mu);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = sessions.find(keys[i]);
    if (it == sessions.end()) continue;
    taken[i] = std::move(it->second);
    sessions.erase(it);
  }
  return taken;
}

}  // namespace

std::vector<int> Store::PutSessionEnd(const std::vector<std::string>& keys) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  auto taken = TakeSessions(impl_->session_mu, impl_->put_sessions, keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!taken[i]) continue;
    std::unique_lock lock(taken[i]->mu);
    taken[i]->ended = true;
    const mc::client::Client::ConstParts parts{std::span<const uint8_t>(taken[i]->bytes)};
    auto st = cl.BatchPutParts({keys[i]}, {parts}, ToOptions(taken[i]->config));
    out[i] = PutCode(st[0]);
  }
  return out;
}

std::vector<int> Store::PutSessionRevoke(const std::vector<std::string>& keys) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  (void)cl;
  auto taken = TakeSessions(impl_->session_mu, impl_->put_sessions, keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!taken[i]) continue;
    std::unique_lock lock(taken[i]->mu);
    taken[i]->ended = true;
    out[i] = kOk;
  }
  return out;
}

std::vector<int> Store::GetSessionStart(const std::vector<std::string>& keys) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (Status st = CheckKeys(keys); !st.ok()) return std::vector<int>(keys.size(), Code(st));
  if (keys.empty()) return out;
  auto objects = cl.BatchGet(keys);
  std::lock_guard lock(impl_->session_mu);
  uint64_t held = SessionBytes(*impl_);
  for (size_t i = 0; i < keys.size(); ++i) {
    impl_->get_sessions.erase(keys[i]);
    if (!objects[i].ok()) {
      out[i] = Code(objects[i].status());
    } else if (objects[i]->size() > kMaxSessionBytes - held) {
      out[i] = kNoAvailableHandle;
    } else {
      held += objects[i]->size();
      impl_->get_sessions[keys[i]] =
          std::make_shared<const std::vector<uint8_t>>(std::move(*objects[i]));
      out[i] = kOk;
    }
  }
  return out;
}

std::vector<int> Store::GetSessionReadRanges(const std::vector<std::string>& keys,
                                             const std::vector<std::vector<void*>>& ptrs,
                                             const std::vector<std::vector<size_t>>& sizes,
                                             const std::vector<std::vector<size_t>>& src_offsets) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  (void)cl;
  if (ptrs.size() != keys.size() || sizes.size() != keys.size() ||
      src_offsets.size() != keys.size()) {
    return out;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    std::shared_ptr<const std::vector<uint8_t>> obj;
    {
      std::lock_guard lock(impl_->session_mu);
      auto it = impl_->get_sessions.find(keys[i]);
      if (it != impl_->get_sessions.end()) obj = it->second;
    }
    if (!obj || !RangesOk(*impl_, ptrs[i], sizes[i], src_offsets[i], obj->size())) continue;
    const size_t n = ptrs[i].size();
    size_t read = 0;
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(ptrs[i][k], obj->data() + src_offsets[i][k], sizes[i][k]);
      read += sizes[i][k];
    }
    out[i] = static_cast<int>(std::min<size_t>(read, INT32_MAX));
  }
  return out;
}

int Store::GetSessionEnd(const std::vector<std::string>& keys) {
  MC_ENGINE_CLIENT(kInvalidParams);
  (void)cl;
  (void)TakeSessions(impl_->session_mu, impl_->get_sessions, keys);
  return kOk;
}

}  // namespace mooncake
