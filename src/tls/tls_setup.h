// TLS contexts from the [tls] settings, for every process that serves or
// connects: the master, the store, the metadata server, the client (CLI,
// bench, engine). The config module parses [tls]; net does TLS; this turns
// the one into the other, says in the log what a server secures, and reloads
// the certificates on SIGHUP. In namespace mc beside TlsConfig, which it reads.
// Thread-safe (no state).
#pragma once

#include <functional>
#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "net/tls.h"

struct ssl_ctx_st;

namespace mc {

net::TlsSettings TlsSettingsOf(const TlsConfig& tls);

// The client side: null when [tls] has neither cert nor ca (plain TCP).
// INVALID_PARAMS naming the file when a file is missing, unreadable,
// expired or does not match its key.
Result<std::shared_ptr<net::TlsContext>> ClientTls(const TlsConfig& tls);

// How a server context is announced in the process's log.
struct ServerTlsLog {
  // What it secures ("the data port", "every port"); null: no line.
  const char* listeners = nullptr;
  // Warned when [tls] has a CA but no cert, so the process listens in
  // plain TCP; null: no warning.
  const char* without_cert = nullptr;
};

// The server side: null when [tls] cert is empty (plain TCP); errors as
// ClientTls.
Result<std::shared_ptr<net::TlsContext>> ServerTls(const TlsConfig& tls, ServerTlsLog log);

// cpp-httplib's SSLServer set-up that makes an HTTP listener use `tls`
// (and its reloads); empty when `tls` is null.
std::function<bool(ssl_ctx_st&)> HttpServerTls(std::shared_ptr<net::TlsContext> tls);

// SIGHUP: re-reads `tls`'s certificates (open connections keep theirs) and
// logs the outcome; null: logs that there is nothing to reload.
void ReloadTls(net::TlsContext* tls);
// The log line of a reload's outcome, for a process that reloads several
// contexts itself.
void LogTlsReload(const Status& reloaded);

}  // namespace mc
