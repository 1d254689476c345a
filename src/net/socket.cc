#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>

#include "net/tls.h"

namespace mc::net {

namespace {
std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

int PollFor(int fd, short events, uint64_t deadline_us) {
  for (;;) {
    uint64_t now = MonotonicUs();
    if (now >= deadline_us) return 0;
    uint64_t wait_ms = (deadline_us - now + 999) / 1000;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(wait_ms > 60000 ? 60000 : wait_ms));
    if (rc < 0 && errno == EINTR) continue;
    if (rc != 0) return rc;
  }
}
}  // namespace

uint64_t MonotonicUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

Result<HostPort> ParseHostPort(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size()) {
    return Error(ErrorCode::INVALID_PARAMS, "'" + std::string(text) + "': expected host:port");
  }
  HostPort hp;
  hp.host = std::string(text.substr(0, colon));
  if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  std::string_view port = text.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || ptr != port.data() + port.size() || value > 65535 || hp.host.empty()) {
    return Error(ErrorCode::INVALID_PARAMS, "'" + std::string(text) + "': bad host or port");
  }
  hp.port = static_cast<uint16_t>(value);
  return hp;
}

namespace {
Result<addrinfo*> Resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  return res;
}
}  // namespace

Result<int> ListenTcp(const std::string& host, uint16_t port, int backlog) {
  MC_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, true));
  std::string where = host + ":" + std::to_string(port);
  std::string last = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Errno("socket");
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      ::freeaddrinfo(res);
      return fd;
    }
    last = Errno("bind/listen");
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return Error(ErrorCode::RPC_FAIL, "cannot listen on " + where + ": " + last);
}

uint16_t LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool SetNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0) return false;
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  return ::fcntl(fd, F_SETFL, flags) == 0;
}

Result<int> ConnectTcp(const HostPort& hp, uint64_t timeout_us) {
  MC_ASSIGN_OR_RETURN(addrinfo * res, Resolve(hp.host, hp.port, false));
  uint64_t deadline = MonotonicUs() + timeout_us;
  std::string last = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Errno("socket");
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (PollFor(fd, POLLOUT, deadline) <= 0) {
        last = "connect timed out";
        ::close(fd);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      ::freeaddrinfo(res);
      SetNonBlocking(fd, false);
      SetNoDelay(fd);
      return fd;
    }
    last = Errno("connect");
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return Error(ErrorCode::RPC_FAIL, last);
}

Status WriteAll(Stream s, std::string_view data, uint64_t deadline_us) {
  if (s.ssl != nullptr) return TlsWrite(s.ssl, s.fd, data.data(), data.size(), deadline_us);
  const int fd = s.fd;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (PollFor(fd, POLLOUT, deadline_us) <= 0) return Error(ErrorCode::RPC_TIMEOUT, "send timed out");
      continue;
    }
    return Error(ErrorCode::RPC_FAIL, Errno("send"));
  }
  return Status::Ok();
}

Result<size_t> ReadSome(Stream s, char* buf, size_t cap, uint64_t deadline_us) {
  if (s.ssl != nullptr) return TlsRead(s.ssl, s.fd, buf, cap, deadline_us);
  const int fd = s.fd;
  for (;;) {
    ssize_t n = ::recv(fd, buf, cap, MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Error(ErrorCode::RPC_FAIL, Errno("recv"));
    int rc = PollFor(fd, POLLIN, deadline_us);
    if (rc == 0) return Error(ErrorCode::RPC_TIMEOUT, "receive timed out");
    if (rc < 0) return Error(ErrorCode::RPC_FAIL, Errno("poll"));
  }
}

}  // namespace mc::net
