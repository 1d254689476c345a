#include "common/sd_notify.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace {

// A datagram socket standing in for systemd's notify socket. `name` starting
// with '@' is abstract; otherwise a path, removed again by the destructor.
class FakeManager {
 public:
  explicit FakeManager(std::string name) : name_(std::move(name)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(name_.size() < sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, name_.data(), name_.size());
    if (name_[0] == '@') addr.sun_path[0] = '\0';
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
  }
  ~FakeManager() {
    ::close(fd_);
    if (name_[0] == '/') ::unlink(name_.c_str());
  }
  // A datagram already queued, or "" when none is: a local datagram is in
  // the queue by the time sendto returns, so nothing has to wait.
  std::string Received() {
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int fd_ = -1;
};

std::string UniqueName(const char* prefix) {
  return std::string(prefix) + "mooncake-sd-notify-test-" + std::to_string(::getpid());
}

}  // namespace

TEST_CASE("a notice reaches an abstract socket named with '@'") {
  FakeManager manager(UniqueName("@"));
  REQUIRE(::setenv("NOTIFY_SOCKET", manager.name().c_str(), 1) == 0);
  CHECK(mc::SdNotify("READY=1").ok());
  CHECK(manager.Received() == "READY=1");
  CHECK(mc::SdNotify("STOPPING=1").ok());
  CHECK(manager.Received() == "STOPPING=1");
  ::unsetenv("NOTIFY_SOCKET");
}

TEST_CASE("a notice reaches a socket at a filesystem path") {
  char dir[] = "/tmp/mc-sd-notify-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  {
    FakeManager manager(std::string(dir) + "/notify");
    CHECK(mc::SdNotifyTo(manager.name(), "READY=1\nSTATUS=serving").ok());
    CHECK(manager.Received() == "READY=1\nSTATUS=serving");
  }
  ::rmdir(dir);
}

TEST_CASE("without NOTIFY_SOCKET a notice does nothing and succeeds") {
  FakeManager manager(UniqueName("@unset-"));
  ::unsetenv("NOTIFY_SOCKET");
  CHECK(mc::SdNotify("READY=1").ok());
  REQUIRE(::setenv("NOTIFY_SOCKET", "", 1) == 0);
  CHECK(mc::SdNotify("READY=1").ok());
  ::unsetenv("NOTIFY_SOCKET");
  CHECK(manager.Received().empty());
}

TEST_CASE("a relative or absent socket is an error naming the socket") {
  auto relative = mc::SdNotifyTo("run/notify", "READY=1");
  REQUIRE_FALSE(relative.ok());
  CHECK(relative.message().find("run/notify") != std::string::npos);
  CHECK_FALSE(mc::SdNotifyTo("@" + UniqueName("nobody-listens-"), "READY=1").ok());
  CHECK_FALSE(mc::SdNotifyTo("@x", "").ok());
}
