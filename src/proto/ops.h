// The master's operations: the one table every other list is made from.
//
// X(Name, opcode, Request, Reply, Kind), one row per operation of
// mooncake-protocol(7). From it come the Opcode enum, OpcodeName,
// IsKnownOpcode and IsNotification (proto/frame), OpTraits (proto/codec),
// the pure rpc::Handler interface and rpc::Dispatch (rpc/handler), and the
// typed MasterClient::Invoke<op> (rpc/client). The opcode values and the
// types' field lists (msg/messages.h, Fields()) are the wire format: never
// change a row, add one. Kind is Call (a reply comes back) or Notify (the
// server never answers: the client does not wait, and the server drops the
// result, errors included). Reply Empty: the reply is a bare Status.
//
// Adding an operation: a row here, its message structs with their Fields(),
// the core (src/master) and the service (src/masterd/service.h): the service
// does not compile until it implements the new Handler method.
//
// A macro only: the types are named as seen from namespace mc::proto and
// resolved where the table is expanded (proto/codec.h).
#pragma once

// clang-format off
#define MC_MASTER_OPS(X)                                                                        \
  X(MountSegment, 0x0010, msg::MountSegmentRequest, Empty, Call)                                \
  X(UnmountSegment, 0x0011, msg::UnmountSegmentRequest, Empty, Call)                            \
  X(Ping, 0x0012, msg::PingRequest, msg::PingReply, Call)                                       \
  X(PutStart, 0x0020, msg::PutStartRequest, msg::PutStartReply, Call)                           \
  X(PutEnd, 0x0021, msg::KeyRequest, Empty, Call)                                               \
  X(PutRevoke, 0x0022, msg::KeyRequest, Empty, Call)                                            \
  X(GetReplicaList, 0x0023, msg::KeyRequest, msg::GetReplicaListReply, Call)                    \
  X(ExistKey, 0x0024, msg::KeyRequest, bool, Call)                                              \
  X(Remove, 0x0025, msg::RemoveRequest, Empty, Call)                                            \
  X(RemoveAll, 0x0026, Empty, msg::RemoveAllReply, Call)                                        \
  X(ListKeys, 0x0027, msg::ListKeysRequest, msg::ListKeysReply, Call)                           \
  X(ClusterStatus, 0x0028, Empty, msg::ClusterStatusReply, Call)                                \
  X(BatchPutStart, 0x0040, msg::Batch<msg::PutStartRequest>,                                    \
    msg::Batch<msg::BatchItem<msg::PutStartReply>>, Call)                                       \
  X(BatchPutEnd, 0x0041, msg::Batch<msg::KeyRequest>, msg::Batch<Status>, Call)                 \
  X(BatchPutRevoke, 0x0042, msg::Batch<msg::KeyRequest>, msg::Batch<Status>, Call)              \
  X(BatchGetReplicaList, 0x0043, msg::Batch<msg::KeyRequest>,                                   \
    msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>, Call)                                 \
  X(BatchExistKey, 0x0044, msg::Batch<msg::KeyRequest>, msg::Batch<msg::BatchItem<bool>>, Call) \
  X(BatchRemove, 0x0045, msg::Batch<msg::RemoveRequest>, msg::Batch<Status>, Call)              \
  /* the client is done reading these keys: their leases may end early */                       \
  X(ReleaseLeases, 0x0046, msg::Batch<msg::KeyRequest>, Empty, Notify)                          \
  /* BatchPutStart with each request's placement on the wire */                                 \
  X(BatchPutStartEx, 0x0047, msg::Batch<msg::PutStartExRequest>,                                \
    msg::Batch<msg::BatchItem<msg::PutStartReply>>, Call)                                       \
  /* RemoveAll, with force: leased objects too */                                               \
  X(RemoveAllEx, 0x0048, msg::RemoveAllRequest, msg::RemoveAllReply, Call)                      \
  /* what a client moved since its last report, per data path and direction */                  \
  X(ReportTransfers, 0x0049, msg::TransferReport, Empty, Notify)                               \
  /* replica operations (msg/ops_messages.h): an upsert's start, ended by PutEnd */          \
  X(BatchUpsertStart, 0x0060, msg::Batch<msg::PutStartExRequest>,                               \
    msg::Batch<msg::BatchItem<msg::PutStartReply>>, Call)                                       \
  X(CreateCopyTask, 0x0061, msg::CreateCopyTaskRequest, msg::TaskId, Call)                      \
  X(CreateMoveTask, 0x0062, msg::CreateMoveTaskRequest, msg::TaskId, Call)                      \
  X(QueryTask, 0x0063, msg::TaskRequest, msg::TaskInfo, Call)                                   \
  X(TaskStart, 0x0064, msg::TaskRequest, msg::TaskStartReply, Call)                             \
  X(TaskEnd, 0x0065, msg::TaskEndRequest, Empty, Call)                                          \
  X(BatchReplicaClear, 0x0066, msg::ReplicaClearRequest, msg::ReplicaClearReply, Call)          \
  X(RemoveByRegex, 0x0067, msg::RemoveByRegexRequest, msg::RemoveByRegexReply, Call)          \
  /* reads a client served from its direct-read cache (issue 33) */                           \
  X(ReportAccesses, 0x0090, msg::AccessReport, Empty, Notify)                                \
  /* the disk tier (msg/tier_messages.h, issue 31): a store's disk objects at mount */         \
  X(TierAnnounce, 0x0070, msg::TierAnnounceRequest, msg::TierAnnounceReply, Call)             \
  /* a store's disk-tier worker pulls its queue and reports what it did */                    \
  X(TierFetch, 0x0071, msg::TierFetchRequest, msg::TierFetchReply, Call)                     \
  /* TierFetch that the master answers once it has work for the store (a long-poll) */          \
  X(TierPoll, 0x0072, msg::TierPollRequest, msg::TierFetchReply, Call)                       \
  /* ListKeys with each key's tier (memory, disk, both) */                                     \
  X(ListKeysTiered, 0x0073, msg::ListKeysRequest, msg::TieredListKeysReply, Call)
// clang-format on
