#include "metadata/kv_store.h"

#include <cassert>

namespace mc::metadata {

namespace {

class MemoryOnly : public Durability {
 public:
  Status LoadAll(std::map<std::string, std::string>*) override { return Status::Ok(); }
  Status Put(const std::string&, const std::string&) override { return Status::Ok(); }
  Status Delete(const std::string&) override { return Status::Ok(); }
};

}  // namespace

std::unique_ptr<Durability> NewMemoryOnly() { return std::make_unique<MemoryOnly>(); }

bool IsWriteOnceKey(const std::string& key) {
  return key.find("rpc_meta") != std::string::npos;
}

Result<std::unique_ptr<KvStore>> KvStore::Open(std::unique_ptr<Durability> durability,
                                               KvLimits limits) {
  assert(durability != nullptr);
  std::unique_ptr<KvStore> store(new KvStore(std::move(durability), limits));
  MC_RETURN_IF_ERROR(store->durability_->LoadAll(&store->map_));
  return store;
}

Status KvStore::CheckKey(const std::string& key) const {
  if (key.empty()) return Error(ErrorCode::INVALID_KEY, "the key is empty");
  if (key.size() > limits_.max_key_bytes) {
    return Error(ErrorCode::BUFFER_OVERFLOW,
                 "key is " + std::to_string(key.size()) + " bytes, the limit is max_key_size = " +
                     std::to_string(limits_.max_key_bytes) + " bytes");
  }
  return Status::Ok();
}

Result<std::string> KvStore::Get(const std::string& key) const {
  MC_RETURN_IF_ERROR(CheckKey(key));
  std::shared_lock lock(map_mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return Error(ErrorCode::OBJECT_NOT_FOUND, "key not found");
  return it->second;
}

Status KvStore::Put(const std::string& key, std::string value) {
  MC_RETURN_IF_ERROR(CheckKey(key));
  if (value.size() > limits_.max_value_bytes) {
    return Error(ErrorCode::BUFFER_OVERFLOW,
                 "value is " + std::to_string(value.size()) +
                     " bytes, the limit is max_value_size = " +
                     std::to_string(limits_.max_value_bytes) + " bytes");
  }
  std::lock_guard writer(write_mu_);
  // Only writers change map_, and we are the only writer: reading it here
  // without map_mu_ is safe.
  auto it = map_.find(key);
  if (it != map_.end()) {
    if (it->second == value) return Status::Ok();  // nothing to change
    if (IsWriteOnceKey(key)) {
      return Error(ErrorCode::OBJECT_ALREADY_EXISTS,
                   "key contains 'rpc_meta' and already holds a different value; "
                   "rpc_meta keys are write-once (DELETE it first)");
    }
  }
  Status st = durability_->Put(key, value);
  if (!st.ok()) return Error(ErrorCode::INTERNAL_ERROR, "not stored: " + st.message());
  std::unique_lock lock(map_mu_);
  map_.insert_or_assign(key, std::move(value));
  return Status::Ok();
}

Status KvStore::Delete(const std::string& key) {
  MC_RETURN_IF_ERROR(CheckKey(key));
  std::lock_guard writer(write_mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return Error(ErrorCode::OBJECT_NOT_FOUND, "key not found");
  Status st = durability_->Delete(key);
  if (!st.ok()) return Error(ErrorCode::INTERNAL_ERROR, "not deleted: " + st.message());
  std::unique_lock lock(map_mu_);
  map_.erase(it);
  return Status::Ok();
}

std::vector<std::string> KvStore::List(const std::string& prefix) const {
  std::vector<std::string> keys;
  std::shared_lock lock(map_mu_);
  for (auto it = map_.lower_bound(prefix);
       it != map_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    keys.push_back(it->first);
  }
  return keys;
}

size_t KvStore::size() const {
  std::shared_lock lock(map_mu_);
  return map_.size();
}

}  // namespace mc::metadata
