// Client: the library through which the CLI, the stores and the bench use a
// mooncake cluster. It talks to the master over RPC for metadata and moves
// object bytes directly to and from the stores' segments (TCP, or mapped
// shared memory when the store is on the same host and shm is enabled).
//
// Thread-safe: one Client may be shared by many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "client/direct_reads.h"
#include "common/result.h"
#include "config/config.h"
#include "msg/messages.h"
#include "msg/ops_messages.h"
#include "msg/tier_messages.h"
#include "rpc/client.h"

namespace mc {
class Clock;
}
namespace mc::transfer {
class Transport;
}

namespace mc::client {

class MasterLink;  // client/master_link.h

// Options of the master RPC connection from the cluster config; `tls`: a
// client TLS context (tls/tls_setup.h), null for plain TCP.
rpc::ClientOptions MasterClientOptions(const ClusterConfig& cluster,
                                       std::shared_ptr<net::TlsContext> tls = nullptr);

class Client {
 public:
  virtual ~Client() = default;

  // Connects to the master named in `config.cluster` (TLS per `config.tls`,
  // handshake, auth). RPC_FAIL "master unavailable at H:P" when it cannot
  // be reached; INVALID_PARAMS naming the file for a bad TLS file.
  static Result<std::unique_ptr<Client>> Connect(const Config& config);
  // A client over the parts Connect makes from `config` (tests inject an
  // in-process master and an in-memory transport). `master`: the calls to
  // the master. `transport` moves every transfer and names the layer that
  // moved each op in TransferOp::moved_by ("shm", "rdma", "tcp") and the one
  // that passed it on in passed_on_by, as transfer::FallbackTransport does;
  // ops of same-host buffers carry the segment's shm path, the others none.
  // `clock` times the transfer reports (null: the system clock; otherwise
  // it must outlive the client).
  static std::unique_ptr<Client> Make(const Config& config, std::unique_ptr<MasterLink> master,
                                      std::unique_ptr<transfer::Transport> transport,
                                      const Clock* clock = nullptr);

  // Stores `value` under `key`. OBJECT_ALREADY_EXISTS if the key exists,
  // NO_AVAILABLE_HANDLE if the pool has no room even after eviction.
  virtual Status Put(const std::string& key, std::span<const uint8_t> value,
                     const msg::PutOptions& options) = 0;
  // Fetches the whole object. OBJECT_NOT_FOUND if absent.
  virtual Result<std::vector<uint8_t>> Get(const std::string& key) = 0;
  // Fetches the object straight into `buffer` (no allocation, no copy: the
  // transfer lands there) and returns its size. BUFFER_OVERFLOW if it does
  // not fit, OBJECT_NOT_FOUND if absent.
  virtual Result<uint64_t> GetInto(const std::string& key, std::span<uint8_t> buffer) = 0;
  // Where the object's replicas are, with the master's read grants, without
  // moving bytes (debugging; takes a lease like Get).
  virtual Result<msg::GetReplicaListReply> Locate(const std::string& key) = 0;
  virtual Result<bool> Exists(const std::string& key) = 0;
  virtual Status Remove(const std::string& key, bool force) = 0;
  virtual Result<msg::ListKeysReply> List(const msg::ListKeysRequest& request) = 0;
  // The same page with each key's tier (memory, disk, both), without
  // reading or staging anything. NOT_SUPPORTED where the link or the
  // master has no such call (a dummy client, an older master).
  virtual Result<msg::TieredListKeysReply> ListTiered(const msg::ListKeysRequest&) {
    return Error(ErrorCode::NOT_SUPPORTED, "no tiered listing here");
  }
  virtual Result<msg::ClusterStatusReply> ClusterStatus() = 0;

  // Batch forms: one result per key, in order.
  virtual std::vector<Status> BatchPut(const std::vector<std::string>& keys,
                                       const std::vector<std::span<const uint8_t>>& values,
                                       const msg::PutOptions& options) = 0;
  virtual std::vector<Result<std::vector<uint8_t>>> BatchGet(
      const std::vector<std::string>& keys) = 0;
  virtual std::vector<Result<bool>> BatchExists(const std::vector<std::string>& keys) = 0;
  // Fetches each object into the caller's buffer: no allocation and no
  // zero-fill, as an engine reading into its own KV buffers does. Per key:
  // the object's size, OBJECT_NOT_FOUND, or BUFFER_OVERFLOW when the buffer
  // is smaller than the object.
  virtual std::vector<Result<uint64_t>> BatchGetInto(
      const std::vector<std::string>& keys, const std::vector<std::span<uint8_t>>& buffers) = 0;

  // Scatter/gather forms, for engines whose KV block lives in several
  // buffers: object i is the concatenation of parts[i], moved straight
  // from/to each part (no staging copy). A get fills the parts in order and
  // is BUFFER_OVERFLOW when they hold less than the object.
  using ConstParts = std::vector<std::span<const uint8_t>>;
  using Parts = std::vector<std::span<uint8_t>>;
  virtual std::vector<Status> BatchPutParts(const std::vector<std::string>& keys,
                                            const std::vector<ConstParts>& parts,
                                            const msg::PutOptions& options) = 0;
  virtual std::vector<Result<uint64_t>> BatchGetIntoParts(const std::vector<std::string>& keys,
                                                          const std::vector<Parts>& parts) = 0;
  // The object's size without moving bytes. OBJECT_NOT_FOUND if absent.
  virtual Result<uint64_t> Size(const std::string& key) = 0;
  // One status per key, in order.
  virtual std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force) = 0;
  // Removes every unleased object (with `force`, leased ones too); returns
  // how many were removed.
  virtual Result<uint64_t> RemoveAll(bool force = false) = 0;
  // This process's identity at the master (a segment it mounts uses it too).
  virtual msg::ClientId id() const = 0;
  // Forgets every cached location (client/direct_reads.h): the next gets ask
  // the master. For a process whose own segment left (unmount): its memory
  // may still be mapped, unwritten, so a seal would not go stale.
  virtual void ForgetLocations() {}
  // The cached location a direct read of `key` would use now, if any: for a
  // dummy client of this one (clientd) to read the key itself.
  virtual std::optional<DirectReads::Entry> CachedLocation(const std::string&) {
    return std::nullopt;
  }
  // Direct-read hits made elsewhere (by dummy clients), reported to the
  // master with this client's own.
  virtual void CountHits(const std::vector<msg::KeyAccess>&) {}
  // Revokes the puts of `keys` that client `owner` started and never ended
  // (a dummy client of this one that died mid-put); one status per key.
  virtual std::vector<Status> RevokePuts(const msg::ClientId& /*owner*/,
                                         const std::vector<std::string>& keys) {
    return std::vector<Status>(keys.size(), Error(ErrorCode::NOT_SUPPORTED, "no master link"));
  }

  // "same-host" if the last transfer used mapped memory, "rdma" if it went
  // over RDMA, else "tcp" (also "rdma+tcp" when a batch used both).
  virtual std::string last_transfer_path() const = 0;
  // Ops moved per path since Connect: same-host, rdma, tcp (and tcp ops of
  // protocol rdma sent over TCP because their store serves no RDMA).
  struct PathCounts {
    uint64_t same_host = 0, rdma = 0, tcp = 0, tcp_fallback = 0;
  };
  virtual PathCounts path_counts() const = 0;
  // Gets whose object was on a disk tier only when asked for: the master
  // read it into memory (staging) and the get then read it there. The
  // reference's offload-RPC read count (get_offload_rpc_read_count); a
  // get of an object already back in memory is not counted.
  virtual uint64_t staged_reads() const { return 0; }
  // protocol rdma: registers the buffer on every NIC so transfers from and
  // into it need no per-transfer registration. OK and nothing to do on TCP.
  virtual Status RegisterBuffer(void* addr, uint64_t len) = 0;
  virtual Status UnregisterBuffer(void* addr) = 0;

  // ---- replica operations (msg/ops_messages.h) ----
  // Puts with options.upsert replace an existing object: readers see the
  // old bytes or the new ones, never a mix (mooncake-python(3)).
  // Copy and move tasks run in this client: Create* registers the task at
  // the master, RunTask copies the bytes (TaskStart, read, write, TaskEnd).
  virtual Result<msg::TaskId> CreateCopyTask(const std::string& key,
                                             const std::vector<std::string>& targets) = 0;
  virtual Result<msg::TaskId> CreateMoveTask(const std::string& key, const std::string& source,
                                             const std::string& target) = 0;
  virtual Status RunTask(const msg::TaskId& task) = 0;
  virtual Result<msg::TaskInfo> QueryTask(const msg::TaskId& task) = 0;
  virtual Result<std::vector<std::string>> BatchReplicaClear(const std::vector<std::string>& keys,
                                                             const std::string& segment_name) = 0;
  virtual Result<uint64_t> RemoveByRegex(const std::string& pattern, bool force) = 0;
};

}  // namespace mc::client
