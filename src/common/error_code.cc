#include "common/error_code.h"

namespace mc {

namespace {
struct Entry {
  ErrorCode code;
  std::string_view name;
};
constexpr Entry kEntries[] = {
    {ErrorCode::OK, "OK"},
    {ErrorCode::INTERNAL_ERROR, "INTERNAL_ERROR"},
    {ErrorCode::BUFFER_OVERFLOW, "BUFFER_OVERFLOW"},
    {ErrorCode::SEGMENT_NOT_FOUND, "SEGMENT_NOT_FOUND"},
    {ErrorCode::SEGMENT_ALREADY_EXISTS, "SEGMENT_ALREADY_EXISTS"},
    {ErrorCode::CLIENT_NOT_FOUND, "CLIENT_NOT_FOUND"},
    {ErrorCode::NO_AVAILABLE_HANDLE, "NO_AVAILABLE_HANDLE"},
    {ErrorCode::INVALID_KEY, "INVALID_KEY"},
    {ErrorCode::WRITE_FAIL, "WRITE_FAIL"},
    {ErrorCode::INVALID_PARAMS, "INVALID_PARAMS"},
    {ErrorCode::ILLEGAL_CLIENT, "ILLEGAL_CLIENT"},
    {ErrorCode::INVALID_WRITE, "INVALID_WRITE"},
    {ErrorCode::INVALID_READ, "INVALID_READ"},
    {ErrorCode::INVALID_REPLICA, "INVALID_REPLICA"},
    {ErrorCode::REPLICA_IS_NOT_READY, "REPLICA_IS_NOT_READY"},
    {ErrorCode::OBJECT_NOT_FOUND, "OBJECT_NOT_FOUND"},
    {ErrorCode::OBJECT_ALREADY_EXISTS, "OBJECT_ALREADY_EXISTS"},
    {ErrorCode::OBJECT_HAS_LEASE, "OBJECT_HAS_LEASE"},
    {ErrorCode::LEASE_EXPIRED, "LEASE_EXPIRED"},
    {ErrorCode::REPLICA_IS_GONE, "REPLICA_IS_GONE"},
    {ErrorCode::TRANSFER_FAIL, "TRANSFER_FAIL"},
    {ErrorCode::CHECKSUM_MISMATCH, "CHECKSUM_MISMATCH"},
    {ErrorCode::RPC_FAIL, "RPC_FAIL"},
    {ErrorCode::RPC_TIMEOUT, "RPC_TIMEOUT"},
    {ErrorCode::AUTH_FAILED, "AUTH_FAILED"},
    {ErrorCode::PROTOCOL_ERROR, "PROTOCOL_ERROR"},
    {ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "UNAVAILABLE_IN_CURRENT_STATUS"},
    {ErrorCode::NOT_SUPPORTED, "NOT_SUPPORTED"},
    {ErrorCode::TASK_NOT_FOUND, "TASK_NOT_FOUND"},
    {ErrorCode::TASK_PENDING_LIMIT_EXCEEDED, "TASK_PENDING_LIMIT_EXCEEDED"},
    {ErrorCode::FILE_NOT_FOUND, "FILE_NOT_FOUND"},
    {ErrorCode::FILE_OPEN_FAIL, "FILE_OPEN_FAIL"},
    {ErrorCode::FILE_READ_FAIL, "FILE_READ_FAIL"},
    {ErrorCode::FILE_WRITE_FAIL, "FILE_WRITE_FAIL"},
};
}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const Entry& e : kEntries) {
    if (e.code == code) return e.name;
  }
  return "UNKNOWN_ERROR";
}

bool IsKnownErrorCode(int32_t value) {
  for (const Entry& e : kEntries) {
    if (static_cast<int32_t>(e.code) == value) return true;
  }
  return false;
}

}  // namespace mc
