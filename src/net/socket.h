// POSIX TCP sockets for every module that opens one (the RPC server and
// client, the data plane, the bench): address parsing, listening,
// connecting with a deadline, and whole-buffer I/O with a deadline. All
// times are microseconds. Callers that report their own error codes (the
// data plane's TRANSFER_FAIL) wrap these errors, which name the address and
// the errno text. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

typedef struct ssl_st SSL;

namespace mc::net {

// A connection: a plain fd, or an fd carrying a TLS session (net/tls.h).
// Converts from a bare fd so plain callers stay as they were.
struct Stream {
  int fd = -1;
  SSL* ssl = nullptr;
  Stream(int f) : fd(f) {}  // NOLINT: implicit on purpose
  Stream(int f, SSL* s) : fd(f), ssl(s) {}
};

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// "host:port" or "[v6]:port".
Result<HostPort> ParseHostPort(std::string_view text);

// Non-blocking listening socket with SO_REUSEADDR. Port 0 picks a free one.
Result<int> ListenTcp(const std::string& host, uint16_t port, int backlog);
uint16_t LocalPort(int fd);

// Blocking socket connected within `timeout_us`, with TCP_NODELAY.
Result<int> ConnectTcp(const HostPort& hp, uint64_t timeout_us);

void SetNoDelay(int fd);
bool SetNonBlocking(int fd, bool on);

// Monotonic microseconds, for deadlines of real I/O (not injected time:
// these bound how long a syscall may wait).
uint64_t MonotonicUs();

// Writes all of `data` before `deadline_us` (poll between partial writes).
// With TLS the fd must be non-blocking.
Status WriteAll(Stream s, std::string_view data, uint64_t deadline_us);
// Reads at least one byte into `buf` (up to `cap`) before `deadline_us`.
// Returns bytes read; 0 means the peer closed.
Result<size_t> ReadSome(Stream s, char* buf, size_t cap, uint64_t deadline_us);

}  // namespace mc::net
