// HostIdentity: a string equal for two processes exactly when they run on the
// same machine (hostname plus the kernel's boot id), used to decide whether a
// store's segment can be mapped directly. Thread-safe.
#pragma once

#include <string>

namespace mc {

const std::string& HostIdentity();

}  // namespace mc
