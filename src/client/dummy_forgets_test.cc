#include "client/dummy_forgets.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include <doctest/doctest.h>

namespace mc::client {

TEST_CASE("a key's forget mark moves when the key or everything is forgotten, in every mapping") {
  int fd = -1;
  auto rw = CreateForgetTable(&fd);
  REQUIRE(rw.ok());
  auto ro = MapForgetTable(fd);
  REQUIRE(ro.ok());
  ::close(fd);
  const uint64_t a0 = ForgetMark(**ro, "a");
  const uint64_t b0 = ForgetMark(**ro, "b");
  BumpForget(**rw, "a");
  CHECK(ForgetMark(**ro, "a") != a0);
  const uint64_t a1 = ForgetMark(**ro, "a");
  // "b" moves only if it shares a's slot (a collision costs a round trip).
  BumpForgetAll(**rw);
  CHECK(ForgetMark(**ro, "a") != a1);
  CHECK(ForgetMark(**ro, "b") != b0);
  UnmapForgetTable(*ro);
  UnmapForgetTable(*rw);
}

TEST_CASE("the table's owner is alive while it holds the table, not after it released or died") {
  int fd = -1;
  auto rw = CreateForgetTable(&fd);
  REQUIRE(rw.ok());
  auto ro = MapForgetTable(fd);
  REQUIRE(ro.ok());
  ::close(fd);
  CHECK_FALSE(OwnerAlive(**ro));
  std::thread([&] {
    REQUIRE(HoldAlive(**rw).ok());
    CHECK(OwnerAlive(**ro));
    ReleaseAlive(**rw);
  }).join();
  CHECK_FALSE(OwnerAlive(**ro));
  // A process that dies holding it: the kernel marks the owner dead by the
  // time it can be reaped.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    (void)HoldAlive(**rw);
    ::_exit(OwnerAlive(**ro) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(OwnerAlive(**ro));
  // The next owner takes it over.
  std::thread([&] {
    REQUIRE(HoldAlive(**rw).ok());
    CHECK(OwnerAlive(**ro));
    ReleaseAlive(**rw);
  }).join();
  UnmapForgetTable(*ro);
  UnmapForgetTable(*rw);
}

TEST_CASE("a forget table of the wrong size is refused") {
  int fd = ::memfd_create("not-a-table", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 4096) == 0);
  CHECK(MapForgetTable(fd).status().code() == ErrorCode::PROTOCOL_ERROR);
  ::close(fd);
}

}  // namespace mc::client
