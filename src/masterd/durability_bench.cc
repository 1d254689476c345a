// durability_bench: what the master's SQLite journal costs (issue 5, point 5).
// Not a test: prints its setup, then figures, each the median of `runs`.
//   durability_bench [seconds_per_case=2] [runs=3] [load_objects=1000000] [dir=/tmp]
//                    [modes=always,everysec]
//
// 1. Put throughput over real loopback RPC: PutStart+PutEnd (metadata only,
//    no object bytes move) against a MasterService with --data-dir none and
//    with a journal in each --fsync mode of `modes` (every PutEnd reply
//    waits for its commit), from 16 synchronous client threads, single
//    calls and batches of 32.
// 2. Start to serving with `load_objects` objects in the file: opening the
//    file, a fresh state and loading it (what the master does before it
//    listens), and the file's bytes per object.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "masterd/journal.h"
#include "masterd/service.h"
#include "rpc/client.h"
#include "rpc/server.h"

using namespace mc;
using mc::proto::Opcode;

namespace {

constexpr int kConnections = 16;
constexpr uint64_t kSegmentBytes = 1ull << 40;  // metadata only: never backed by memory
constexpr uint64_t kObjectBytes = 4096;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void RemoveDb(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

void MountSegments(masterd::MasterService& svc, int count) {
  for (int i = 0; i < count; ++i) {
    msg::MountSegmentRequest m;
    m.client = {7, 7};
    m.segment.name = "bench-" + std::to_string(i);
    m.segment.endpoint = "127.0.0.1:" + std::to_string(1000 + i);
    m.segment.size_bytes = kSegmentBytes;
    m.segment.incarnation = 1;
    m.segment.access_key = "k";
    if (!svc.MountSegment(m).ok()) std::abort();
  }
}

// Puts per second through RPC for one (durable, batch) case.
double PutsPerSecond(const std::string& db_path, masterd::FsyncMode fsync, int batch,
                     double seconds) {
  MasterConfig config;
  // Removes the files after the journal has closed them (declared before
  // it): a journal whose WAL is deleted under it fails its last sync.
  struct RemoveAtExit {
    const std::string& path;
    ~RemoveAtExit() {
      if (!path.empty()) RemoveDb(path);
    }
  } remove_at_exit{db_path};
  std::unique_ptr<masterd::Journal> journal;
  if (!db_path.empty()) {
    RemoveDb(db_path);
    auto j = masterd::Journal::Open(db_path, config.stripe_size_bytes, {.fsync = fsync});
    if (!j.ok()) {
      std::fprintf(stderr, "durability_bench: %s\n", j.status().ToString().c_str());
      std::exit(1);
    }
    journal = std::move(*j);
  }
  masterd::MasterService svc(config, SystemClock::Instance(), journal.get());
  MountSegments(svc, 4);
  rpc::ServerOptions so;
  so.address = "127.0.0.1";
  so.port = 0;
  std::unique_ptr<masterd::JournalGate> gate;
  if (journal) gate = std::make_unique<masterd::JournalGate>(*journal);
  so.reply_gate = gate.get();
  rpc::Server server(so, &svc);
  if (!server.Start().ok()) std::exit(1);
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> puts{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kConnections; ++t) {
    threads.emplace_back([&, t] {
      rpc::ClientOptions o;
      o.master = address;
      o.max_connections = 1;
      rpc::MasterClient c(o);
      msg::Batch<msg::PutStartRequest> starts(batch);
      msg::Batch<msg::KeyRequest> ends(batch);
      uint64_t n = 0, bad = 0, seq = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < batch; ++i) {
          std::string key = "t" + std::to_string(t) + "/" + std::to_string(seq++);
          starts[i] = {{1, 2}, key, kObjectBytes, {1, false}};
          ends[i] = {{1, 2}, key};
        }
        bool ok;
        if (batch == 1) {
          ok = c.Invoke<Opcode::kPutStart>(starts[0]).ok() && c.Invoke<Opcode::kPutEnd>(ends[0]).ok();
        } else {
          auto s = c.Invoke<Opcode::kBatchPutStart>(starts);
          auto e = s.ok() ? c.Invoke<Opcode::kBatchPutEnd>(ends) : Result<msg::Batch<Status>>(s.status());
          ok = e.ok() && std::all_of(e->begin(), e->end(), [](const Status& x) { return x.ok(); });
        }
        n += ok ? batch : 0;
        bad += ok ? 0 : 1;
      }
      puts += n;
      failures += bad;
    });
  }
  const double start = Now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double rate = puts / (Now() - start);
  server.Stop();
  if (failures > 0) std::fprintf(stderr, "durability_bench: %llu failed calls\n",
                                 static_cast<unsigned long long>(failures.load()));
  if (journal) {
    const masterd::Journal::Stats js = journal->stats();
    const uint64_t commits = std::max<uint64_t>(js.commits, 1);
    std::printf("    (%s run: %llu commits, %.0f puts per commit, %.2f ms per commit, %llu syncs)\n",
                masterd::FsyncModeName(fsync), static_cast<unsigned long long>(js.commits),
                static_cast<double>(puts) / commits, 1000.0 * seconds / commits,
                static_cast<unsigned long long>(js.syncs));
  }
  return rate;
}

// Writes `objects` complete objects into a fresh file through the journal.
void FillDb(const std::string& path, uint64_t objects) {
  RemoveDb(path);
  MasterConfig config;
  auto journal = masterd::Journal::Open(path, config.stripe_size_bytes);
  if (!journal.ok()) std::exit(1);
  masterd::MasterService svc(config, SystemClock::Instance(), journal->get());
  MountSegments(svc, 4);
  svc.WithState([&](master::MasterState& s) {
    for (uint64_t i = 0; i < objects; ++i) {
      msg::KeyRequest k{{1, 2}, "prefix/chain/" + std::to_string(i * 2654435761u % 1000000007u)};
      if (!s.PutStart({k.client, k.key, kObjectBytes, {1, false}}, 1).ok()) std::abort();
      if (!s.PutEnd(k, 1).ok()) std::abort();
    }
    return 0;
  });
  if (!(*journal)->WaitDurable().ok()) std::exit(1);
}  // closing the last connection checkpoints the WAL into the file

double LoadSeconds(const std::string& path, uint64_t* loaded) {
  const double start = Now();
  MasterConfig config;
  auto journal = masterd::Journal::Open(path, config.stripe_size_bytes);
  if (!journal.ok()) std::exit(1);
  masterd::MasterService svc(config, SystemClock::Instance(), journal->get());
  auto stats = svc.WithState([&](master::MasterState& s) {
    return (*journal)->LoadInto(s, SystemClock::Instance().NowUs());
  });
  svc.AdoptLoadedSegments();
  const double secs = Now() - start;
  if (!stats.ok()) {
    std::fprintf(stderr, "durability_bench: %s\n", stats.status().ToString().c_str());
    std::exit(1);
  }
  *loaded = stats->objects;
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const uint64_t objects = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000000;
  const std::string dir = argc > 4 ? argv[4] : "/tmp";
  std::vector<masterd::FsyncMode> modes;
  for (std::string_view all = argc > 5 ? argv[5] : "always,everysec"; !all.empty();) {
    const size_t comma = all.find(',');
    auto mode = masterd::ParseFsyncMode(all.substr(0, comma));
    if (!mode.ok()) {
      std::fprintf(stderr, "durability_bench: modes: %s\n", mode.status().message().c_str());
      return 2;
    }
    modes.push_back(*mode);
    all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 1);
  }
  const std::string db = dir + "/durability_bench_" + std::to_string(::getpid()) + ".db";
  SetLogLevel(LogLevel::WARN);
  std::printf("durability_bench: %u cpus, file %s, %d runs per figure (median), %.1f s per run\n",
              std::thread::hardware_concurrency(), db.c_str(), runs, seconds);
  std::printf("  puts: PutStart+PutEnd of %llu-byte objects over loopback RPC (metadata only),\n"
              "  %d synchronous client threads, server io_threads=2, 4 segments;\n"
              "  durable = SQLite WAL, reply after commit, group commit; --fsync always:\n"
              "  synchronous=FULL, everysec: NORMAL, fdatasync per second and per free\n",
              static_cast<unsigned long long>(kObjectBytes), kConnections);
  for (int batch : {1, 32}) {
    std::vector<double> none;
    std::vector<std::vector<double>> durable(modes.size());
    for (int r = 0; r < runs; ++r) {
      none.push_back(PutsPerSecond("", masterd::FsyncMode::kAlways, batch, seconds));
      for (size_t m = 0; m < modes.size(); ++m)
        durable[m].push_back(PutsPerSecond(db, modes[m], batch, seconds));
    }
    const double n = Median(none);
    std::printf("batch=%-3d  puts/s --data-dir none=%9.0f", batch, n);
    for (size_t m = 0; m < modes.size(); ++m) {
      const double d = Median(durable[m]);
      std::printf("  %s=%9.0f (%5.1f%%)", masterd::FsyncModeName(modes[m]), d, 100.0 * d / n);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("  load: %llu objects of one replica each in the file, keys ~20 bytes;\n"
              "  start to serving = open file + fresh state + load + adopt keys\n",
              static_cast<unsigned long long>(objects));
  const double fill_start = Now();
  FillDb(db, objects);
  struct stat st {};
  ::stat(db.c_str(), &st);
  std::printf("filled in %.1f s; file %lld bytes = %.1f bytes per object\n", Now() - fill_start,
              static_cast<long long>(st.st_size),
              static_cast<double>(st.st_size) / static_cast<double>(std::max<uint64_t>(objects, 1)));
  std::vector<double> loads;
  uint64_t loaded = 0;
  for (int r = 0; r < runs; ++r) loads.push_back(LoadSeconds(db, &loaded));
  std::printf("start to serving with %llu objects: median %.2f s (runs:", 
              static_cast<unsigned long long>(loaded), Median(loads));
  for (double s : loads) std::printf(" %.2f", s);
  std::printf(")\n");
  RemoveDb(db);
  return 0;
}
