#include "client/dummy_journal.h"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace mc::client {
namespace {

TEST_CASE("the standalone client reads the keys a dummy's journal names as under way") {
  auto dummy = DummyJournal::Create();
  REQUIRE(dummy.ok());
  (*dummy)->set_owner(msg::ClientId{7, 9});
  auto seen = DummyJournal::Map((*dummy)->fd());
  REQUIRE(seen.ok());
  CHECK((*seen)->Pending()->empty());
  const std::vector<std::string> keys = {"a", "", std::string(300, 'k'), "last"};
  REQUIRE((*dummy)->Begin(keys));
  CHECK(*(*seen)->Pending() == keys);
  CHECK((*seen)->owner() == msg::ClientId{7, 9});
  (*dummy)->End();
  CHECK((*seen)->Pending()->empty());
}

TEST_CASE("a batch whose keys do not fit is not journalled and leaves the journal empty") {
  auto j = DummyJournal::Create();
  REQUIRE(j.ok());
  const std::vector<std::string> big(kJournalBytes / 1024 + 1, std::string(1024, 'x'));
  CHECK_FALSE((*j)->Begin(big));
  CHECK((*j)->Pending()->empty());
  CHECK((*j)->Begin({"fits"}));
  CHECK(*(*j)->Pending() == std::vector<std::string>{"fits"});
}

TEST_CASE("a journal whose length runs past its keys is refused, not read past its end") {
  auto j = DummyJournal::Create();
  REQUIRE(j.ok());
  REQUIRE((*j)->Begin({"abc"}));
  auto raw = DummyJournal::Map((*j)->fd());
  REQUIRE(raw.ok());
  // A dummy that died while writing, or wrote nonsense: the length word says
  // more than was written, then more than the journal holds.
  uint32_t huge = 1u << 30;
  auto* base = static_cast<uint8_t*>(::mmap(nullptr, kJournalBytes, PROT_READ | PROT_WRITE,
                                            MAP_SHARED, (*j)->fd(), 0));
  REQUIRE(base != MAP_FAILED);
  std::memcpy(base + sizeof(JournalHeader), &huge, sizeof(huge));
  CHECK((*raw)->Pending().code() == ErrorCode::PROTOCOL_ERROR);
  reinterpret_cast<JournalHeader*>(base)->used_bytes.store(kJournalBytes);
  CHECK((*raw)->Pending().code() == ErrorCode::PROTOCOL_ERROR);
  ::munmap(base, kJournalBytes);
}

TEST_CASE("a descriptor of another size is not taken for a journal") {
  int fd = ::memfd_create("not-a-journal", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 4096) == 0);
  CHECK(DummyJournal::Map(fd).code() == ErrorCode::PROTOCOL_ERROR);
  ::close(fd);
}

}  // namespace
}  // namespace mc::client
