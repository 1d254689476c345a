// The dummy-client protocol: the table of operations a dummy client sends
// the standalone client over its Unix socket (mooncake-client(1)).
//
// A table of its own, not rows of MC_MASTER_OPS: these operations never
// reach the master, and rpc::Handler (which every master service must
// implement in full) stays as it is. Opcodes are in 0x00A0..0x00BF, a range
// the master table leaves free, so a frame sent to the wrong peer is an
// unknown opcode there. Frames are proto/frame.h's (the same 20-byte header);
// payloads are proto/codec.h's; a reply is a Status then the body.
//
// X(Name, opcode, Request, Reply). Never change a row; add one.
#pragma once

#include <cstdint>
#include <string_view>

#include "msg/dummy_messages.h"
#include "msg/messages.h"
#include "msg/ops_messages.h"
#include "proto/codec.h"

// clang-format off
#define MC_DUMMY_OPS(X)                                                                      \
  X(DummyAttach, 0x00A0, msg::DummyAttachRequest, msg::DummyAttachReply)                     \
  X(DummyPut, 0x00A1, msg::DummyPutRequest, msg::Batch<Status>)                              \
  X(DummyGetInto, 0x00A2, msg::DummyGetRequest, msg::Batch<msg::BatchItem<msg::DummyU64>>)   \
  X(DummyLocate, 0x00A3, msg::DummyKeysRequest, msg::GetReplicaListReply)                    \
  X(DummyExists, 0x00A4, msg::DummyKeysRequest, msg::Batch<msg::BatchItem<bool>>)            \
  X(DummyRemove, 0x00A5, msg::DummyKeysRequest, msg::Batch<Status>)                          \
  X(DummyRemoveAll, 0x00A6, msg::RemoveAllRequest, msg::RemoveAllReply)                      \
  X(DummyList, 0x00A7, msg::ListKeysRequest, msg::ListKeysReply)                             \
  X(DummyClusterStatus, 0x00A8, Empty, msg::ClusterStatusReply)                              \
  X(DummySize, 0x00A9, msg::DummyKeysRequest, msg::Batch<msg::BatchItem<msg::DummyU64>>)     \
  X(DummyCreateCopyTask, 0x00AA, msg::CreateCopyTaskRequest, msg::TaskId)                    \
  X(DummyCreateMoveTask, 0x00AB, msg::CreateMoveTaskRequest, msg::TaskId)                    \
  X(DummyRunTask, 0x00AC, msg::TaskRequest, Empty)                                           \
  X(DummyQueryTask, 0x00AD, msg::TaskRequest, msg::TaskInfo)                                 \
  X(DummyReplicaClear, 0x00AE, msg::ReplicaClearRequest, msg::ReplicaClearReply)             \
  X(DummyRemoveByRegex, 0x00AF, msg::RemoveByRegexRequest, msg::RemoveByRegexReply)          \
  X(DummyPathCounts, 0x00B0, Empty, msg::DummyPathCounts)                                    \
  X(DummyGetIntoLearn, 0x00B1, msg::DummyGetRequest, msg::DummyGetLearnReply)                \
  X(DummyReportAccesses, 0x00B2, msg::DummyAccessReport, Empty)                              \
  X(DummyForgetTable, 0x00B3, Empty, msg::DummyU64)                                          \
  X(DummyDirectPuts, 0x00B4, Empty, msg::DummyDirectPutsReply)
// clang-format on

namespace mc::proto {

enum class DummyOp : uint16_t {
#define MC_DUMMY_OP_ENUM(name, value, Req, Rep) k##name = value,
  MC_DUMMY_OPS(MC_DUMMY_OP_ENUM)
#undef MC_DUMMY_OP_ENUM
};

template <DummyOp op>
struct DummyOpTraits;
#define MC_DUMMY_OP_TRAITS(name, value, Req, Rep)      \
  template <>                                          \
  struct DummyOpTraits<DummyOp::k##name> {             \
    using Request = Req;                               \
    using Reply = Rep;                                 \
    static constexpr std::string_view kName = #name;   \
  };
MC_DUMMY_OPS(MC_DUMMY_OP_TRAITS)
#undef MC_DUMMY_OP_TRAITS

// "DummyPut"; "Unknown" for a value not listed.
inline std::string_view DummyOpName(uint16_t value) {
#define MC_DUMMY_OP_NAME(name, v, Req, Rep) \
  if (value == v) return #name;
  MC_DUMMY_OPS(MC_DUMMY_OP_NAME)
#undef MC_DUMMY_OP_NAME
  return "Unknown";
}

}  // namespace mc::proto
