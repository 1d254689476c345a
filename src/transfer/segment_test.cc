#include "transfer/segment.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <atomic>
#include <fstream>
#include <vector>

using namespace mc::transfer;

namespace {

// Forks a child that maps `path` and writes `text` at offset 100; returns
// the child's exit status (0 on success).
int WriteFromOtherProcess(const std::string& path, const char* text) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) _exit(2);
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) _exit(3);
    std::memcpy(static_cast<char*>(p) + 100, text, std::strlen(text));
    _exit(0);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

}  // namespace

TEST_CASE("a memfd segment is owner-only and another process can map it by path") {
  SegmentOptions opts;
  opts.size_bytes = 1 << 20;
  auto seg = Segment::Create(opts);
  REQUIRE(seg.ok());
  CHECK((*seg)->size_bytes() == (1u << 20));
  CHECK((*seg)->shm_path().rfind("/proc/", 0) == 0);
  struct stat st;
  REQUIRE(stat((*seg)->shm_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(WriteFromOtherProcess((*seg)->shm_path(), "hello") == 0);
  CHECK(std::memcmp((*seg)->base() + 100, "hello", 5) == 0);
  MESSAGE("pages: " << PageKindName((*seg)->page_kind()));
}

TEST_CASE("a /dev/shm segment is 0600, shareable by path, and removed on destruction") {
  SegmentOptions opts;
  opts.size_bytes = 123457;  // not a page multiple
  opts.backing = SegmentBacking::kShmFile;
  opts.populate = true;
  std::string path;
  {
    auto seg = Segment::Create(opts);
    REQUIRE(seg.ok());
    path = (*seg)->shm_path();
    CHECK(path.rfind("/dev/shm/mooncake-", 0) == 0);
    struct stat st;
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(WriteFromOtherProcess(path, "world") == 0);
    CHECK(std::memcmp((*seg)->base() + 100, "world", 5) == 0);
  }
  CHECK(access(path.c_str(), F_OK) != 0);
}

TEST_CASE("stale /dev/shm segment files of dead processes are swept") {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // `child` is now a pid with no process
  std::string stale = "/dev/shm/mooncake-" + std::to_string(child) + "-deadbeef";
  std::string live = "/dev/shm/mooncake-" + std::to_string(getpid()) + "-testlive";
  std::ofstream(stale).put('x');
  std::ofstream(live).put('x');
  CHECK(SweepStaleShmFiles("/dev/shm") >= 1);
  CHECK(access(stale.c_str(), F_OK) != 0);
  CHECK(access(live.c_str(), F_OK) == 0);
  unlink(live.c_str());
}

TEST_CASE("segment sizes of zero or above the limit are refused") {
  SegmentOptions opts;
  opts.size_bytes = 0;
  CHECK(Segment::Create(opts).code() == mc::ErrorCode::INVALID_PARAMS);
  opts.size_bytes = mc::kMaxSegmentBytes + 1;
  CHECK(Segment::Create(opts).code() == mc::ErrorCode::INVALID_PARAMS);
}

namespace {

// Pages of [p, p + bytes) that are in memory, by mincore (shared memory
// counts a page once it exists in the file, whoever touched it).
uint64_t ResidentPages(uint8_t* p, uint64_t bytes) {
  std::vector<unsigned char> v(bytes / 4096);
  if (mincore(p, bytes, v.data()) != 0) return 0;
  uint64_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

// An 8 MiB memfd segment on 4 KiB pages (mincore counts those), untouched.
std::unique_ptr<Segment> SmallPageSegment() {
  SegmentOptions opts;
  opts.size_bytes = 8 << 20;
  opts.try_huge_pages = false;
  auto seg = Segment::Create(opts);
  REQUIRE(seg.ok());
  return std::move(*seg);
}

}  // namespace

TEST_CASE("prefault brings every page of a segment in and keeps its contents") {
  auto seg = SmallPageSegment();
  uint8_t* base = seg->base();
  const uint64_t pages = seg->mapped_bytes() / 4096;
  // Nothing touched yet but the page of the epochs' trailer (the file's last).
  CHECK(ResidentPages(base, seg->mapped_bytes()) == 1);
  CHECK(ResidentPages(base + seg->mapped_bytes() - 4096, 4096) == 1);
  std::memcpy(base + 4096 * 5 + 7, "kept", 4);
  CHECK(seg->Prefault({}, 1 << 20) == seg->mapped_bytes());
  CHECK(ResidentPages(base, seg->mapped_bytes()) == pages);
  CHECK(std::memcmp(base + 4096 * 5 + 7, "kept", 4) == 0);
}

TEST_CASE("prefault stops between chunks when asked") {
  auto seg = SmallPageSegment();
  std::stop_source stop;
  stop.request_stop();
  CHECK(seg->Prefault(stop.get_token(), 1 << 20) == 0);
  CHECK(ResidentPages(seg->base(), seg->mapped_bytes()) == 1);  // the trailer's page
}

TEST_CASE("a segment's file names its write epochs, which a second mapping shares") {
  auto seg = SmallPageSegment();
  REQUIRE(seg->epochs().valid());
  CHECK(seg->mapped_bytes() >= SegmentFileBytes(seg->size_bytes()));
  uint64_t data_bytes = 0;
  WriteEpochs other = EpochsOfMapping(seg->base(), seg->mapped_bytes(), &data_bytes);
  REQUIRE(other.valid());
  CHECK(data_bytes == seg->size_bytes());
  const uint64_t s = other.Seal(0, 100);
  { EpochWrite w(seg->epochs(), 50, 10); }
  CHECK(other.Seal(0, 100) != s);
  seg->MarkEpochsBypassed();
  CHECK(!seg->epochs().valid());
  CHECK(!EpochsOfMapping(seg->base(), seg->mapped_bytes(), &data_bytes).valid());
  CHECK(data_bytes == seg->size_bytes());
}

TEST_CASE("huge page advice names the count a segment needs, and is silent when enough are free") {
  CHECK(HugePageAdvice(2ull << 30, 1024).empty());
  CHECK(HugePageAdvice(2ull << 30, 5000).empty());
  const std::string a = HugePageAdvice(2ull << 30, 10);
  CHECK(a.find("needs 1024 free 2 MiB huge pages and 10 are free") != std::string::npos);
  CHECK(a.find("vm.nr_hugepages") != std::string::npos);
  // A segment that is not a whole number of huge pages rounds up.
  CHECK(HugePageAdvice((4ull << 20) + 1, 2).find("needs 3 ") != std::string::npos);
}
