// SegmentHost: memory a process contributes to the pool, served to peers.
//
// Reserves a segment, serves transfers from it over TCP, or TLS per [tls]
// (and to same-host
// clients by its shm path), mounts it on the master under the caller's
// client id, publishes its descriptor to the metadata server, faults its
// pages in on a background thread and, once started, pings the master every
// second from its own thread. A master that does not know the store (it
// missed pings for client_ttl and was declared dead, e.g. across a network
// partition) asks it to remount: the store then takes a new incarnation and
// access key, voiding every grant signed before, and mounts again, empty as
// far as the master knows. Stop() unmounts and stops serving. Used by
// `mooncake store` and by the engine library (an inference engine with
// global_segment_size > 0).
//
// Thread-safe: Stop() and the accessors may be called from any thread; the
// heartbeat runs on a thread of its own. The destructor stops.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "config/config.h"
#include "msg/messages.h"

namespace mc::transfer {
class RdmaResponder;
class Segment;
class SegmentKeys;
class TermFence;
class TcpDataServer;
class WriteEpochs;
}  // namespace mc::transfer
namespace mc::rpc {
class MasterClient;
}
namespace mc::net {
class TlsContext;
}
namespace mc::tier {
class DiskTier;
}

namespace mc::store {

class MetadataPublisher;
class TierWorker;

class SegmentHost {
 public:
  // Sleeps between mount attempts; returns true to give up (stop).
  using WaitFn = std::function<bool(uint64_t ms)>;

  // Reserves config.store.global_segment_size_bytes and starts serving it
  // (nothing is mounted yet). Errors name what failed.
  static Result<std::unique_ptr<SegmentHost>> Create(const Config& config, msg::ClientId id);
  ~SegmentHost();
  SegmentHost(const SegmentHost&) = delete;
  SegmentHost& operator=(const SegmentHost&) = delete;

  // Mounts the segment, retrying with backoff (sleeping through `wait`)
  // until it works (true) or `wait` says stop (false). AUTH_FAILED at once:
  // retrying cannot fix a refused token.
  Result<bool> Mount(const WaitFn& wait);
  // Publishes the descriptor, starts prefaulting (if configured) and the
  // heartbeat thread. Call after a successful Mount.
  void Start();
  // The heartbeat's fatal error (a remount refused for auth), or OK.
  Status failure() const;
  // Stops the heartbeat, unmounts, withdraws the descriptor, stops serving
  // and logs the data server's counters. Idempotent.
  void Stop();

  // Reads the [tls] files again (SIGHUP): new connections use them, open
  // ones keep their sessions. On error the old certificates stay.
  Status ReloadTls();

  // "host:dataport", the segment's name at the master.
  const std::string& name() const { return desc_.name; }
  uint16_t data_port() const { return port_; }
  uint64_t size_bytes() const { return desc_.size_bytes; }
  bool has_disk_tier() const { return tier_ != nullptr; }
  // "NAME (1.00 GB, hugetlb pages) mounted on master H:P, data port N",
  // for the owner's ready line.
  std::string Describe() const;

  // What the heartbeat does before mounting again after the master declared
  // this store dead (or lost its state): a new incarnation and access key,
  // in the data server first, and the whole segment retired in its write
  // epochs so no seal from before matches (segment_host.cc). Public for tests.
  void Reincarnate();
  // The segment's write epochs (tests).
  const transfer::WriteEpochs& epochs() const;

 private:
  SegmentHost() = default;
  void Heartbeat();
  // Sleeps up to `ms` or until Stop(); true when stopping.
  bool Sleep(uint64_t ms);

  Config config_;
  msg::ClientId id_;
  msg::SegmentDesc desc_;
  uint16_t port_ = 0;
  std::unique_ptr<transfer::Segment> segment_;
  std::unique_ptr<tier::DiskTier> tier_;  // [store] ssd_offload_path; null: memory only
  std::unique_ptr<TierWorker> tier_worker_;  // with tier_, once started
  std::shared_ptr<transfer::SegmentKeys> keys_;  // what the data server checks grants with
  std::shared_ptr<transfer::TermFence> fence_;  // the data server's; Ping replies raise it
  std::unique_ptr<transfer::RdmaResponder> rdma_;  // protocol rdma; outlives server_
  std::unique_ptr<transfer::TcpDataServer> server_;
  std::unique_ptr<rpc::MasterClient> link_;
  std::unique_ptr<MetadataPublisher> meta_;
  std::shared_ptr<net::TlsContext> server_tls_, client_tls_;  // null: plain TCP
  std::jthread prefault_;
  std::thread heartbeat_;
  mutable std::mutex mu_;  // guards stopping_, stopped_, failure_
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
  bool mounted_ = false;
  Status failure_;
};

}  // namespace mc::store
