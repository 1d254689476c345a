#include "cli/client_common.h"

#include <cstdio>

#include "cli/command.h"

namespace mc::cli {

int ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::OK:
      return kExitOk;
    case ErrorCode::OBJECT_NOT_FOUND:
      return kExitNotFound;
    case ErrorCode::OBJECT_ALREADY_EXISTS:
      return kExitExists;
    case ErrorCode::NO_AVAILABLE_HANDLE:
      return kExitNoSpace;
    case ErrorCode::AUTH_FAILED:
      return kExitAuth;
    case ErrorCode::RPC_FAIL:
    case ErrorCode::RPC_TIMEOUT:
    case ErrorCode::TRANSFER_FAIL:
      return kExitUnavailable;
    case ErrorCode::INVALID_KEY:
    case ErrorCode::INVALID_PARAMS:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

int ReportError(const char* cmd, const std::string& key, const Status& status) {
  if (key.empty()) {
    std::fprintf(stderr, "mooncake %s: %s\n", cmd, status.ToString().c_str());
  } else {
    std::fprintf(stderr, "mooncake %s: %s: %s\n", cmd, key.c_str(), status.ToString().c_str());
  }
  return ExitCodeFor(status.code());
}

}  // namespace mc::cli
