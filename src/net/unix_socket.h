// Unix-domain stream sockets between processes of one host (the standalone
// client `mooncake client` and its dummy clients): listen, connect, whole
// buffers with a deadline, and passing one file descriptor beside a message
// (SCM_RIGHTS), so a memory pool is shared by mapping, never copied through
// the socket. A path starting with '@' names an abstract socket (Linux: no
// file, gone with its listener), as the reference's "@mooncake_client_PORT.sock".
// Thread-safe (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc::net {

// Longest path (sun_path less its terminator).
inline constexpr size_t kMaxUnixPathBytes = 107;

// Blocking listening socket; a filesystem path is unlinked first (a stale
// file from a dead listener must not block a restart).
Result<int> ListenUnix(const std::string& path, int backlog);
// Blocking connected socket; RPC_FAIL naming the path when nobody listens.
Result<int> ConnectUnix(const std::string& path);

// Both I/O calls below block, bounded by the socket's timeouts: a timed-out
// call is RPC_TIMEOUT. One syscall per message in the common case (the
// machines this runs on may charge microseconds per syscall). 0: no limit.
Status SetUnixTimeouts(int sock, uint64_t recv_timeout_us, uint64_t send_timeout_us);

// Sends all of `data`, with `fd` attached to its first byte when fd >= 0.
Status SendUnix(int sock, std::string_view data, int fd);
// Receives at least one and at most `cap` bytes into `buf`; returns how
// many. A descriptor that arrives with them is stored in *fd (else *fd stays
// -1; fd may be null to refuse one, which is then closed). RPC_FAIL "closed"
// when the peer went away.
Result<size_t> RecvUnixSome(int sock, char* buf, size_t cap, int* fd);
// Receives exactly `n` bytes (descriptors as RecvUnixSome).
Status RecvUnix(int sock, char* buf, size_t n, int* fd);

// The pid of the peer process (SO_PEERCRED), 0 when unknown.
int32_t PeerPid(int sock);

}  // namespace mc::net
