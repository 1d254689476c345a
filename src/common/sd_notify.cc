#include "common/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"

namespace mc {

namespace {

// systemd sends no reply, and a notice is a few dozen bytes; a bound keeps a
// caller's mistake (a huge STATUS=) from becoming a huge datagram.
constexpr size_t kMaxStateBytes = 4096;

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

Status SdNotifyTo(std::string_view socket_path, std::string_view state) {
  if (state.empty() || state.size() > kMaxStateBytes) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "sd_notify: state must be 1.." + std::to_string(kMaxStateBytes) + " bytes");
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // sun_path is not NUL-terminated for abstract names, and need not be for
  // paths, so the whole array is usable.
  if (socket_path.size() < 2 || socket_path.size() > sizeof(addr.sun_path) ||
      (socket_path[0] != '/' && socket_path[0] != '@')) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "sd_notify: NOTIFY_SOCKET '" + std::string(socket_path) +
                     "' is neither an absolute path nor an abstract name (@name)");
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (socket_path[0] == '@') addr.sun_path[0] = '\0';
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path.size());

  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(ErrorCode::INTERNAL_ERROR, Errno("sd_notify: socket"));
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr), addr_len);
  const int err = errno;
  ::close(fd);
  if (sent < 0) {
    errno = err;
    return Error(ErrorCode::INTERNAL_ERROR,
                 Errno(("sd_notify: send to " + std::string(socket_path)).c_str()));
  }
  if (static_cast<size_t>(sent) != state.size()) {
    return Error(ErrorCode::INTERNAL_ERROR, "sd_notify: short datagram");
  }
  return Status::Ok();
}

Status SdNotify(std::string_view state) {
  const char* socket_path = std::getenv("NOTIFY_SOCKET");
  if (socket_path == nullptr || socket_path[0] == '\0') return Status::Ok();
  return SdNotifyTo(socket_path, state);
}

void NotifyServiceManager(std::string_view state) {
  if (Status st = SdNotify(state); !st.ok()) {
    MC_LOG(WARN) << st.message();
  }
}

}  // namespace mc
