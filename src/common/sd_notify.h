// Readiness and stop notices to the service manager, as sd_notify(3) sends
// them, without libsystemd (the binary is static): one datagram of
// "KEY=VALUE" lines to the AF_UNIX socket named by $NOTIFY_SOCKET. A path
// starting with '@' names an abstract socket. When NOTIFY_SOCKET is unset or
// empty (not run by systemd with Type=notify) every call does nothing.
// Thread-safe: each call opens, sends on and closes its own socket.
#pragma once

#include <string_view>

#include "common/result.h"

namespace mc {

// Sends `state` ("READY=1", "STOPPING=1", "STATUS=...", several joined by
// '\n') to `socket_path` ("/run/systemd/notify" or "@name").
Status SdNotifyTo(std::string_view socket_path, std::string_view state);

// Sends `state` to $NOTIFY_SOCKET; Ok without sending when it is unset.
Status SdNotify(std::string_view state);

// SdNotify for the daemons: a failure is logged, never fatal, since a unit
// of another Type= runs the process just as well.
void NotifyServiceManager(std::string_view state);

}  // namespace mc
