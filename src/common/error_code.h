// ErrorCode: the numeric error values mooncake reports, on the wire, in logs
// and in the admin HTTP API. The values match the reference system's so that
// users' log greps and dashboards keep working. Thread-safe (constants only).
#pragma once

#include <cstdint>
#include <string_view>

namespace mc {

enum class ErrorCode : int32_t {
  OK = 0,
  INTERNAL_ERROR = -1,
  BUFFER_OVERFLOW = -10,
  SEGMENT_NOT_FOUND = -101,
  SEGMENT_ALREADY_EXISTS = -102,
  CLIENT_NOT_FOUND = -103,
  NO_AVAILABLE_HANDLE = -200,
  INVALID_KEY = -400,
  WRITE_FAIL = -500,
  INVALID_PARAMS = -600,
  ILLEGAL_CLIENT = -601,
  INVALID_WRITE = -700,
  INVALID_READ = -701,
  INVALID_REPLICA = -702,
  REPLICA_IS_NOT_READY = -703,
  OBJECT_NOT_FOUND = -704,
  OBJECT_ALREADY_EXISTS = -705,
  OBJECT_HAS_LEASE = -706,
  LEASE_EXPIRED = -707,
  // The reference's code; ours also answers a direct read whose location no
  // longer holds the version it names (stale; ask the master again).
  REPLICA_IS_GONE = -712,
  TRANSFER_FAIL = -800,
  CHECKSUM_MISMATCH = -801,
  RPC_FAIL = -900,
  RPC_TIMEOUT = -901,
  // Ours, beyond the reference: authentication failures and protocol misuse.
  AUTH_FAILED = -902,
  PROTOCOL_ERROR = -903,
  UNAVAILABLE_IN_CURRENT_STATUS = -1010,
  NOT_SUPPORTED = -1012,
  TASK_NOT_FOUND = -1400,
  TASK_PENDING_LIMIT_EXCEEDED = -1401,
  // The disk tier (the reference's FILE range).
  FILE_NOT_FOUND = -1100,
  FILE_OPEN_FAIL = -1101,
  FILE_READ_FAIL = -1102,
  FILE_WRITE_FAIL = -1103,
};

// "OBJECT_NOT_FOUND" etc.; "UNKNOWN_ERROR" for a value not listed above.
std::string_view ErrorCodeName(ErrorCode code);

// True if `value` is one of the codes above (used when decoding the wire).
bool IsKnownErrorCode(int32_t value);

}  // namespace mc
