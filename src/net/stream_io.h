// Blocking stream I/O for the TCP data path: whole-buffer send/recv in large
// syscalls and socket tuning (connect and listen are in net/socket.h).
// Thread-safe (stateless); one fd must not be used by two threads at once.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// Reads a stream through a buffer: one recv usually brings several small
// messages (pipelined requests or replies and their data), copied out from
// here, since for small objects a copy is far cheaper than a syscall. A piece
// of at least kDirectBytes, or any on a TLS stream (OpenSSL buffers itself),
// is received straight into place. Errors as RecvAll.
class BufferedReader {
 public:
  static constexpr size_t kBufferBytes = 64u << 10;
  static constexpr size_t kDirectBytes = 32u << 10;
  explicit BufferedReader(Stream s) : s_(s), buf_(s.ssl == nullptr ? kBufferBytes : 0) {}

  Status Read(void* dst, size_t n);
  // Bytes received and not yet read.
  bool buffered() const { return end_ > begin_; }
  // At least `bytes` are buffered.
  bool HasBuffered(size_t bytes) const { return end_ - begin_ >= bytes; }
  // Nothing is ever buffered (TLS).
  bool passthrough() const { return buf_.empty(); }

 private:
  Stream s_;
  std::vector<uint8_t> buf_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace mc::net
