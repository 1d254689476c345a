#include "client/dummy_forgets.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include <doctest/doctest.h>

namespace mc::client {

// A fresh table mapped twice: as the standalone client and as a dummy do.
struct Mapped {
  Mapped() {
    int fd = -1;
    auto w = CreateForgetTable(&fd);
    REQUIRE(w.ok());
    auto r = MapForgetTable(fd);
    REQUIRE(r.ok());
    ::close(fd);
    rw = *w;
    ro = *r;
  }
  ~Mapped() {
    UnmapForgetTable(ro);
    UnmapForgetTable(rw);
  }
  ForgetTable* rw = nullptr;
  const ForgetTable* ro = nullptr;
};

TEST_CASE("a key's forget mark moves when the key or everything is forgotten, in every mapping") {
  Mapped t;
  ForgetTable* rw = t.rw;
  const ForgetTable* ro = t.ro;
  const uint64_t a0 = ForgetMark(*ro, "a");
  const uint64_t b0 = ForgetMark(*ro, "b");
  BumpForget(*rw, "a");
  CHECK(ForgetMark(*ro, "a") != a0);
  const uint64_t a1 = ForgetMark(*ro, "a");
  // "b" moves only if it shares a's slot (a collision costs a round trip).
  BumpForgetAll(*rw);
  CHECK(ForgetMark(*ro, "a") != a1);
  CHECK(ForgetMark(*ro, "b") != b0);
}

// A thread holds the table (alive), then releases it.
void HoldAndRelease(const Mapped& t) {
  std::thread([&] {
    REQUIRE(HoldAlive(*t.rw).ok());
    CHECK(OwnerAlive(*t.ro));
    ReleaseAlive(*t.rw);
  }).join();
}

TEST_CASE("the table's owner is alive while it holds the table, not after it released or died") {
  Mapped t;
  ForgetTable* rw = t.rw;
  const ForgetTable* ro = t.ro;
  CHECK_FALSE(OwnerAlive(*ro));
  HoldAndRelease(t);
  CHECK_FALSE(OwnerAlive(*ro));
  // A process that dies holding it: the kernel marks the owner dead by the
  // time it can be reaped.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    (void)HoldAlive(*rw);
    ::_exit(OwnerAlive(*ro) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(OwnerAlive(*ro));
  // The next owner takes it over.
  HoldAndRelease(t);
}

TEST_CASE("a forget table of the wrong size is refused") {
  int fd = ::memfd_create("not-a-table", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 4096) == 0);
  CHECK(MapForgetTable(fd).status().code() == ErrorCode::PROTOCOL_ERROR);
  ::close(fd);
}

}  // namespace mc::client
