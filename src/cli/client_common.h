// Shared plumbing of the client subcommands (put, get, ls, rm, exists):
// connecting with the resolved config and turning errors into one stderr
// line and a documented exit code.
#pragma once

#include <memory>
#include <string>

#include "client/client.h"
#include "common/result.h"

namespace mc::cli {

// kExitNotFound, kExitUnavailable, ... for an error code (see command.h).
int ExitCodeFor(ErrorCode code);

// Prints "mooncake CMD: KEY: <reason>" (key omitted when empty) and returns
// the exit code for the status.
int ReportError(const char* cmd, const std::string& key, const Status& status);

}  // namespace mc::cli
