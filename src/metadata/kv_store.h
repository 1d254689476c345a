// KvStore: the key-value state of the HTTP metadata server, with its rules.
//
// Rules (the reference's, plus limits):
//   - keys are 1..max_key_bytes bytes, values 0..max_value_bytes bytes;
//   - a key whose name contains "rpc_meta" is write-once: a PUT that would
//     change its value is refused (a PUT of the same bytes succeeds);
//   - DELETE of an absent key reports OBJECT_NOT_FOUND.
// Every write goes to the Durability seam first and is applied in memory only
// after that returned OK, so an acknowledged write is as durable as the seam
// makes it. Reads are served from memory.
//
// Thread-safe: writers are serialized by one mutex (held across the durable
// write), readers share a reader/writer lock that writers hold only while
// applying a change to the map.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "common/result.h"

namespace mc::metadata {

// Where writes are made durable. Called under the store's writer lock, so an
// implementation sees one call at a time and never needs its own locking.
class Durability {
 public:
  virtual ~Durability() = default;
  // Every key-value pair stored so far; called once, before any write.
  virtual Status LoadAll(std::map<std::string, std::string>* out) = 0;
  // Returns only once the change is durable (see the implementation).
  virtual Status Put(const std::string& key, const std::string& value) = 0;
  virtual Status Delete(const std::string& key) = 0;
};

// Keeps nothing: the reference's behaviour (lost on restart).
std::unique_ptr<Durability> NewMemoryOnly();

struct KvLimits {
  uint32_t max_key_bytes = kDefaultMetadataMaxKeyBytes;
  uint64_t max_value_bytes = kDefaultMetadataMaxValueBytes;
};

class KvStore {
 public:
  // Loads what `durability` holds. Errors: what LoadAll reported.
  static Result<std::unique_ptr<KvStore>> Open(std::unique_ptr<Durability> durability,
                                               KvLimits limits);

  // OBJECT_NOT_FOUND if absent.
  Result<std::string> Get(const std::string& key) const;
  // INVALID_KEY (empty), BUFFER_OVERFLOW (key or value past its limit; the
  // message names the limit), OBJECT_ALREADY_EXISTS (rpc_meta key changed),
  // INTERNAL_ERROR (durable write failed; nothing changed).
  Status Put(const std::string& key, std::string value);
  // OBJECT_NOT_FOUND if absent; INVALID_KEY, BUFFER_OVERFLOW, INTERNAL_ERROR.
  Status Delete(const std::string& key);
  // Keys starting with `prefix`, in byte order ("" lists all).
  std::vector<std::string> List(const std::string& prefix) const;
  size_t size() const;

  // Checks a key against the limits without touching the store.
  Status CheckKey(const std::string& key) const;
  const KvLimits& limits() const { return limits_; }

 private:
  KvStore(std::unique_ptr<Durability> durability, KvLimits limits)
      : durability_(std::move(durability)), limits_(limits) {}

  std::unique_ptr<Durability> durability_;
  const KvLimits limits_;
  std::mutex write_mu_;               // serializes writers, held across durability_
  mutable std::shared_mutex map_mu_;  // guards map_
  std::map<std::string, std::string> map_;
};

// True if the key is write-once (its name contains "rpc_meta").
bool IsWriteOnceKey(const std::string& key);

}  // namespace mc::metadata
