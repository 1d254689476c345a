#include "net/unix_socket.h"

#include <sys/time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>


namespace mc::net {

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// The address of `path`; its length in *len. '@' makes it abstract.
Result<sockaddr_un> Address(const std::string& path, socklen_t* len) {
  if (path.empty() || path.size() > kMaxUnixPathBytes || path == "@") {
    return Error(ErrorCode::INVALID_PARAMS, "socket path '" + path + "' is empty or too long");
  }
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  if (path[0] == '@') a.sun_path[0] = '\0';
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() +
                                (path[0] == '@' ? 0 : 1));
  return a;
}

timeval Timeval(uint64_t us) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(us / 1'000'000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1'000'000);
  return tv;
}

}  // namespace

Result<int> ListenUnix(const std::string& path, int backlog) {
  socklen_t len = 0;
  MC_ASSIGN_OR_RETURN(sockaddr_un a, Address(path, &len));
  if (path[0] != '@') ::unlink(path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(ErrorCode::RPC_FAIL, Errno("socket"));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, backlog) != 0) {
    std::string why = Errno("cannot listen on unix socket " + path);
    ::close(fd);
    return Error(ErrorCode::RPC_FAIL, why);
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path) {
  socklen_t len = 0;
  MC_ASSIGN_OR_RETURN(sockaddr_un a, Address(path, &len));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(ErrorCode::RPC_FAIL, Errno("socket"));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    std::string why = Errno("no mooncake client at unix socket " + path);
    ::close(fd);
    return Error(ErrorCode::RPC_FAIL, why);
  }
  return fd;
}

Status SetUnixTimeouts(int sock, uint64_t recv_timeout_us, uint64_t send_timeout_us) {
  timeval r = Timeval(recv_timeout_us), w = Timeval(send_timeout_us);
  if (::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &r, sizeof(r)) != 0 ||
      ::setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &w, sizeof(w)) != 0) {
    return Error(ErrorCode::RPC_FAIL, Errno("unix socket timeouts"));
  }
  return Status::Ok();
}

Status SendUnix(int sock, std::string_view data, int fd) {
  size_t done = 0;
  bool fd_sent = fd < 0;
  while (done < data.size()) {
    iovec iov{const_cast<char*>(data.data() + done), data.size() - done};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (!fd_sent) {
      std::memset(control, 0, sizeof(control));
      m.msg_control = control;
      m.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t n = ::sendmsg(sock, &m, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      fd_sent = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Error(ErrorCode::RPC_TIMEOUT, "unix socket send timed out");
    }
    return Error(ErrorCode::RPC_FAIL, "unix socket closed: " + std::string(std::strerror(errno)));
  }
  return Status::Ok();
}

Result<size_t> RecvUnixSome(int sock, char* buf, size_t cap, int* fd) {
  if (fd != nullptr) *fd = -1;
  for (;;) {
    iovec iov{buf, cap};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    ssize_t got = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    if (got > 0) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int passed = -1;
        std::memcpy(&passed, CMSG_DATA(c), sizeof(int));
        if (fd != nullptr && *fd < 0) {
          *fd = passed;
        } else {
          ::close(passed);  // unasked for, or a second one: never leak it
        }
      }
      return static_cast<size_t>(got);
    }
    if (got == 0) return Error(ErrorCode::RPC_FAIL, "unix socket closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Error(ErrorCode::RPC_TIMEOUT, "unix socket receive timed out");
    }
    return Error(ErrorCode::RPC_FAIL, Errno("unix socket receive"));
  }
}

Status RecvUnix(int sock, char* buf, size_t n, int* fd) {
  if (fd != nullptr) *fd = -1;
  size_t done = 0;
  while (done < n) {
    int got_fd = -1;
    auto got = RecvUnixSome(sock, buf + done, n - done, &got_fd);
    if (got_fd >= 0) {
      if (fd != nullptr && *fd < 0) *fd = got_fd; else ::close(got_fd);
    }
    if (!got.ok()) return got.status();
    done += *got;
  }
  return Status::Ok();
}

int32_t PeerPid(int sock) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
  return cred.pid;
}

}  // namespace mc::net
