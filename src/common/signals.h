// Graceful stop on SIGINT/SIGTERM (and reload on SIGHUP) for the server subcommands: the handler
// only sets a flag; the main loop polls it (or waits on it with a timeout).
// Thread-safe.
#pragma once

#include <cstdint>

namespace mc {

// Installs handlers for SIGINT and SIGTERM and ignores SIGPIPE (a peer that
// hangs up must not kill a server).
void InstallStopSignals();
bool StopRequested();
// Sleeps up to `timeout_ms`, returning early (true) once a stop is requested.
bool WaitForStop(uint64_t timeout_ms);

// SIGHUP asks a server to read its TLS certificates again. The handler only
// sets a flag; TakeReloadRequest() returns it and clears it.
void InstallReloadSignal();
bool TakeReloadRequest();

}  // namespace mc
