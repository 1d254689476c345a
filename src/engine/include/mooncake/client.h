// libmooncake: the client library an inference engine links to reach a
// mooncake cluster from inside its own process (the Python module
// mooncake.store is a thin layer over it).
//
// A Store connects to the master, optionally contributes memory to the pool
// (global_segment_size > 0: this process then serves transfers from its own
// segment, like `mooncake store`) and moves object bytes directly between
// the caller's memory and the segments (TCP, or a mapped copy on the same
// host). Return conventions are the reference Mooncake Store's: 0 or a
// negative error code (values in mooncake-python(3)); sizes and byte counts
// are returned as non-negative numbers, errors as negative ones.
//
// Thread-safe: one Store may be used by many threads at once; Close() waits
// for calls in flight. Calls before Setup() or after Close() return
// INVALID_PARAMS (-600).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mooncake {

// Error codes returned by the calls below (the reference's values).
inline constexpr int kOk = 0;
inline constexpr int kBufferOverflow = -10;
inline constexpr int kNoAvailableHandle = -200;
inline constexpr int kInvalidKey = -400;
inline constexpr int kInvalidParams = -600;
inline constexpr int kObjectNotFound = -704;
inline constexpr int kObjectAlreadyExists = -705;
inline constexpr int kTransferFail = -800;
inline constexpr int kRpcFail = -900;
inline constexpr int kSegmentNotFound = -101;
inline constexpr int kNotSupported = -1012;

// The soft-pin transition a put asks for (the reference's newest field;
// with_soft_pin is the release's spelling of kEnable).
enum class SoftPinAction : uint8_t { kPreserve = 0, kEnable = 1, kDisable = 2 };

// What an object holds (the reference's ObjectDataType). Recorded by the
// caller, not used for placement here.
enum class ObjectDataType : uint8_t {
  kUnknown = 0, kKvCache, kTensor, kWeight, kSample, kActivation, kGradient,
  kOptimizerState, kMetadata, kGeneral,
};

// How a put is placed and kept; fields as the reference's ReplicateConfig.
// A put is soft-pinned when with_soft_pin or soft_pin_action is kEnable;
// soft_pin_ttl_ms without either, or with_soft_pin with kDisable, is
// INVALID_PARAMS (the reference's newest rule).
struct ReplicateConfig {
  size_t replica_num = 1;
  // NVMe-oF replicas: that tier is not built; > 0 is NOT_SUPPORTED.
  size_t nof_replica_num = 0;
  // Replicas on a distributed file system (the reference's DFS tier): not
  // built either; > 0 is NOT_SUPPORTED.
  size_t dfs_replica_num = 0;
  bool with_soft_pin = false;            // evicted only after unpinned objects
  SoftPinAction soft_pin_action = SoftPinAction::kPreserve;
  std::optional<uint64_t> soft_pin_ttl_ms;  // unset: the master's default TTL
  bool with_hard_pin = false;            // never evicted
  std::string preferred_segment;         // e.g. GetHostname(): keep it local
  std::vector<std::string> preferred_segments;  // one per replica, in order
  std::vector<std::string> preferred_nof_segments;  // non-empty: NOT_SUPPORTED
  bool prefer_alloc_in_same_node = false;
  ObjectDataType data_type = ObjectDataType::kUnknown;
  // One group per key of a batch ("" = none); checked for its length only:
  // the master has no groups yet (mooncake-python(3)).
  std::optional<std::vector<std::string>> group_ids;
};

// One buffer of a replica as get_replica_desc reports it.
struct BufferInfo {
  std::string segment_name;
  std::string endpoint;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
};
struct ReplicaInfo {
  bool complete = false;
  std::vector<BufferInfo> buffers;
  // A copy on a store's disk tier (the reference's LOCAL_DISK replica):
  // no buffers, `disk_size_bytes` the object's size.
  bool on_disk = false;
  uint64_t disk_size_bytes = 0;
};

// Setup keys (reference names): local_hostname, metadata_server,
// global_segment_size, local_buffer_size, protocol, rdma_devices (or
// device_name), master_server_addr (or master_server_address), plus
// auth_token, shm ("false" forces TCP), tcp_streams, transfer_timeout (seconds, or
// "500ms"), log_level, and for TLS tls_cert, tls_key, tls_ca, tls_verify_peer,
// tls_min_version ([tls] in mooncake.toml(5); env MOONCAKE_TLS_*). Sizes may be
// numbers or strings ("4gb"). Keys not given come
// from MOONCAKE_CONFIG_PATH (a mooncake.json), then the MOONCAKE_*
// environment, then the defaults.
using SetupConfig = std::map<std::string, std::string>;

class Store {
 public:
  Store();
  ~Store();  // closes
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int Setup(const SetupConfig& config);
  // ---- engine_dummy.cc: a dummy client of the host's `mooncake client` ----
  // Instead of Setup: every call is forwarded to the standalone client
  // listening at `server_address` ("host:port", whose socket is
  // @mooncake_client_PORT.sock; `socket_path` names another). It hands this
  // process a shared pool of mem_pool_size + local_buffer_size bytes; memory
  // from AllocFromMemPool moves zero copy, other buffers are staged through
  // the pool (mooncake-client(1)). 0, or RPC_FAIL (-900) when no client
  // listens, NO_AVAILABLE_HANDLE (-200) when it refuses the pool.
  int SetupDummy(size_t mem_pool_size, size_t local_buffer_size,
                 const std::string& server_address, const std::string& socket_path = "");
  // The address of `size` bytes of the dummy's pool (usable by put_from and
  // get_into without register_buffer); 0 when not a dummy or the pool is full.
  uint64_t AllocFromMemPool(size_t size);
  // 0, or INVALID_PARAMS for an address AllocFromMemPool did not return.
  int FreeToMemPool(uint64_t addr);
  int Close();
  // This process's segment name ("host:port") when it contributes memory,
  // else local_hostname. Empty before Setup.
  std::string GetHostname() const;
  // 0 healthy, 1 not set up or closed, 2 master unreachable (reference).
  int HealthCheck();

  int Put(const std::string& key, std::span<const uint8_t> value,
          const ReplicateConfig& config = {});
  // One object gathered from several parts.
  int PutParts(const std::string& key, const std::vector<std::span<const uint8_t>>& parts,
               const ReplicateConfig& config = {});
  // One code for the whole batch (the reference's put_batch): 0 when every
  // key was stored, else the first failure.
  int PutBatch(const std::vector<std::string>& keys,
               const std::vector<std::span<const uint8_t>>& values, const ReplicateConfig& config);
  // The object's bytes into *out; returns its size or a negative code.
  int64_t Get(const std::string& key, std::vector<uint8_t>* out);
  std::vector<int64_t> BatchGet(const std::vector<std::string>& keys,
                                std::vector<std::vector<uint8_t>>* out);

  // Zero copy: [ptr, ptr + size) must lie inside a registered buffer.
  int RegisterBuffer(void* ptr, size_t size);
  int UnregisterBuffer(void* ptr);
  int PutFrom(const std::string& key, const void* ptr, size_t size,
              const ReplicateConfig& config = {});
  // Bytes read, or negative; BUFFER_OVERFLOW (-10) when size is too small.
  int64_t GetInto(const std::string& key, void* ptr, size_t size);
  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys,
                                const std::vector<void*>& ptrs, const std::vector<size_t>& sizes,
                                const ReplicateConfig& config = {});
  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys,
                                    const std::vector<void*>& ptrs,
                                    const std::vector<size_t>& sizes);
  // Object i is gathered from / scattered to ptrs[i][j], sizes[i][j].
  std::vector<int> BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<void*>>& ptrs,
                                            const std::vector<std::vector<size_t>>& sizes,
                                            const ReplicateConfig& config = {});
  std::vector<int64_t> BatchGetIntoMultiBuffers(const std::vector<std::string>& keys,
                                                const std::vector<std::vector<void*>>& ptrs,
                                                const std::vector<std::vector<size_t>>& sizes);

  // 1 exists, 0 does not, negative on error.
  int IsExist(const std::string& key);
  std::vector<int> BatchIsExist(const std::vector<std::string>& keys);
  // Size in bytes, or negative.
  int64_t GetSize(const std::string& key);
  int Remove(const std::string& key, bool force = false);
  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force = false);
  // Number of objects removed, or negative.
  int64_t RemoveAll(bool force = false);

  // The complete replicas of `key` (takes a read lease, as a get does).
  // 0, or OBJECT_NOT_FOUND and the like.
  int GetReplicaDesc(const std::string& key, std::vector<ReplicaInfo>* out);

  // Ranged reads: for buffer i, key j, range k, copies `sizes[i][j][k]`
  // bytes at `src_offsets` of object all_keys[i][j] to `dst_offsets` in
  // buffer i (registered memory). Per range: bytes copied or negative.
  using Ranges3 = std::vector<std::vector<std::vector<size_t>>>;
  std::vector<std::vector<std::vector<int64_t>>> GetIntoRanges(
      const std::vector<void*>& buffers, const std::vector<std::vector<std::string>>& all_keys,
      const Ranges3& dst_offsets, const Ranges3& src_offsets, const Ranges3& sizes);
  // One object: `metadata_size` bytes at `metadata` then `size` at `ptr`.
  int PutFromWithMetadata(const std::string& key, const void* ptr, const void* metadata,
                          size_t size, size_t metadata_size, const ReplicateConfig& config = {});

  // Sessions (mooncake-python(3)): a put session stages each object in this
  // process until PutSessionEnd stores it; a get session reads each object
  // once and serves ranges from that copy until GetSessionEnd.
  std::vector<int> PutSessionStart(const std::vector<std::string>& keys,
                                   const std::vector<size_t>& sizes,
                                   const ReplicateConfig& config = {});
  // Per key: bytes written, or negative.
  std::vector<int> PutSessionWriteRanges(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<void*>>& ptrs,
                                         const std::vector<std::vector<size_t>>& sizes,
                                         const std::vector<std::vector<size_t>>& dst_offsets);
  std::vector<int> PutSessionEnd(const std::vector<std::string>& keys);
  std::vector<int> PutSessionRevoke(const std::vector<std::string>& keys);
  std::vector<int> GetSessionStart(const std::vector<std::string>& keys);
  std::vector<int> GetSessionReadRanges(const std::vector<std::string>& keys,
                                        const std::vector<std::vector<void*>>& ptrs,
                                        const std::vector<std::vector<size_t>>& sizes,
                                        const std::vector<std::vector<size_t>>& src_offsets);
  int GetSessionEnd(const std::vector<std::string>& keys);

  // Extra segments of this process's memory, beside setup's: each its own
  // segment name, served and unmounted like the first.
  int AllocateAndMountSegment(size_t size, const std::string& protocol,
                              std::vector<std::string>* segment_ids, size_t* allocated_bytes);
  // Unmounts segments of this process (setup's too) by name, after
  // `grace_period_seconds`; SEGMENT_NOT_FOUND for a name it does not own.
  int UnmountSegment(const std::vector<std::string>& segment_ids, uint64_t grace_period_seconds);
  // The reference's unmount_local_disk_segment, which drains the disk half
  // of its client's storage: 0 when no segment of this process has a disk
  // tier (enable_ssd_offload), as the reference answers with SSD offload
  // off; NOT_SUPPORTED when one has (draining a running process's disk tier
  // is not built: close() takes the segment and its tier out together);
  // INVALID_PARAMS for a grace period over an hour; -1 before setup (the
  // reference's answer).
  int UnmountLocalDiskSegment(uint64_t grace_period_seconds);
  // The reference's get_offload_rpc_read_count: gets this process made of
  // objects only a disk tier held when asked for (the master read each into
  // memory first); a get of an object back in memory is not counted. Gets
  // of a dummy client are made by its standalone client and count there.
  // 0 before setup.
  uint64_t OffloadReadCount();

  // ---- engine_ops.cc: upserts and replica operations ----
  // An upsert stores the object whether or not the key exists: a reader
  // gets the old bytes or the new ones, never a mix (mooncake-python(3)).
  // Same codes as the puts; an empty value is 0 and stores nothing (as the
  // reference's); prefer_alloc_in_same_node is INVALID_PARAMS (reference).
  int Upsert(const std::string& key, std::span<const uint8_t> value,
             const ReplicateConfig& config = {});
  int UpsertParts(const std::string& key, const std::vector<std::span<const uint8_t>>& parts,
                  const ReplicateConfig& config = {});
  // One code for the batch: 0, or the first failure.
  int UpsertBatch(const std::vector<std::string>& keys,
                  const std::vector<std::span<const uint8_t>>& values,
                  const ReplicateConfig& config = {});
  int UpsertFrom(const std::string& key, const void* ptr, size_t size,
                 const ReplicateConfig& config = {});
  std::vector<int> BatchUpsertFrom(const std::vector<std::string>& keys,
                                   const std::vector<void*>& ptrs,
                                   const std::vector<size_t>& sizes,
                                   const ReplicateConfig& config = {});

  // A copy or move task's id (the reference's UUID) and what query_task
  // reports; type and status are numbered as the reference's TaskType
  // (REPLICA_COPY 0, REPLICA_MOVE 1) and TaskStatus (PENDING 0,
  // PROCESSING 1, FAILED 2, SUCCESS 3).
  struct TaskId {
    uint64_t first = 0;
    uint64_t second = 0;
  };
  struct TaskInfo {
    TaskId id;
    int type = 0;
    int status = 0;
    int64_t created_at_ms_epoch = 0;
    int64_t last_updated_at_ms_epoch = 0;
    TaskId assigned_client;
    std::string message;
  };
  // Copies `key` to each target segment / moves its replica on `source` to
  // `target`. The task runs in this process before the call returns (the
  // reference's runs later in the source's owner); 0 and the task's id once
  // the master accepted it, even when the copy then failed (query_task
  // says so), else a negative code and a zero id.
  int CreateCopyTask(const std::string& key, const std::vector<std::string>& targets,
                     TaskId* id);
  int CreateMoveTask(const std::string& key, const std::string& source,
                     const std::string& target, TaskId* id);
  // 0, or TASK_NOT_FOUND (-1400) and the like.
  int QueryTask(const TaskId& id, TaskInfo* out);
  // The keys whose replicas on `segment_name` (all of them when empty) were
  // removed; leased, in-flight and missing keys are left alone.
  std::vector<std::string> BatchReplicaClear(const std::vector<std::string>& keys,
                                             const std::string& segment_name);
  // Objects removed, or negative (INVALID_PARAMS for a pattern that is not
  // an ECMAScript regular expression).
  int64_t RemoveByRegex(const std::string& pattern, bool force = false);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The process's host memory for engine buffers (MooncakeHostMemAllocator):
// from the pool of the dummy store set up most recently in this process that
// is still open, else page-aligned anonymous memory. Null when size is 0 or
// there is no memory; HostMemFree is 0, or -1 for a pointer not from here.
void* HostMemAlloc(size_t size);
int HostMemFree(void* ptr);

// "OBJECT_NOT_FOUND" for -704, "UNKNOWN_ERROR" for a value not listed.
const char* ErrorName(int code);

}  // namespace mooncake
