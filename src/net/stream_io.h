// Blocking stream I/O for the TCP data path: whole-buffer send/recv in large
// syscalls and socket tuning (connect and listen are in net/socket.h).
// Thread-safe (stateless); one fd must not be used by two threads at once.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/result.h"
#include "net/socket.h"

namespace mc::net {

struct SocketTuning {
  // SO_SNDBUF and SO_RCVBUF; 0 leaves them to the kernel's autotuning, which
  // can grow past a fixed size (up to tcp_rmem/tcp_wmem). Setting a size
  // disables autotuning for that socket. In transfer_bench on a shared
  // 2-core host, raw loopback with autotuned buffers beat a fixed 4 MiB in
  // most samples (e.g. 2 connections 3.6 vs 2.6 GB/s) and the transports were
  // the same or slightly faster with it.
  int buffer_bytes = 0;
  uint64_t io_timeout_us = 30000000;  // SO_SNDTIMEO / SO_RCVTIMEO (0 = none)
};

// TCP_NODELAY, buffer sizes and timeouts; errors are ignored (best effort).
void TuneSocket(int fd, const SocketTuning& tuning);

// With TLS (s.ssl set) the fd stays blocking and its socket timeouts bound
// each wait, as for a plain fd.
// Sends all bytes of all iovecs (sendmsg, MSG_NOSIGNAL). `iov` is modified.
Status SendAllV(Stream s, iovec* iov, int iovcnt);
Status SendAll(Stream s, const void* data, size_t len);
// Receives exactly `len` bytes (MSG_WAITALL loop). A clean EOF before the
// first byte reports TRANSFER_FAIL "peer closed"; a timeout RPC_TIMEOUT.
Status RecvAll(Stream s, void* data, size_t len);

}  // namespace mc::net
