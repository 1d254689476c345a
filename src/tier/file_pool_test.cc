#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tier/fd_cache.h"
#include "tier/file_pool.h"

namespace mc::tier {
namespace {

namespace fs = std::filesystem;

struct PoolDir {
  std::string path;
  PoolDir() {
    std::string tmpl = (fs::temp_directory_path() / "mc-pool-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~PoolDir() { fs::remove_all(path); }
  // Every file in the directory, with its size.
  std::vector<uint64_t> Sizes() const {
    std::vector<uint64_t> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(fs::file_size(e.path()));
    return out;
  }
};

uint64_t FdSize(int fd) {
  struct stat st{};
  REQUIRE(fstat(fd, &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}

constexpr uint64_t kFileBytes = 3 * 4096;

TEST_CASE("the pool pre-creates spares of the size last asked for, up to its bound") {
  PoolDir dir;
  {
    FilePool pool({.dir = dir.path, .ready_files = 3, .direct_io = true});
    CHECK(!pool.Take(kFileBytes));  // nothing asked for yet: nothing made
    pool.Settle();
    CHECK(pool.ready() == 0);  // one object of a size is no pattern yet
    CHECK(!pool.Take(kFileBytes));
    pool.Settle();
    CHECK(pool.ready() == 3);
    CHECK(dir.Sizes() == std::vector<uint64_t>(3, kFileBytes));
    auto spare = pool.Take(kFileBytes);
    REQUIRE(spare);
    CHECK(FdSize(spare->fd) == kFileBytes);
    CHECK(fs::path(spare->name).extension() == kSpareSuffix);
    CHECK(fs::exists(spare->name));
    close(spare->fd);
    unlink(spare->name.c_str());
    pool.Settle();  // the one taken is replaced
    CHECK(pool.ready() == 3);
    // Writes of another size: its spares replace the old size's.
    CHECK(!pool.Take(2 * kFileBytes));
    CHECK(!pool.Take(2 * kFileBytes));
    pool.Settle();
    CHECK(dir.Sizes() == std::vector<uint64_t>(3, 2 * kFileBytes));
    const FilePoolCounters c = pool.counters();
    CHECK(c.taken == 1);
    CHECK(c.missed == 4);
    CHECK(c.created == 7);
    CHECK(c.deleted == 3);
  }
  CHECK(dir.Sizes().empty());  // the destructor deletes its spares
}

TEST_CASE("given files become spares or are deleted, and the pool never holds more than its bound") {
  PoolDir dir;
  {
    FilePool pool({.dir = dir.path, .ready_files = 2, .direct_io = true});
    CHECK(!pool.Take(kFileBytes));
    CHECK(!pool.Take(kFileBytes));
    std::vector<std::string> given;
    for (int i = 0; i < 5; ++i) {
      given.push_back(pool.SpareName());
      const int fd = open(given.back().c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
      REQUIRE(fd >= 0);
      REQUIRE(ftruncate(fd, i == 4 ? 2 * kFileBytes : kFileBytes) == 0);
      close(fd);
      pool.Give(given.back(), i == 4 ? 2 * kFileBytes : kFileBytes);
    }
    pool.Settle();
    CHECK(pool.ready() == 2);
    CHECK(dir.Sizes() == std::vector<uint64_t>(2, kFileBytes));
    CHECK(!fs::exists(given[4]));  // not the wanted size: deleted
    const FilePoolCounters c = pool.counters();
    CHECK(c.reused + c.created == 2);
    CHECK(c.deleted == 5 - c.reused);
    // A reused file comes back as it was handed over.
    auto spare = pool.Take(kFileBytes);
    REQUIRE(spare);
    CHECK(FdSize(spare->fd) == kFileBytes);
    close(spare->fd);
    unlink(spare->name.c_str());
  }
  CHECK(dir.Sizes().empty());
}

TEST_CASE("a pool without spares deletes what it is given off the caller's thread") {
  PoolDir dir;
  FilePool pool({.dir = dir.path, .ready_files = 0, .direct_io = false});
  const std::string name = pool.SpareName();
  REQUIRE(close(open(name.c_str(), O_WRONLY | O_CREAT, 0600)) == 0);
  CHECK(!pool.Take(kFileBytes));
  CHECK(!pool.Take(kFileBytes));
  pool.Give(name, 0);
  pool.Settle();
  CHECK(dir.Sizes().empty());
  CHECK(pool.counters().created == 0);
  CHECK(pool.counters().deleted == 1);
}

TEST_CASE("the fd cache keeps its bound and a dropped file stays open for its holder") {
  FdCache cache(2);
  auto open_null = [] {
    const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    return std::make_shared<CachedFile>(fd);
  };
  cache.Put(1, open_null());
  cache.Put(2, open_null());
  CHECK(cache.Get(1));  // 1 is now the most recent
  cache.Put(3, open_null());
  CHECK(cache.size() == 2);
  CHECK(!cache.Get(2));  // the least recently used went
  std::shared_ptr<CachedFile> held = cache.Get(3);
  REQUIRE(held);
  cache.Drop(3);
  CHECK(!cache.Get(3));
  CHECK(fcntl(held->fd, F_GETFD) >= 0);  // still open for the reader
  CHECK(cache.size() == 1);
  FdCache none(0);
  none.Put(1, open_null());
  CHECK(none.size() == 0);
}

}  // namespace
}  // namespace mc::tier
