#include "net/stream_io.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/tls.h"

namespace mc::net {

namespace {

Status IoError(const char* what, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return Error(ErrorCode::RPC_TIMEOUT, std::string(what) + " timed out");
  }
  return Error(ErrorCode::TRANSFER_FAIL, std::string(what) + ": " + std::strerror(err));
}

void SetTimeout(int fd, int opt, uint64_t us) {
  timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
  setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

// Data-path errors are TRANSFER_FAIL (timeouts stay RPC_TIMEOUT).
Status AsTransfer(Status st) {
  if (st.ok() || st.code() == ErrorCode::RPC_TIMEOUT) return st;
  return Error(ErrorCode::TRANSFER_FAIL, st.message());
}

// Largest TLS record payload: the first record carries the small header
// iovecs together with the start of the data, instead of a record of its own.
constexpr size_t kTlsRecordBytes = 16384;

Status TlsSendAllV(const Stream& s, iovec* iov, int iovcnt) {
  char first[kTlsRecordBytes];
  size_t used = 0;
  while (iovcnt > 0 && used < sizeof first) {
    size_t take = std::min(iov->iov_len, sizeof first - used);
    std::memcpy(first + used, iov->iov_base, take);
    used += take;
    iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + take;
    iov->iov_len -= take;
    if (iov->iov_len > 0) break;
    ++iov;
    --iovcnt;
  }
  MC_RETURN_IF_ERROR(AsTransfer(TlsWrite(s.ssl, s.fd, first, used, 0)));
  for (; iovcnt > 0; ++iov, --iovcnt) {
    MC_RETURN_IF_ERROR(AsTransfer(
        TlsWrite(s.ssl, s.fd, static_cast<const char*>(iov->iov_base), iov->iov_len, 0)));
  }
  return Status::Ok();
}

Status TlsRecvAll(const Stream& s, uint8_t* p, size_t len) {
  size_t got = 0;
  while (got < len) {
    auto n = TlsRead(s.ssl, s.fd, reinterpret_cast<char*>(p + got), len - got, 0);
    if (!n.ok()) return AsTransfer(n.status());
    if (*n == 0) {
      return Error(ErrorCode::TRANSFER_FAIL,
                   got == 0 ? "peer closed the connection"
                            : "peer closed after " + std::to_string(got) + " of " +
                                  std::to_string(len) + " bytes");
    }
    got += *n;
  }
  return Status::Ok();
}

}  // namespace

void TuneSocket(int fd, const SocketTuning& tuning) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (tuning.buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &tuning.buffer_bytes, sizeof(int));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tuning.buffer_bytes, sizeof(int));
  }
  if (tuning.io_timeout_us > 0) {
    SetTimeout(fd, SO_SNDTIMEO, tuning.io_timeout_us);
    SetTimeout(fd, SO_RCVTIMEO, tuning.io_timeout_us);
  }
}

Status SendAllV(Stream s, iovec* iov, int iovcnt) {
  if (s.ssl != nullptr) return TlsSendAllV(s, iov, iovcnt);
  const int fd = s.fd;
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(iovcnt);
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("send", errno);
    }
    size_t left = static_cast<size_t>(n);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return Status::Ok();
}

Status SendAll(Stream s, const void* data, size_t len) {
  iovec iov{const_cast<void*>(data), len};
  return SendAllV(s, &iov, 1);
}

Status RecvAll(Stream s, void* data, size_t len) {
  auto* p = static_cast<uint8_t*>(data);
  if (s.ssl != nullptr) return TlsRecvAll(s, p, len);
  const int fd = s.fd;
  size_t got = 0;
  while (got < len) {
    ssize_t n = recv(fd, p + got, len - got, MSG_WAITALL);
    if (n == 0) {
      return Error(ErrorCode::TRANSFER_FAIL,
                   got == 0 ? "peer closed the connection"
                            : "peer closed after " + std::to_string(got) + " of " +
                                  std::to_string(len) + " bytes");
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("recv", errno);
    }
    got += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status BufferedReader::Read(void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  const size_t have = std::min(n, end_ - begin_);
  if (have > 0) std::memcpy(out, buf_.data() + begin_, have);
  begin_ += have;
  out += have;
  n -= have;
  if (n == 0) return Status::Ok();
  if (n >= kDirectBytes || buf_.empty()) return RecvAll(s_, out, n);
  begin_ = end_ = 0;
  while (end_ < n) {
    ssize_t got = recv(s_.fd, buf_.data() + end_, buf_.size() - end_, 0);
    if (got == 0) return Error(ErrorCode::TRANSFER_FAIL, "peer closed the connection");
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError("recv", errno);
    }
    end_ += static_cast<size_t>(got);
  }
  std::memcpy(out, buf_.data(), n);
  begin_ = n;
  return Status::Ok();
}

}  // namespace mc::net
