// The master's replica operations as plain request/response structs: copy
// and move tasks, clearing replicas, removal by regular expression. Upserts
// reuse PutStartRequest / PutStartReply (messages.h). Same rules as
// messages.h: vocabulary only, no behaviour. Plain values, not synchronized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "msg/messages.h"

namespace mc::msg {

// A task's id: 128 bits, the reference's UUID (a pair of 64-bit numbers).
struct TaskId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const TaskId&) const = default;
  bool operator<(const TaskId& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
};

// Numbered as the reference numbers them (its TaskType / TaskStatus enums).
enum class TaskType : uint8_t { kReplicaCopy = 0, kReplicaMove = 1 };
enum class TaskStatus : uint8_t { kPending = 0, kProcessing = 1, kFailed = 2, kSuccess = 3 };

// Adds one replica of `key` on each of `targets` (segment names).
struct CreateCopyTaskRequest {
  ClientId client;  // runs the task
  std::string key;
  std::vector<std::string> targets;
};
// Moves the replica of `key` on segment `source` to segment `target`.
struct CreateMoveTaskRequest {
  ClientId client;
  std::string key;
  std::string source;
  std::string target;
};
// QueryTask, TaskStart.
struct TaskRequest {
  ClientId client;
  TaskId task;
};
struct TaskInfo {
  TaskId id;
  TaskType type = TaskType::kReplicaCopy;
  TaskStatus status = TaskStatus::kPending;
  uint64_t created_unix_ms = 0;
  uint64_t updated_unix_ms = 0;
  ClientId assigned_client;
  std::string message;  // why it failed; empty otherwise
  std::string key;
};
// What the task's client copies: the source replica (read under a lease)
// into each target replica (written like a put).
struct TaskStartReply {
  std::string key;
  uint64_t size_bytes = 0;
  uint64_t lease_ttl_us = 0;  // the source may be read until it expires
  ReplicaDesc source;
  std::vector<ReplicaDesc> targets;  // empty: every target already held one
};
struct TaskEndRequest {
  ClientId client;
  TaskId task;
  bool ok = false;
  std::string message;  // when !ok: what went wrong
};

// Clears the replicas of `keys` on `segment_name` (every replica when empty).
struct ReplicaClearRequest {
  ClientId client;
  std::vector<std::string> keys;
  std::string segment_name;
};
struct ReplicaClearReply {
  std::vector<std::string> cleared;  // in request order
};

struct RemoveByRegexRequest {
  std::string pattern;  // ECMAScript, matched anywhere in the key
  bool force = false;   // leased objects too
};
struct RemoveByRegexReply {
  uint64_t removed = 0;
};

}  // namespace mc::msg
