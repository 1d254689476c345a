// tier_bench: the disk tier's offload (write) and disk-read bandwidth for
// objects of one size, on the file system of --path (run by
// scripts/bench_ssd.sh beside fio on the same directory).
//
//   tier_bench --path DIR [--object-size 4mb] [--total 1gb] [--threads 1]
//              [--misalign 0] [--io uring|sync] [--chunk 1mb] [--depth 4]
//              [--full yes|no]
//
// Writes total / object-size objects through tier::DiskTier (O_DIRECT,
// checksums, temporary file and rename, as the store does), then reads them
// all back, verifying every checksum. --threads callers run at once (the
// tier's in-flight bound is set to the same number). The objects sit
// --misalign bytes past a page boundary: 0 is a page-aligned segment object
// (moved without a copy), 64 what the master's 64-byte allocator gives an
// object behind one whose size is not a page multiple (copied through the
// bounce chunks). --full yes: the tier is full, as a store's is once it has
// run a while: as many objects again are written first (not timed), and each
// timed offload first removes one of them (the master evicting a disk object
// to make room), so the timed phase pays the removes and writes into the
// files they free. --io, --chunk and --depth default to the store's own
// (tier::TierOptions). Prints the setup, then one line per phase: objects,
// bytes, seconds, MB/s (10^6 bytes), and how many writes found a spare file
// ready (tier/file_pool.h), and the process's CPU time over the phase as a
// share of one core (user + system). The objects are removed at the end.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "tier/disk_tier.h"

namespace {

struct Args {
  std::string path;
  uint64_t object_bytes = 4ull << 20;
  uint64_t total_bytes = 1ull << 30;
  uint32_t threads = 1;
  uint64_t misalign = 0;
  bool full = false;
  mc::tier::TierOptions tier;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr, "tier_bench: %s\nusage: tier_bench --path DIR [--object-size 4mb] "
                       "[--total 1gb] [--threads N] [--misalign BYTES] [--io uring|sync] "
                       "[--chunk SIZE] [--depth N] [--full yes|no]\n", why);
  std::exit(2);
}

uint64_t Size(const char* text) {
  auto r = mc::ParseSize(text);
  if (!r.ok()) Usage(r.status().message().c_str());
  return *r;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--path") a.path = v;
    else if (flag == "--object-size") a.object_bytes = Size(v);
    else if (flag == "--total") a.total_bytes = Size(v);
    else if (flag == "--threads") a.threads = static_cast<uint32_t>(std::atoi(v));
    else if (flag == "--misalign") a.misalign = Size(v);
    else if (flag == "--io" && (std::strcmp(v, "uring") == 0 || std::strcmp(v, "sync") == 0))
      a.tier.io_uring = std::strcmp(v, "uring") == 0;
    else if (flag == "--chunk") a.tier.io_chunk_bytes = Size(v);
    else if (flag == "--depth") a.tier.chunks_in_flight = static_cast<uint32_t>(std::atoi(v));
    else if (flag == "--full") a.full = std::strcmp(v, "yes") == 0;
    else Usage(("unknown flag " + flag).c_str());
  }
  if (a.path.empty() || a.object_bytes == 0 || a.threads == 0 || a.total_bytes < a.object_bytes)
    Usage("--path, a positive --object-size no larger than --total, --threads >= 1");
  return a;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

struct Phase {
  double seconds = 0, cpu_seconds = 0;
};

// Runs fn(i) for i in [0, n) over `threads` threads; seconds taken and the
// process's CPU seconds meanwhile.
template <typename Fn>
Phase Timed(uint64_t n, uint32_t threads, Fn fn) {
  const double cpu = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint64_t i = t; i < n; i += threads) fn(i);
    });
  for (auto& th : pool) th.join();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          CpuSeconds() - cpu};
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  const uint64_t n = a.total_bytes / a.object_bytes;
  mc::tier::TierOptions options = a.tier;
  options.path = a.path;
  options.capacity_bytes = a.total_bytes * 2 + (64ull << 20);
  options.max_inflight = a.threads;
  auto tier = mc::tier::DiskTier::Open(options);
  if (!tier.ok()) {
    std::fprintf(stderr, "tier_bench: %s\n", tier.status().ToString().c_str());
    return 1;
  }
  // A page-aligned allocation, the object `misalign` bytes into it.
  auto aligned = [&] {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, a.object_bytes + a.misalign) != 0) std::abort();
    return static_cast<uint8_t*>(p) + a.misalign;
  };
  std::vector<uint8_t*> src(a.threads), dst(a.threads);
  for (uint32_t t = 0; t < a.threads; ++t) {
    src[t] = aligned();
    dst[t] = aligned();
    for (size_t i = 0; i < a.object_bytes; ++i)
      src[t][i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    std::memset(dst[t], 0, a.object_bytes);  // faulted in before the clock starts, as fio's are
  }
  const mc::tier::TierCounters setup = (*tier)->counters();
  std::printf("tier_bench: %s, %llu objects of %s at %llu bytes past a page, %u threads; "
              "tier: %s, %u x %s in flight per object, %s%s\n",
              a.path.c_str(), static_cast<unsigned long long>(n),
              mc::FormatBytesHuman(a.object_bytes).c_str(),
              static_cast<unsigned long long>(a.misalign), a.threads,
              setup.io_uring ? "io_uring" : "pwrite/pread", options.chunks_in_flight,
              mc::FormatBytesHuman(options.io_chunk_bytes).c_str(),
              options.direct_io ? "O_DIRECT where the file system takes it" : "buffered",
              a.full ? ", full: each offload removes an old object first" : "");
  bool failed = false;
  auto old = [](uint64_t i) { return "old/" + std::to_string(i); };
  if (a.full) {
    Timed(n, a.threads, [&](uint64_t i) {
      if (!(*tier)->Write(old(i), src[i % a.threads], a.object_bytes).ok()) failed = true;
    });
    (*tier)->Settle();  // the spares of the fill made, as in a store that has run a while
  }
  const Phase w = Timed(n, a.threads, [&](uint64_t i) {
    if (a.full && !(*tier)->Remove(old(i)).ok()) failed = true;
    auto r = (*tier)->Write("bench/" + std::to_string(i), src[i % a.threads],
                            a.object_bytes);
    if (!r.ok()) failed = true;
  });
  const Phase r = Timed(n, a.threads, [&](uint64_t i) {
    auto got = (*tier)->Read("bench/" + std::to_string(i), dst[i % a.threads],
                             a.object_bytes);
    if (!got.ok()) failed = true;
  });
  const mc::tier::TierCounters after = (*tier)->counters();
  const bool direct = after.direct_io;
  for (uint64_t i = 0; i < n; ++i) (void)(*tier)->Remove("bench/" + std::to_string(i));
  if (a.full) {
    for (uint64_t i = 0; i < n; ++i) (void)(*tier)->Remove(old(i));
  }
  const double bytes = static_cast<double>(n * a.object_bytes);
  std::printf("tier offload   %llu objects %.0f bytes %.3f s %.1f MB/s (%s%llu into spare files) "
              "cpu %.0f%%\n",
              static_cast<unsigned long long>(n), bytes, w.seconds, bytes / w.seconds / 1e6,
              direct ? "O_DIRECT, " : "", static_cast<unsigned long long>(after.spare_writes),
              100 * w.cpu_seconds / w.seconds);
  std::printf("tier disk-read %llu objects %.0f bytes %.3f s %.1f MB/s cpu %.0f%%\n",
              static_cast<unsigned long long>(n), bytes, r.seconds, bytes / r.seconds / 1e6,
              100 * r.cpu_seconds / r.seconds);
  for (uint32_t t = 0; t < a.threads; ++t) {
    std::free(src[t] - a.misalign);
    std::free(dst[t] - a.misalign);
  }
  if (failed) {
    std::fprintf(stderr, "tier_bench: some writes or reads failed\n");
    return 1;
  }
  return 0;
}
