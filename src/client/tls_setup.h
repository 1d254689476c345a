// TLS contexts from the [tls] settings, for the processes that use the
// client module (CLI, bench, store, engine): the config module parses, this
// turns the result into net::TlsContext. Thread-safe (no state).
#pragma once

#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "net/tls.h"

namespace mc::client {

net::TlsSettings TlsSettingsOf(const TlsConfig& tls);

// The client side: null when [tls] has neither cert nor ca (plain TCP).
// INVALID_PARAMS naming the file when a file is missing, unreadable,
// expired or does not match its key.
Result<std::shared_ptr<net::TlsContext>> ClientTls(const TlsConfig& tls);

// The server side (data ports): null when [tls] cert is empty.
Result<std::shared_ptr<net::TlsContext>> ServerTls(const TlsConfig& tls);

}  // namespace mc::client
