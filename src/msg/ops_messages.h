// The master's replica operations as plain request/response structs: copy
// and move tasks, clearing replicas, removal by regular expression. Upserts
// reuse PutStartRequest / PutStartReply (messages.h). Same rules as
// messages.h: vocabulary only, no behaviour. Plain values, not synchronized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ceilings.h"
#include "msg/messages.h"

namespace mc::msg {

// A task's id: 128 bits, the reference's UUID (a pair of 64-bit numbers).
struct TaskId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const TaskId&) const = default;
  bool operator<(const TaskId& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.hi, "task.hi");
    f(s.lo, "task.lo");
  }
};

// Numbered as the reference numbers them (its TaskType / TaskStatus enums).
enum class TaskType : uint8_t { kReplicaCopy = 0, kReplicaMove = 1 };
enum class TaskStatus : uint8_t { kPending = 0, kProcessing = 1, kFailed = 2, kSuccess = 3 };

// Adds one replica of `key` on each of `targets` (segment names).
struct CreateCopyTaskRequest {
  ClientId client;  // runs the task
  std::string key;
  std::vector<std::string> targets;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.key, "key");
    f(s.targets, "targets count", kMaxWireReplicas, "target");
  }
};
// Moves the replica of `key` on segment `source` to segment `target`.
struct CreateMoveTaskRequest {
  ClientId client;
  std::string key;
  std::string source;
  std::string target;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.key, "key");
    f(s.source, "source");
    f(s.target, "target");
  }
};
// QueryTask, TaskStart.
struct TaskRequest {
  ClientId client;
  TaskId task;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.task, "task");
  }
};
struct TaskInfo {
  TaskId id;
  // A TaskType and a TaskStatus, as bytes on the wire (a newer master may
  // add values; the client shows them as numbers).
  uint8_t type = static_cast<uint8_t>(TaskType::kReplicaCopy);
  uint8_t status = static_cast<uint8_t>(TaskStatus::kPending);
  uint64_t created_unix_ms = 0;
  uint64_t updated_unix_ms = 0;
  ClientId assigned_client;
  std::string message;  // why it failed; empty otherwise
  std::string key;
  TaskStatus task_status() const { return static_cast<TaskStatus>(status); }
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.id, "id");
    f(s.type, "type");
    f(s.status, "status");
    f(s.created_unix_ms, "created_unix_ms");
    f(s.updated_unix_ms, "updated_unix_ms");
    f(s.assigned_client, "assigned_client");
    f(s.message, "message");
    f(s.key, "key");
  }
};
// What the task's client copies: the source replica (read under a lease)
// into each target replica (written like a put).
struct TaskStartReply {
  std::string key;
  uint64_t size_bytes = 0;
  uint64_t lease_ttl_us = 0;  // the source may be read until it expires
  ReplicaDesc source;
  std::vector<ReplicaDesc> targets;  // empty: every target already held one
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.key, "key");
    f(s.size_bytes, "size_bytes");
    f(s.lease_ttl_us, "lease_ttl_us");
    f(s.source, "source");
    f(s.targets, "targets count", kMaxWireReplicas);
  }
};
struct TaskEndRequest {
  ClientId client;
  TaskId task;
  bool ok = false;
  std::string message;  // when !ok: what went wrong
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.task, "task");
    f(s.ok, "ok");
    f(s.message, "message");
  }
};

// Clears the replicas of `keys` on `segment_name` (every replica when empty).
struct ReplicaClearRequest {
  ClientId client;
  std::vector<std::string> keys;
  std::string segment_name;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.keys, "keys count", kMaxBatchItems, "key");
    f(s.segment_name, "segment_name");
  }
};
struct ReplicaClearReply {
  std::vector<std::string> cleared;  // in request order
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.cleared, "cleared count", kMaxBatchItems, "key");
  }
};

struct RemoveByRegexRequest {
  std::string pattern;  // ECMAScript, matched anywhere in the key
  bool force = false;   // leased objects too
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.pattern, "pattern");
    f(s.force, "force");
  }
};
struct RemoveByRegexReply {
  uint64_t removed = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.removed, "removed"); }
};

}  // namespace mc::msg
