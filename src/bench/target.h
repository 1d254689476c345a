// What `mooncake bench` drives: a key-value backend behind one interface, so
// the same workload runs against the cluster, the master alone, a blackhole
// and Redis. Each worker thread creates its own Target (its own connection),
// so a Target is not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "config/config.h"

namespace mc::bench {

// Outcome of one batch call: each key is ok, missing (get/exists of an
// absent key, or put of a key already there) or failed.
struct BatchOutcome {
  uint32_t ok = 0;
  uint32_t missing = 0;
  uint32_t failed = 0;
  uint32_t leading_ok = 0;  // ok keys before the first one that is not
  uint64_t bytes = 0;       // value bytes moved
  Status first_error = Status::Ok();
  // Targets report keys in request order through these.
  void AddOk(uint64_t moved) {
    if (missing == 0 && failed == 0) ++leading_ok;
    ++ok;
    bytes += moved;
  }
  void AddMissing() { ++missing; }
  void Fail(const Status& st) {
    ++failed;
    if (first_error.ok()) first_error = st;
  }
};

class Target {
 public:
  virtual ~Target() = default;
  virtual BatchOutcome Put(std::span<const std::string> keys, std::span<const uint8_t> value) = 0;
  // `expect_size`: a fetched value of another size counts as failed.
  virtual BatchOutcome Get(std::span<const std::string> keys, uint64_t expect_size) = 0;
  virtual BatchOutcome Exists(std::span<const std::string> keys) = 0;
  // Whether a put of an existing key replaces it (Redis SET) rather than
  // failing (mooncake keys are immutable).
  virtual bool overwrites() const { return false; }
  // "tcp" or "same-host" after a transfer; empty when nothing moves bytes.
  virtual std::string transfer_path() const { return ""; }
};

using TargetFactory = std::function<Result<std::unique_ptr<Target>>()>;

// The cluster through client::Client (bytes move to and from the stores).
TargetFactory MooncakeTargetFactory(const Config& config);
// The master alone: PutStart+PutEnd, GetReplicaList, ExistKey; no bytes move.
// `value_size` is the size each PutStart allocates.
TargetFactory MetadataTargetFactory(const Config& config, uint64_t value_size);
// Drops writes, misses reads: the bench's own overhead, no cluster.
TargetFactory BlackholeTargetFactory();
// Redis SET/GET/EXISTS, pipelined per batch. `host_port` from ParseRedisUrl.
TargetFactory RedisTargetFactory(const std::string& host_port, uint64_t timeout_us);

}  // namespace mc::bench
