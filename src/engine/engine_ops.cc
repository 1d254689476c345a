// mooncake::Store: upserts, copy/move tasks, clearing replicas and removal by
// regular expression (the reference's upsert*, create_copy_task,
// create_move_task, query_task, batch_replica_clear, remove_by_regex).
#include <cstring>

#include "common/log.h"
#include "engine/engine_impl.h"
#include "mooncake/client.h"
#include "msg/ops_messages.h"

namespace mooncake {

using namespace internal;

namespace {

// Parts of one upserted object (upsert_parts' *parts).
constexpr size_t kMaxUpsertParts = 4096;

mc::msg::PutOptions UpsertOptions(const ReplicateConfig& c) {
  mc::msg::PutOptions o = ToOptions(c);
  o.upsert = true;
  return o;
}

// The reference refuses prefer_alloc_in_same_node for upserts.
int CheckUpsertConfig(const ReplicateConfig& c, size_t keys) {
  if (c.prefer_alloc_in_same_node) {
    MC_LOG(ERROR) << "upsert: prefer_alloc_in_same_node is not supported";
    return kInvalidParams;
  }
  mc::Status st = CheckConfig(c, keys);
  return st.ok() ? kOk : Code(st);
}

size_t TotalBytes(const std::vector<std::span<const uint8_t>>& parts) {
  size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

}  // namespace

int Store::Upsert(const std::string& key, std::span<const uint8_t> value,
                  const ReplicateConfig& config) {
  return UpsertParts(key, {value}, config);
}

int Store::UpsertParts(const std::string& key, const std::vector<std::span<const uint8_t>>& parts,
                       const ReplicateConfig& config) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  if (int c = CheckUpsertConfig(config, 1); c != kOk) return c;
  if (parts.size() > kMaxUpsertParts) return kInvalidParams;
  if (TotalBytes(parts) == 0) return kOk;  // nothing to store (the reference's answer)
  return Code(cl.BatchPutParts({key}, {parts}, UpsertOptions(config))[0]);
}

int Store::UpsertBatch(const std::vector<std::string>& keys,
                       const std::vector<std::span<const uint8_t>>& values,
                       const ReplicateConfig& config) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (keys.size() != values.size()) return kInvalidParams;
  if (mc::Status st = CheckKeys(keys); !st.ok()) return Code(st);
  if (int c = CheckUpsertConfig(config, keys.size()); c != kOk) return c;
  std::vector<std::string> k;
  std::vector<std::span<const uint8_t>> v;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (values[i].empty()) continue;
    k.push_back(keys[i]);
    v.push_back(values[i]);
  }
  if (k.empty()) return kOk;
  for (const mc::Status& st : cl.BatchPut(k, v, UpsertOptions(config))) {
    if (!st.ok()) return Code(st);
  }
  return kOk;
}

int Store::UpsertFrom(const std::string& key, const void* ptr, size_t size,
                      const ReplicateConfig& config) {
  return BatchUpsertFrom({key}, {const_cast<void*>(ptr)}, {size}, config)[0];
}

std::vector<int> Store::BatchUpsertFrom(const std::vector<std::string>& keys,
                                        const std::vector<void*>& ptrs,
                                        const std::vector<size_t>& sizes,
                                        const ReplicateConfig& config) {
  std::vector<int> out(keys.size(), kInvalidParams);
  MC_ENGINE_CLIENT(out);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  if (mc::Status st = CheckKeys(keys); !st.ok()) return std::vector<int>(keys.size(), Code(st));
  if (int c = CheckUpsertConfig(config, keys.size()); c != kOk) {
    return std::vector<int>(keys.size(), c);
  }
  // Zero copy: each buffer must lie in registered memory, as for put_from.
  std::vector<size_t> index;
  std::vector<std::string> k;
  std::vector<mc::client::Client::ConstParts> parts;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (sizes[i] == 0) {
      out[i] = kOk;
      continue;
    }
    if (!impl_->Registered(ptrs[i], sizes[i])) continue;  // INVALID_PARAMS
    index.push_back(i);
    k.push_back(keys[i]);
    parts.push_back({{static_cast<const uint8_t*>(ptrs[i]), sizes[i]}});
  }
  if (k.empty()) return out;
  auto st = cl.BatchPutParts(k, parts, UpsertOptions(config));
  for (size_t j = 0; j < index.size(); ++j) out[index[j]] = Code(st[j]);
  return out;
}

namespace {

Store::TaskId ToTaskId(const mc::msg::TaskId& t) { return {t.hi, t.lo}; }

// Runs a task the master accepted in this client; its outcome is the
// task's (query_task reports it), so the call itself succeeded.
int RunCreated(mc::client::Client& cl, const char* what, const std::string& key,
               const mc::Result<mc::msg::TaskId>& task, Store::TaskId* id) {
  if (!task.ok()) {
    MC_LOG(ERROR) << what << ": " << task.status().ToString();
    return Code(task.status());
  }
  *id = ToTaskId(*task);
  if (mc::Status ran = cl.RunTask(*task); !ran.ok()) {
    MC_LOG(WARN) << what << " of '" << key << "' failed: " << ran.ToString();
  }
  return kOk;
}

}  // namespace

int Store::CreateCopyTask(const std::string& key, const std::vector<std::string>& targets,
                          TaskId* id) {
  *id = {};
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  return RunCreated(cl, "create_copy_task", key, cl.CreateCopyTask(key, targets), id);
}

int Store::CreateMoveTask(const std::string& key, const std::string& source,
                          const std::string& target, TaskId* id) {
  *id = {};
  MC_ENGINE_CLIENT(kInvalidParams);
  if (!KeyOk(key)) return kInvalidKey;
  return RunCreated(cl, "create_move_task", key, cl.CreateMoveTask(key, source, target), id);
}

int Store::QueryTask(const TaskId& id, TaskInfo* out) {
  MC_ENGINE_CLIENT(kInvalidParams);
  auto info = cl.QueryTask(mc::msg::TaskId{id.first, id.second});
  if (!info.ok()) return Code(info.status());
  out->id = ToTaskId(info->id);
  out->type = info->type;
  out->status = info->status;
  out->created_at_ms_epoch = static_cast<int64_t>(info->created_unix_ms);
  out->last_updated_at_ms_epoch = static_cast<int64_t>(info->updated_unix_ms);
  out->assigned_client = {info->assigned_client.hi, info->assigned_client.lo};
  out->message = info->message;
  return kOk;
}

std::vector<std::string> Store::BatchReplicaClear(const std::vector<std::string>& keys,
                                                  const std::string& segment_name) {
  MC_ENGINE_CLIENT(std::vector<std::string>{});
  if (mc::Status st = CheckKeys(keys); !st.ok()) {
    MC_LOG(ERROR) << "batch_replica_clear: " << st.ToString();
    return {};
  }
  auto r = cl.BatchReplicaClear(keys, segment_name);
  if (!r.ok()) {
    MC_LOG(ERROR) << "batch_replica_clear: " << r.status().ToString();
    return {};
  }
  return std::move(*r);
}

int64_t Store::RemoveByRegex(const std::string& pattern, bool force) {
  MC_ENGINE_CLIENT(kInvalidParams);
  auto r = cl.RemoveByRegex(pattern, force);
  if (!r.ok()) {
    MC_LOG(ERROR) << "remove_by_regex: " << r.status().ToString();
    return Code(r.status());
  }
  return static_cast<int64_t>(*r);
}

}  // namespace mooncake
