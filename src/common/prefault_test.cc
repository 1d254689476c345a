#include "common/prefault.h"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace mc {
namespace {

// Pages of [p, p + bytes) the kernel has mapped, by mincore.
size_t ResidentPages(void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  REQUIRE(::mincore(p, bytes, v.data()) == 0);
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST_CASE("a prefaulter maps pages in without changing what the owner writes meanwhile") {
  constexpr size_t kBytes = size_t{16} << 20;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  ::madvise(m, kBytes, MADV_NOHUGEPAGE);  // count 4 KiB pages
  auto* bytes = static_cast<unsigned char*>(m);
  CHECK(ResidentPages(m, kBytes) == 0);
  {
    Prefaulter prefaulter;
    prefaulter.Add(m, kBytes);
    // The owner writes every page's first byte while the thread populates.
    for (size_t at = 0; at < kBytes; at += page) bytes[at] = static_cast<unsigned char>(at / page);
    prefaulter.Drain();
    if (prefaulter.populated_bytes() == 0) {
      MESSAGE("MADV_POPULATE_WRITE unsupported by this kernel: nothing populated");
    } else {
      CHECK(prefaulter.populated_bytes() == kBytes);
    }
  }
  CHECK(ResidentPages(m, kBytes) == kBytes / page);
  bool same = true;
  for (size_t at = 0; at < kBytes; at += page) {
    same = same && bytes[at] == static_cast<unsigned char>(at / page) && bytes[at + 1] == 0;
  }
  CHECK(same);
  ::munmap(m, kBytes);
}

TEST_CASE("a prefaulter populates ranges the owner never touches, and only whole pages") {
  constexpr size_t kBytes = size_t{4} << 20;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  ::madvise(m, kBytes, MADV_NOHUGEPAGE);
  Prefaulter prefaulter;
  // From the middle of the first page to the middle of the last: the
  // partial pages at both ends are left alone.
  prefaulter.Add(static_cast<char*>(m) + page / 2, kBytes - page);
  prefaulter.Drain();
  if (prefaulter.populated_bytes() != 0) {
    CHECK(prefaulter.populated_bytes() == kBytes - 2 * page);
    CHECK(ResidentPages(m, kBytes) == kBytes / page - 2);
  }
  ::munmap(m, kBytes);
}

}  // namespace
}  // namespace mc
