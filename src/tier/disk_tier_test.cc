#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_seed.h"
#include "tier/disk_tier.h"
#include "tier/object_file.h"

namespace mc::tier {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mc-tier-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TierOptions Small(const std::string& path, uint64_t capacity = 64ull << 20) {
  // A small chunk so objects of a few blocks take several I/Os.
  return {.path = path, .capacity_bytes = capacity, .max_inflight = 2,
          .io_chunk_bytes = 8192};
}

std::vector<uint8_t> ReadAll(DiskTier& t, const std::string& key, Status* st = nullptr) {
  auto info = t.Find(key);
  std::vector<uint8_t> out(info ? info->size_bytes : 0);
  auto r = t.Read(key, out.data(), out.size());
  if (st != nullptr) *st = r.ok() ? Status::Ok() : r.status();
  if (!r.ok()) out.clear();
  return out;
}

fs::path OnlyObjectFile(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir + "/objects"))
    if (e.path().extension() == ".mco") files.push_back(e.path());  // not the spares
  REQUIRE(files.size() == 1);
  return files[0];
}

TEST_CASE("objects written to the tier read back byte for byte") {
  TempDir dir;
  auto t = DiskTier::Open(Small(dir.path));
  REQUIRE(t.ok());
  const std::vector<size_t> sizes = {0, 1, 4095, 4096, 8192, 8193, 100000};
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto data = Pattern(sizes[i], static_cast<uint32_t>(i));
    REQUIRE((*t)->Write("k" + std::to_string(i), data.data(), data.size()).ok());
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Status st;
    CHECK(ReadAll(**t, "k" + std::to_string(i), &st) == Pattern(sizes[i], static_cast<uint32_t>(i)));
    CHECK(st.ok());
  }
  const TierCounters c = (*t)->counters();
  CHECK(c.objects == sizes.size());
  CHECK(c.reads == sizes.size());
  CHECK(c.checksum_failures == 0);
  std::vector<uint8_t> small(10);
  CHECK((*t)->Read("k6", small.data(), small.size()).code() == ErrorCode::BUFFER_OVERFLOW);
  CHECK((*t)->Read("absent", small.data(), small.size()).code() == ErrorCode::OBJECT_NOT_FOUND);
}

TEST_CASE("page-aligned memory moves straight to and from the files, tails included") {
  TempDir dir;
  TierOptions o = Small(dir.path);
  o.io_chunk_bytes = 4 * kBlockBytes;  // objects far larger than a chunk
  auto t = DiskTier::Open(o);
  REQUIRE(t.ok());
  const std::vector<size_t> sizes = {0, 1, 4096, 4097, 3 * 4096 + 5, 100000};
  void* src_mem = nullptr;
  void* dst_mem = nullptr;
  REQUIRE(posix_memalign(&src_mem, kBlockBytes, 100000) == 0);
  REQUIRE(posix_memalign(&dst_mem, kBlockBytes, 100000 + kBlockBytes) == 0);
  auto* src = static_cast<uint8_t*>(src_mem);
  auto* dst = static_cast<uint8_t*>(dst_mem);
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto data = Pattern(sizes[i], static_cast<uint32_t>(i + 10));
    if (!data.empty()) std::memcpy(src, data.data(), data.size());
    REQUIRE((*t)->Write("a" + std::to_string(i), src, sizes[i]).ok());
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto data = Pattern(sizes[i], static_cast<uint32_t>(i + 10));
    std::memset(dst, 0xee, 100000 + kBlockBytes);
    auto r = (*t)->Read("a" + std::to_string(i), dst, 100000 + kBlockBytes);
    REQUIRE(r.ok());
    CHECK(*r == sizes[i]);
    CHECK((sizes[i] == 0 || std::memcmp(dst, data.data(), sizes[i]) == 0));
    // Both ways agree: the unaligned (bounced) read gives the same bytes.
    CHECK(ReadAll(**t, "a" + std::to_string(i)) == data);
  }
  std::free(src_mem);
  std::free(dst_mem);
}

TEST_CASE("a flipped byte on disk fails the read, drops the file and is counted") {
  TempDir dir;
  auto t = DiskTier::Open(Small(dir.path));
  REQUIRE(t.ok());
  auto data = Pattern(50000, 3);
  REQUIRE((*t)->Write("victim", data.data(), data.size()).ok());
  const fs::path file = OnlyObjectFile(dir.path);
  {
    const int fd = open(file.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    uint8_t b = 0;
    REQUIRE(pread(fd, &b, 1, kBlockBytes + 12345) == 1);
    b ^= 0x10;
    REQUIRE(pwrite(fd, &b, 1, kBlockBytes + 12345) == 1);
    close(fd);
  }
  Status st;
  CHECK(ReadAll(**t, "victim", &st).empty());
  CHECK(st.code() == ErrorCode::CHECKSUM_MISMATCH);
  CHECK((*t)->counters().checksum_failures == 1);
  CHECK(!(*t)->Find("victim"));
  CHECK(!fs::exists(file));
}

TEST_CASE("a reopened tier re-adopts complete objects and deletes unfinished ones") {
  TempDir dir;
  std::map<std::string, std::vector<uint8_t>> model;
  {
    auto t = DiskTier::Open(Small(dir.path));
    REQUIRE(t.ok());
    for (int i = 0; i < 5; ++i) {
      model["obj" + std::to_string(i)] = Pattern(9000 + i, i);
      auto& d = model["obj" + std::to_string(i)];
      REQUIRE((*t)->Write("obj" + std::to_string(i), d.data(), d.size()).ok());
    }
    REQUIRE((*t)->Remove("obj2").ok());
    model.erase("obj2");
    auto v2 = Pattern(777, 99);  // a second version replaces the first
    REQUIRE((*t)->Write("obj3", v2.data(), v2.size()).ok());
    model["obj3"] = v2;
  }
  // What a store killed mid-write leaves: a temporary file, and a file whose
  // length disagrees with its header.
  { std::FILE* f = std::fopen((dir.path + "/objects/00000000000000ff.tmp").c_str(), "w");
    std::fputs("partial", f); std::fclose(f); }
  fs::path any = fs::directory_iterator(dir.path + "/objects")->path();
  fs::copy_file(any, dir.path + "/objects/00000000000000fe.mco");
  fs::resize_file(dir.path + "/objects/00000000000000fe.mco", 3 * kBlockBytes + 5);
  // And the pool's spare files, which hold no object: deleted, not counted.
  fs::copy_file(any, dir.path + "/objects/7" + kSpareSuffix);

  auto t = DiskTier::Open(Small(dir.path));
  REQUIRE(t.ok());
  CHECK((*t)->counters().dropped_at_open == 2);
  CHECK(!fs::exists(dir.path + "/objects/7" + kSpareSuffix));
  CHECK((*t)->counters().objects == model.size());
  for (const auto& [key, bytes] : model) CHECK(ReadAll(**t, key) == bytes);
  CHECK(!(*t)->Find("obj2"));  // removed stays removed
  // New writes never reuse an old generation.
  auto d = Pattern(10, 1);
  auto w = (*t)->Write("fresh", d.data(), d.size());
  REQUIRE(w.ok());
  for (const auto& info : (*t)->List()) {
    if (info.key != "fresh") CHECK(info.generation < w->generation);
  }
}

TEST_CASE("writes past the capacity are refused and counted, leaving the tier as it was") {
  TempDir dir;
  auto t = DiskTier::Open(Small(dir.path, 4 * kBlockBytes));
  REQUIRE(t.ok());
  auto d = Pattern(2 * kBlockBytes, 1);
  REQUIRE((*t)->Write("a", d.data(), d.size()).ok());  // 3 blocks with its header
  auto w = (*t)->Write("b", d.data(), d.size());
  CHECK(w.code() == ErrorCode::NO_AVAILABLE_HANDLE);
  CHECK((*t)->counters().no_space == 1);
  CHECK((*t)->counters().used_bytes == 3 * kBlockBytes);
  // Replacing a key counts its old file as freed.
  CHECK((*t)->Write("a", d.data(), kBlockBytes).ok());
  CHECK((*t)->counters().used_bytes == 2 * kBlockBytes);
}

TEST_CASE("a write the file system refuses fails alone, is counted and leaves no file") {
  TempDir dir;
  TierOptions o = Small(dir.path);
  o.spare_files = 0;  // the write makes its own file, as when no spare fits
  auto t = DiskTier::Open(o);
  REQUIRE(t.ok());
  auto small = Pattern(1000, 1);
  REQUIRE((*t)->Write("before", small.data(), small.size()).ok());
  // A file size limit makes the file system refuse the write as a full
  // disk would (EFBIG instead of ENOSPC), without a mount.
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit tight = old;
  tight.rlim_cur = 64 * 1024;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &tight) == 0);
  auto big = Pattern(200000, 2);
  auto w = (*t)->Write("too-big", big.data(), big.size());
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  std::signal(SIGXFSZ, previous);
  CHECK(w.code() == ErrorCode::FILE_WRITE_FAIL);
  const TierCounters c = (*t)->counters();
  CHECK(c.io_errors == 1);
  CHECK(c.objects == 1);
  CHECK(!(*t)->Find("too-big"));
  CHECK(ReadAll(**t, "before") == small);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path + "/objects")) files += e.is_regular_file();
  CHECK(files == 1);  // the temporary file is gone
  CHECK((*t)->Write("after", small.data(), small.size()).ok());  // the tier goes on
}

size_t CountFiles(const std::string& dir, const std::string& extension) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir + "/objects")) n += e.path().extension() == extension;
  return n;
}

TEST_CASE("writes take spare files made in the background and removed objects' files") {
  TempDir dir;
  TierOptions o = Small(dir.path);
  o.spare_files = 2;
  auto data = Pattern(20000, 5);
  {
    auto t = DiskTier::Open(o);
    REQUIRE(t.ok());
    REQUIRE((*t)->Write("first", data.data(), data.size()).ok());
    REQUIRE((*t)->Write("zero", data.data(), data.size()).ok());
    CHECK((*t)->counters().spare_writes == 0);  // no size asked for twice yet
    (*t)->Settle();
    CHECK(CountFiles(dir.path, ".spare") == 2);
    REQUIRE((*t)->Write("second", data.data(), data.size()).ok());
    CHECK((*t)->counters().spare_writes == 1);
    // Removed and replaced objects' files go to the pool, renamed at once.
    REQUIRE((*t)->Remove("first").ok());
    REQUIRE((*t)->Write("second", data.data(), data.size()).ok());
    CHECK(CountFiles(dir.path, ".mco") == 2);
    CHECK(CountFiles(dir.path, ".tmp") == 0);
    (*t)->Settle();
    CHECK(CountFiles(dir.path, ".spare") == 2);  // kept up to the bound, the rest deleted
    CHECK(ReadAll(**t, "second") == data);
    CHECK((*t)->Read("first", data.data(), 0).code() == ErrorCode::OBJECT_NOT_FOUND);
  }
  CHECK(CountFiles(dir.path, ".spare") == 0);  // a closed tier leaves no spares
  auto t = DiskTier::Open(o);
  REQUIRE(t.ok());
  CHECK((*t)->counters().objects == 2);
  CHECK((*t)->counters().dropped_at_open == 0);
  CHECK(ReadAll(**t, "second") == data);
}

TEST_CASE("a read racing rewrites and removes of its key gets a whole version or none") {
  TempDir dir;
  TierOptions o = Small(dir.path);
  o.spare_files = 2;
  auto t = DiskTier::Open(o);
  REQUIRE(t.ok());
  // One size: every rewrite may land in the file a reader still has open.
  std::vector<std::vector<uint8_t>> versions;
  for (uint32_t v = 0; v < 3; ++v) versions.push_back(Pattern(30000, 100 + v));
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, whole{0};
  std::thread reader([&] {
    std::vector<uint8_t> out(30000);
    while (!done.load()) {
      auto r = (*t)->Read("k", out.data(), out.size());
      if (r.ok()) {
        bool known = false;
        for (const auto& v : versions) known = known || v == out;
        (known ? whole : bad).fetch_add(1);
      } else if (r.code() != ErrorCode::OBJECT_NOT_FOUND) {
        bad.fetch_add(1);
      }
    }
  });
  const int steps = std::getenv("MC_TIER_STEPS") ? std::atoi(std::getenv("MC_TIER_STEPS")) : 300;
  for (int i = 0; i < steps; ++i) {
    if (i % 7 == 6) (void)(*t)->Remove("k");
    else REQUIRE((*t)->Write("k", versions[i % 3].data(), 30000).ok());
  }
  done = true;
  reader.join();
  CHECK(bad.load() == 0);
  CHECK((*t)->counters().checksum_failures == 0);
  MESSAGE(whole.load() << " whole reads, " << (*t)->counters().spare_writes << " spare writes");
}

TEST_CASE("random writes, removes, rewrites and reopens agree with a map") {
  TempDir dir;
  std::mt19937_64 rng(TestSeed("disk tier model"));
  std::map<std::string, std::vector<uint8_t>> model;
  auto t = DiskTier::Open(Small(dir.path));
  REQUIRE(t.ok());
  const int steps = std::getenv("MC_TIER_STEPS") ? std::atoi(std::getenv("MC_TIER_STEPS")) : 300;
  for (int step = 0; step < steps; ++step) {
    const std::string key = "k" + std::to_string(rng() % 20);
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      auto d = Pattern(rng() % 30000, static_cast<uint32_t>(rng()));
      REQUIRE((*t)->Write(key, d.data(), d.size()).ok());
      model[key] = d;
    } else if (op < 7) {
      CHECK((*t)->Remove(key).ok() == model.contains(key));
      model.erase(key);
    } else if (op < 9) {
      Status st;
      auto got = ReadAll(**t, key, &st);
      CHECK(st.ok() == model.contains(key));
      if (model.contains(key)) CHECK(got == model[key]);
    } else {
      t = DiskTier::Open(Small(dir.path));
      REQUIRE(t.ok());
    }
  }
  CHECK((*t)->counters().objects == model.size());
  for (const auto& info : (*t)->List()) CHECK(model.contains(info.key));
}

}  // namespace
}  // namespace mc::tier
