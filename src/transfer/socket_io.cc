#include "transfer/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mc::transfer {

namespace {

Status IoError(const char* what, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return Error(ErrorCode::RPC_TIMEOUT, std::string(what) + " timed out");
  }
  return Error(ErrorCode::TRANSFER_FAIL, std::string(what) + ": " + std::strerror(err));
}

void SetTimeout(int fd, int opt, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

}  // namespace

void TuneSocket(int fd, const SocketTuning& tuning) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (tuning.buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &tuning.buffer_bytes, sizeof(int));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tuning.buffer_bytes, sizeof(int));
  }
  if (tuning.io_timeout_ms > 0) {
    SetTimeout(fd, SO_SNDTIMEO, tuning.io_timeout_ms);
    SetTimeout(fd, SO_RCVTIMEO, tuning.io_timeout_ms);
  }
}

Status SendAllV(int fd, iovec* iov, int iovcnt) {
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

Status SendAll(int fd, const void* data, size_t len) {
  iovec iov{const_cast<void*>(data), len};
  return SendAllV(fd, &iov, 1);
}

Status RecvAll(int fd, void* data, size_t len) {
  auto* p = static_cast<uint8_t*>(data);
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

Result<int> ConnectTcp(const std::string& host, uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port_text = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    return Error(ErrorCode::TRANSFER_FAIL, "resolve " + host + ": " + gai_strerror(rc));
  }
  std::string last = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd pfd{fd, POLLOUT, 0};
        int pr = poll(&pfd, 1, timeout_ms > 0 ? timeout_ms : -1);
        socklen_t len = sizeof(err);
        if (pr == 1) {
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        } else {
          err = pr == 0 ? ETIMEDOUT : errno;
        }
      }
    }
    if (err == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      freeaddrinfo(res);
      return fd;
    }
    last = std::strerror(err);
    close(fd);
  }
  freeaddrinfo(res);
  return Error(ErrorCode::TRANSFER_FAIL,
               "connect " + host + ":" + std::to_string(port) + ": " + last);
}

Result<int> ListenTcp(const std::string& host, uint16_t port, int backlog, uint16_t* bound_port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Error(ErrorCode::INVALID_PARAMS, "listen address '" + host + "' is not an IPv4 literal");
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(ErrorCode::INTERNAL_ERROR, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, backlog) != 0) {
    int err = errno;
    close(fd);
    return Error(ErrorCode::INTERNAL_ERROR, "listen on " + host + ":" + std::to_string(port) +
                                                ": " + std::strerror(err));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound_port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace mc::transfer
