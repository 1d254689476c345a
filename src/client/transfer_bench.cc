// transfer_bench: what this machine's loopback and memory can do, and how
// close our transports and the client's put/get get. Not a test (timings are
// never asserted); run it by hand, or with a real master and store through
// scripts/bench_dataplane.sh:
//   build/src/client/transfer_bench [reps=7] [streams=N] [chunk_kib=N]
//       [min_chunk_kib=N] [min_read_chunk_kib=N] [copy_threads=1] [split_kib=8192]
//       [sndbuf_kib=4096] [master=H:P] [transports=1]
// (streams and the chunk sizes default to the TCP transport's own defaults)
// With master=H:P it also times Client::Put and Client::Get (master RPCs,
// grants, transfer, as `mooncake put/get` do minus file I/O) against that
// cluster, over TCP (shm off) and the same-host path; transports=0 skips the
// bare transports. MOONCAKE_AUTH_TOKEN is honoured. Prints its setup, then
// one line per measurement: median GB/s (1e9 bytes/s) over `reps`
// repetitions, with min and max, and the median ratio to its ceiling (TCP:
// the loopback, same-host: memcpy) sampled right before each repetition.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "common/log.h"
#include "rpc/client.h"
#include "net/stream_io.h"
#include "transfer/segment.h"
#include "transfer/shm_transport.h"
#include "transfer/tcp_server.h"
#include "transfer/tcp_transport.h"

using namespace mc::transfer;

namespace {

// TCP shape defaults: those of the transport, so the bench measures what
// clients run.
const TcpTransportOptions kTcpDefaults;

struct Config {
  int reps = 7;
  int streams = kTcpDefaults.streams;
  uint64_t chunk_kib = kTcpDefaults.max_chunk_bytes >> 10;
  int copy_threads = 1;
  uint64_t split_kib = 8192;  // shm copies from this size up use copy_threads
  int sndbuf_kib = 0;  // 0: kernel autotuning, the transports' default
  uint64_t min_chunk_kib = kTcpDefaults.min_chunk_bytes >> 10;
  uint64_t min_read_chunk_kib = kTcpDefaults.min_read_chunk_bytes >> 10;
  std::string master;  // empty: no client-path figures
  bool transports = true;  // false: only the machine and the client path
};

double NowSec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Raw loopback ceiling: `conns` connections, each a sender thread writing
// `write_bytes` per send() into a receiver thread that discards. Kept open
// so a sample can be taken right before every measured repetition: with
// other work on the host, only ratios of adjacent samples mean much.
class Loopback {
 public:
  // `buffer_bytes`: each sender and receiver cycles through a buffer this
  // large; 1 MiB stays in cache, 64 MiB makes every byte come from DRAM as
  // it does for real objects.
  // `tuning`: socket buffer sizes, the same the transports use.
  Loopback(int conns, size_t write_bytes, uint64_t bytes_per_conn, size_t buffer_bytes,
           const mc::net::SocketTuning& tuning)
      : conns_(conns),
        write_bytes_(write_bytes),
        bytes_per_conn_(bytes_per_conn),
        buffer_bytes_(buffer_bytes) {
    auto lfd = mc::net::ListenTcp("127.0.0.1", 0, 16);
    if (!lfd.ok() || !mc::net::SetNonBlocking(*lfd, false)) std::abort();
    listen_fd_ = *lfd;
    port_ = mc::net::LocalPort(listen_fd_);
    for (int i = 0; i < conns; ++i) {
      send_fds_.push_back(*mc::net::ConnectTcp({"127.0.0.1", port_}, 1000000));
      recv_fds_.push_back(accept(listen_fd_, nullptr, nullptr));
      mc::net::TuneSocket(send_fds_.back(), tuning);
      mc::net::TuneSocket(recv_fds_.back(), tuning);
      send_bufs_.emplace_back(buffer_bytes, 1);  // allocated and faulted once
      recv_bufs_.emplace_back(buffer_bytes, 2);
    }
  }
  ~Loopback() {
    for (int fd : send_fds_) close(fd);
    for (int fd : recv_fds_) close(fd);
    close(listen_fd_);
  }
  // One sample, GB/s.
  double Sample() {
    double t0 = NowSec();
    std::vector<std::thread> threads;
    for (int i = 0; i < conns_; ++i) {
      threads.emplace_back([this, i] {
        std::vector<uint8_t>& buf = send_bufs_[i];
        for (uint64_t n = 0; n < bytes_per_conn_; n += write_bytes_) {
          (void)mc::net::SendAll(send_fds_[i], buf.data() + n % buffer_bytes_, write_bytes_);
        }
      });
      threads.emplace_back([this, i] {
        std::vector<uint8_t>& buf = recv_bufs_[i];
        for (uint64_t n = 0; n < bytes_per_conn_; n += write_bytes_) {
          (void)mc::net::RecvAll(recv_fds_[i], buf.data() + n % buffer_bytes_, write_bytes_);
        }
      });
    }
    for (auto& t : threads) t.join();
    double gbps = static_cast<double>(bytes_per_conn_ * conns_) / (NowSec() - t0) / 1e9;
    samples_.push_back(gbps);
    return gbps;
  }
  double median() const { return Median(samples_); }
  size_t samples() const { return samples_.size(); }

 private:
  int conns_;
  size_t write_bytes_;
  uint64_t bytes_per_conn_;
  size_t buffer_bytes_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  std::vector<int> send_fds_, recv_fds_;
  std::vector<std::vector<uint8_t>> send_bufs_, recv_bufs_;
  std::vector<double> samples_;
};

// memcpy bandwidth of one thread between two `bytes` buffers (allocated and
// faulted once): the ceiling of a same-host copy, sampled like Loopback.
class Memcpy {
 public:
  explicit Memcpy(size_t bytes) : a_(bytes, 1), b_(bytes, 2) {}
  // One sample, GB/s: four copies, alternating direction.
  double Sample() {
    double t0 = NowSec();
    for (int i = 0; i < 4; ++i) {
      std::memcpy(i % 2 ? a_.data() : b_.data(), i % 2 ? b_.data() : a_.data(), a_.size());
    }
    samples_.push_back(static_cast<double>(a_.size()) * 4 / (NowSec() - t0) / 1e9);
    return samples_.back();
  }
  double median() const { return Median(samples_); }
  size_t samples() const { return samples_.size(); }

 private:
  std::vector<uint8_t> a_, b_;
  std::vector<double> samples_;
};

// A figure's ceiling: sampled right before every measured repetition.
struct Ceiling {
  const char* name;  // as printed: "% of <name>"
  std::function<double()> sample;
};

struct Figure {
  double gbps = 0;        // median
  double vs_ceiling = 0;  // median of (sample / loopback sample just before)
};

// Runs `once` (which moves `bytes_per_run` bytes) `reps` times after one
// warm-up, each preceded by a sample of `ceiling`; prints the medians.
// `after`, if set, runs untimed after each run (e.g. removing what it put).
Figure Measure(const char* what, int reps, uint64_t bytes_per_run, const Ceiling& ceil,
               const std::function<void()>& once, const std::function<void()>& after = {}) {
  once();
  if (after) after();
  std::vector<double> gbps, ratio;
  for (int r = 0; r < reps; ++r) {
    double ceiling = ceil.sample();
    double t0 = NowSec();
    once();
    gbps.push_back(static_cast<double>(bytes_per_run) / (NowSec() - t0) / 1e9);
    ratio.push_back(gbps.back() / ceiling);
    if (after) after();
  }
  Figure f{Median(gbps), Median(ratio)};
  auto [lo, hi] = std::minmax_element(gbps.begin(), gbps.end());
  std::printf("  %-42s %6.2f GB/s (min %5.2f, max %5.2f) %4.0f%% of %s\n", what, f.gbps, *lo,
              *hi, 100 * f.vs_ceiling, ceil.name);
  std::fflush(stdout);
  return f;
}

struct Pair {
  Figure write, read;
};

// Writes then reads `object_bytes` objects, enough of them to move ~256 MiB
// per repetition, cycling through the segment.
Pair MeasureTransport(Transport& t, const Endpoint& ep, uint64_t segment_bytes, int reps,
                      uint64_t object_bytes, std::vector<uint8_t>& local, const Ceiling& ceil) {
  const uint64_t per_run = std::max<uint64_t>(256ull << 20, object_bytes * 2);
  const uint64_t count = per_run / object_bytes;
  const uint64_t slots = segment_bytes / object_bytes;
  auto run = [&](OpKind kind) {
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t off = (i % slots) * object_bytes;
      mc::Status st = kind == OpKind::kWrite ? t.Write(ep, off, local.data(), object_bytes)
                                             : t.Read(ep, off, local.data(), object_bytes);
      if (!st.ok()) {
        std::fprintf(stderr, "transfer failed: %s\n", st.ToString().c_str());
        std::exit(1);
      }
    }
  };
  char what[96];
  const std::string name(t.name());
  const auto mib = static_cast<unsigned long long>(object_bytes >> 20);
  Pair p;
  std::snprintf(what, sizeof(what), "%s write, %llu MiB objects", name.c_str(), mib);
  p.write = Measure(what, reps, count * object_bytes, ceil, [&] { run(OpKind::kWrite); });
  std::snprintf(what, sizeof(what), "%s read,  %llu MiB objects", name.c_str(), mib);
  p.read = Measure(what, reps, count * object_bytes, ceil, [&] { run(OpKind::kRead); });
  return p;
}

void Must(const mc::Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, st.ToString().c_str());
    std::exit(1);
  }
}

// Put then get of `object_bytes` objects through the client, ~256 MiB per
// repetition; the keys are removed (untimed) after each put repetition and
// after the gets.
Pair MeasureClient(mc::client::Client& client, const char* path, int reps,
                   uint64_t object_bytes, std::vector<uint8_t>& local,
                   std::vector<uint8_t>& sink, const Ceiling& ceil) {
  const uint64_t count = std::max<uint64_t>(256ull << 20, object_bytes * 2) / object_bytes;
  const std::span<const uint8_t> value(local.data(), object_bytes);
  auto key = [&](uint64_t i) { return std::string("transfer-bench-") + path + "-" + std::to_string(i); };
  auto put_all = [&] {
    for (uint64_t i = 0; i < count; ++i) Must(client.Put(key(i), value, {}), "put");
  };
  auto remove_all = [&] {
    for (uint64_t i = 0; i < count; ++i) Must(client.Remove(key(i), /*force=*/true), "remove");
  };
  // Into a buffer allocated once, as an application with its own (e.g.
  // KV-cache) memory does; Get() would add a fresh allocation and its page
  // faults to every call.
  auto get_all = [&] {
    for (uint64_t i = 0; i < count; ++i) {
      auto got = client.GetInto(key(i), sink);
      Must(got.status(), "get");
      if (*got != object_bytes) Must(mc::Error(mc::ErrorCode::INTERNAL_ERROR, "size"), "get");
    }
  };
  char what[96];
  const auto mib = static_cast<unsigned long long>(object_bytes >> 20);
  Pair p;
  std::snprintf(what, sizeof(what), "client put over %s, %llu MiB objects", path, mib);
  p.write = Measure(what, reps, count * object_bytes, ceil, put_all, remove_all);
  put_all();
  std::snprintf(what, sizeof(what), "client get over %s, %llu MiB objects", path, mib);
  p.read = Measure(what, reps, count * object_bytes, ceil, get_all);
  if (std::memcmp(sink.data(), local.data(), object_bytes) != 0) {
    Must(mc::Error(mc::ErrorCode::INTERNAL_ERROR, "bytes differ"), "get");
  }
  remove_all();
  return p;
}

// What a put and a get of `object_bytes` spend at the master, without moving
// a byte: a put's PutStart and PutEnd (the latter waits for the journal
// commit when the master has one), a get's GetReplicaList (its lease release
// goes without waiting, so it is left out). Median microseconds over `reps`
// x kRoundTripKeys calls of each, and their share of one op at the client
// path's median speed. Keys are removed, untimed, after each repetition.
struct RoundTrips {
  double put_start_us = 0, put_end_us = 0, get_us = 0;
};

constexpr int kRoundTripKeys = 64;

RoundTrips MeasureRoundTrips(const Config& cfg, uint64_t object_bytes) {
  mc::rpc::ClientOptions o;
  o.master = cfg.master;
  if (const char* t = std::getenv("MOONCAKE_AUTH_TOKEN")) o.auth_token = t;
  mc::rpc::MasterClient link(o);
  const mc::msg::ClientId id{0x7472616e73666572ull, 0x726f756e64747269ull};
  std::vector<double> start, end, get;
  auto us_since = [](double t0) { return (NowSec() - t0) * 1e6; };
  auto key = [](int i) { return "transfer-bench-rtt-" + std::to_string(i); };
  for (int r = 0; r <= std::max(cfg.reps, 1); ++r) {  // the first warms up
    const bool timed = r > 0;
    for (int i = 0; i < kRoundTripKeys; ++i) {
      double t0 = NowSec();
      Must(link.Invoke<mc::proto::Opcode::kPutStart>({id, key(i), object_bytes, {}}).status(), "PutStart");
      if (timed) start.push_back(us_since(t0));
      t0 = NowSec();
      Must(link.Invoke<mc::proto::Opcode::kPutEnd>({id, key(i)}).status(), "PutEnd");
      if (timed) end.push_back(us_since(t0));
    }
    for (int i = 0; i < kRoundTripKeys; ++i) {
      double t0 = NowSec();
      Must(link.Invoke<mc::proto::Opcode::kGetReplicaList>({id, key(i)}).status(), "GetReplicaList");
      if (timed) get.push_back(us_since(t0));
    }
    for (int i = 0; i < kRoundTripKeys; ++i) Must(link.Invoke<mc::proto::Opcode::kRemove>({key(i), true}).status(), "remove");
  }
  return {Median(start), Median(end), Median(get)};
}

// The client-path figures and their ratios against the ceilings and TCP:
// TCP against the loopback, same-host against memcpy, each sampled right
// before every repetition.
void ClientPath(const Config& cfg, std::vector<uint8_t>& local, const Ceiling& loop,
                const Ceiling& copy) {
  std::vector<uint8_t> sink(local.size(), 4);  // get destination, faulted once
  mc::Config cc;
  cc.cluster.master = cfg.master;
  if (const char* t = std::getenv("MOONCAKE_AUTH_TOKEN")) cc.cluster.auth_token = t;
  cc.client.tcp_streams = static_cast<uint32_t>(cfg.streams);
  Pair fig[2][2];  // [same_host][4 MiB, 64 MiB]
  for (int same_host = 0; same_host < 2; ++same_host) {
    cc.cluster.shm = same_host == 1;
    auto client = mc::client::Client::Connect(cc);
    Must(client.status(), "connecting to the master");
    const char* path = same_host ? "same-host" : "tcp";
    const Ceiling& ceil = same_host ? copy : loop;
    fig[same_host][0] = MeasureClient(**client, path, cfg.reps, 4 << 20, local, sink, ceil);
    fig[same_host][1] = MeasureClient(**client, path, cfg.reps, 64 << 20, local, sink, ceil);
    if ((*client)->last_transfer_path() != path) {
      std::printf("  (note: the last transfer went over %s, not %s)\n",
                  (*client)->last_transfer_path().c_str(), path);
    }
  }
  const Pair* t = fig[0];
  const Pair* s = fig[1];
  std::printf("client path vs targets (4 / 64 MiB):\n");
  std::printf("  tcp >= 80%% of loopback: put %.0f%% / %.0f%%, get %.0f%% / %.0f%%\n",
              100 * t[0].write.vs_ceiling, 100 * t[1].write.vs_ceiling,
              100 * t[0].read.vs_ceiling, 100 * t[1].read.vs_ceiling);
  std::printf("  same-host put >= 60%%, get >= 80%% of memcpy: put %.0f%% / %.0f%%, "
              "get %.0f%% / %.0f%%\n",
              100 * s[0].write.vs_ceiling, 100 * s[1].write.vs_ceiling,
              100 * s[0].read.vs_ceiling, 100 * s[1].read.vs_ceiling);
  std::printf("  put / get: tcp %.0f%% / %.0f%%, same-host %.0f%% / %.0f%%\n",
              100 * t[0].write.gbps / t[0].read.gbps, 100 * t[1].write.gbps / t[1].read.gbps,
              100 * s[0].write.gbps / s[0].read.gbps, 100 * s[1].write.gbps / s[1].read.gbps);
  std::printf("  same-host >= 2x tcp: put %.1fx / %.1fx, get %.1fx / %.1fx\n",
              s[0].write.gbps / t[0].write.gbps, s[1].write.gbps / t[1].write.gbps,
              s[0].read.gbps / t[0].read.gbps, s[1].read.gbps / t[1].read.gbps);
  const RoundTrips rt = MeasureRoundTrips(cfg, 4 << 20);
  // One 4 MiB op at the median speeds above, in microseconds.
  auto op_us = [](double gbps) { return (4 << 20) / gbps / 1e3; };
  std::printf("master round trips of a 4 MiB op, no bytes moved (median of %d x %d):\n"
              "  put: PutStart %.0f us + PutEnd %.0f us = %.0f%% of a tcp put, %.0f%% of a "
              "same-host put\n"
              "  get: GetReplicaList %.0f us = %.0f%% of a tcp get, %.0f%% of a same-host get\n",
              std::max(cfg.reps, 1), kRoundTripKeys, rt.put_start_us, rt.put_end_us,
              100 * (rt.put_start_us + rt.put_end_us) / op_us(t[0].write.gbps),
              100 * (rt.put_start_us + rt.put_end_us) / op_us(s[0].write.gbps), rt.get_us,
              100 * rt.get_us / op_us(t[0].read.gbps), 100 * rt.get_us / op_us(s[0].read.gbps));
}

Config ParseArgs(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "usage: transfer_bench [reps=N] [streams=N] [chunk_kib=N] "
                           "[min_chunk_kib=N] [min_read_chunk_kib=N] [copy_threads=N] "
                           "[split_kib=N] [sndbuf_kib=N] [master=H:P] [transports=0|1]\n");
      std::exit(2);
    }
    std::string k = a.substr(0, eq);
    long v = std::strtol(a.c_str() + eq + 1, nullptr, 10);
    if (k == "reps") c.reps = static_cast<int>(v);
    else if (k == "streams") c.streams = static_cast<int>(v);
    else if (k == "chunk_kib") c.chunk_kib = static_cast<uint64_t>(v);
    else if (k == "chunk_mib") c.chunk_kib = static_cast<uint64_t>(v) << 10;
    else if (k == "copy_threads") c.copy_threads = static_cast<int>(v);
    else if (k == "split_kib") c.split_kib = v;
    else if (k == "sndbuf_kib") c.sndbuf_kib = static_cast<int>(v);
    else if (k == "min_chunk_kib") c.min_chunk_kib = static_cast<uint64_t>(v);
    else if (k == "min_read_chunk_kib") c.min_read_chunk_kib = static_cast<uint64_t>(v);
    else if (k == "master") c.master = a.substr(eq + 1);
    else if (k == "transports") c.transports = v != 0;
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  mc::SetLogLevel(mc::LogLevel::WARN);
  Config cfg = ParseArgs(argc, argv);
  const uint64_t kSegmentBytes = 512ull << 20;
  std::printf("transfer_bench: %u cpus, reps %d (median reported), GB = 1e9 bytes\n",
              std::thread::hardware_concurrency(), cfg.reps);
  // A ceiling must be the best raw loopback TCP does here, so several shapes
  // are tried (on a small host fewer connections can beat more) and the best
  // is the one sampled beside every measurement. Its buffers are 64 MiB, so
  // bytes come from and go to DRAM as object bytes do (a profile showed the
  // copies touching the 512 MiB segment, not the cache-hot client buffer,
  // dominate the transports' time); the cache-hot figure is printed as an
  // upper bound only.
  std::printf("  ceiling: raw loopback TCP, send()s of 4 MiB, %llu KiB (= chunk) and %llu KiB\n"
              "    (= min_chunk) from a\n"
              "    64 MiB buffer into a reader that cycles through another (DRAM, as objects\n"
              "    are), 512 MiB per sample; the best median of 1, 2, 4 and %d (= streams)\n"
              "    connections, with autotuned or fixed 4 MiB socket buffers; that shape is\n"
              "    sampled again right before every measured repetition and %% compares the two\n",
              static_cast<unsigned long long>(cfg.chunk_kib),
              static_cast<unsigned long long>(cfg.min_chunk_kib), cfg.streams);
  std::printf("  tcp: %d streams, chunks %llu KiB (reads %llu KiB)..%llu KiB, socket buffers %d KiB\n"
              "    (0: autotuned), server in this process on 127.0.0.1\n"
              "  shm: copy_threads %d from %llu KiB, 512 MiB memfd segment, pre-faulted\n\n",
              cfg.streams, static_cast<unsigned long long>(cfg.min_chunk_kib),
              static_cast<unsigned long long>(cfg.min_read_chunk_kib),
              static_cast<unsigned long long>(cfg.chunk_kib), cfg.sndbuf_kib,
              cfg.copy_threads, static_cast<unsigned long long>(cfg.split_kib));

  std::printf("machine:\n");
  std::unique_ptr<Loopback> best;
  int best_conns = 0, best_buf_kib = 0;
  size_t best_send_bytes = 0;
  std::vector<int> conn_counts = {1, 2, 4};
  if (cfg.streams != 1 && cfg.streams != 2 && cfg.streams != 4) conn_counts.push_back(cfg.streams);
  // 4 MiB, and the transport's largest and smallest pieces (a 4 MiB object
  // on 8 streams moves in 512 KiB pieces): the shapes it can take.
  std::vector<size_t> send_sizes = {4 << 20};
  for (uint64_t kib : {cfg.chunk_kib, cfg.min_chunk_kib}) {
    if (std::find(send_sizes.begin(), send_sizes.end(), kib << 10) == send_sizes.end()) {
      send_sizes.push_back(kib << 10);
    }
  }
  for (size_t send_bytes : send_sizes)
  for (int conns : conn_counts) {
    std::vector<int> buffer_kibs = {0, 4096};
    if (cfg.sndbuf_kib != 0 && cfg.sndbuf_kib != 4096) buffer_kibs.push_back(cfg.sndbuf_kib);
    for (int buf_kib : buffer_kibs) {
      mc::net::SocketTuning tuning;
      tuning.buffer_bytes = buf_kib << 10;
      tuning.io_timeout_us = 0;
      auto l = std::make_unique<Loopback>(conns, send_bytes, (512ull << 20) / conns, 64 << 20,
                                          tuning);
      for (int r = 0; r < cfg.reps; ++r) l->Sample();
      char what[96];
      std::snprintf(what, sizeof(what), "loopback TCP, %zu KiB sends, %d conn%s, %s bufs",
                    send_bytes >> 10, conns, conns > 1 ? "s" : "",
                    buf_kib ? (std::to_string(buf_kib) + " KiB").c_str() : "default");
      std::printf("  %-42s %6.2f GB/s\n", what, l->median());
      if (!best || l->median() > best->median()) {
        best = std::move(l);
        best_conns = conns;
        best_buf_kib = buf_kib;
        best_send_bytes = send_bytes;
      }
    }
  }
  Loopback& loop = *best;
  std::printf("  %-42s %6.2f GB/s (%zu KiB sends, %d conn%s, %s socket buffers)\n",
              "=> ceiling", loop.median(), best_send_bytes >> 10, best_conns,
              best_conns > 1 ? "s" : "", best_buf_kib ? "4 MiB" : "autotuned");
  mc::net::SocketTuning hot_tuning;
  hot_tuning.buffer_bytes = best_buf_kib << 10;
  hot_tuning.io_timeout_us = 0;
  Loopback hot_loop(best_conns, best_send_bytes, (512ull << 20) / best_conns, best_send_bytes,
                    hot_tuning);
  for (int r = 0; r < cfg.reps; ++r) hot_loop.Sample();
  std::printf("  %-42s %6.2f GB/s\n", "(same shape, cache-resident buffers)", hot_loop.median());
  Memcpy memcpy_ceiling(64 << 20);
  for (int r = 0; r <= cfg.reps; ++r) memcpy_ceiling.Sample();  // the first warms up
  std::printf("  %-42s %6.2f GB/s\n", "memcpy, 64 MiB buffers, 1 thread", memcpy_ceiling.median());
  const Ceiling loop_ceiling{"loopback", [&loop] { return loop.Sample(); }};
  const Ceiling copy_ceiling{"memcpy", [&memcpy_ceiling] { return memcpy_ceiling.Sample(); }};

  SegmentOptions so;
  so.size_bytes = kSegmentBytes;
  so.populate = true;
  auto seg = Segment::Create(so);
  if (!seg.ok()) return std::fprintf(stderr, "%s\n", seg.status().ToString().c_str()), 1;
  TcpDataServerOptions sopts;
  sopts.listen_host = "127.0.0.1";
  sopts.tuning.buffer_bytes = cfg.sndbuf_kib << 10;
  auto server = TcpDataServer::Start((*seg)->base(), kSegmentBytes, AllowAll(), sopts);
  if (!server.ok()) return std::fprintf(stderr, "%s\n", server.status().ToString().c_str()), 1;
  Endpoint ep;
  ep.host = "127.0.0.1";
  ep.port = (*server)->port();
  ep.shm_path = (*seg)->shm_path();
  std::vector<uint8_t> local(64ull << 20, 3);

  TcpTransportOptions topts;
  topts.streams = cfg.streams;
  topts.max_chunk_bytes = cfg.chunk_kib << 10;
  topts.min_chunk_bytes = std::min<uint64_t>(cfg.min_chunk_kib << 10, topts.max_chunk_bytes);
  topts.min_read_chunk_bytes = cfg.min_read_chunk_kib << 10;
  topts.tuning.buffer_bytes = cfg.sndbuf_kib << 10;
  TcpTransport tcp(topts);
  ShmTransportOptions shopts;
  shopts.copy_threads = cfg.copy_threads;
  shopts.split_threshold_bytes = cfg.split_kib << 10;
  ShmTransport shm(shopts);

  if (cfg.transports) {
    std::printf("\ntransports (one client, one object at a time):\n");
    Pair t4 = MeasureTransport(tcp, ep, kSegmentBytes, cfg.reps, 4 << 20, local, loop_ceiling);
    Pair t64 = MeasureTransport(tcp, ep, kSegmentBytes, cfg.reps, 64 << 20, local, loop_ceiling);
    Pair s4 = MeasureTransport(shm, ep, kSegmentBytes, cfg.reps, 4 << 20, local, copy_ceiling);
    Pair s64 = MeasureTransport(shm, ep, kSegmentBytes, cfg.reps, 64 << 20, local, copy_ceiling);

    std::printf("\nloopback ceiling over the whole run: %.2f GB/s (median of %zu samples)\n",
                loop.median(), loop.samples());
    std::printf("targets (issue #4 point 8):\n");
    std::printf("  tcp >= 80%% of loopback: write %.0f%% / %.0f%%, read %.0f%% / %.0f%% "
                "(4 / 64 MiB)\n",
                100 * t4.write.vs_ceiling, 100 * t64.write.vs_ceiling, 100 * t4.read.vs_ceiling,
                100 * t64.read.vs_ceiling);
    std::printf("  (vs the cache-resident loopback, sampled only at the start: tcp 64 MiB write "
                "%.0f%%, read %.0f%%)\n",
                100 * t64.write.gbps / hot_loop.median(), 100 * t64.read.gbps / hot_loop.median());
    std::printf("  shm >= 2x tcp: write %.1fx / %.1fx, read %.1fx / %.1fx (4 / 64 MiB)\n",
                s4.write.gbps / t4.write.gbps, s64.write.gbps / t64.write.gbps,
                s4.read.gbps / t4.read.gbps, s64.read.gbps / t64.read.gbps);
  }
  if (!cfg.master.empty()) {
    std::printf("\nclient put/get against the cluster at %s (one client, one object at a "
                "time, %d streams, gets into a buffer allocated once; segment and master as\n"
                "that cluster runs them):\n",
                cfg.master.c_str(), cfg.streams);
    ClientPath(cfg, local, loop_ceiling, copy_ceiling);
  }
  std::printf("ceilings over the whole run: loopback %.2f GB/s (median of %zu samples), "
              "memcpy %.2f GB/s (median of %zu)\n",
              loop.median(), loop.samples(), memcpy_ceiling.median(), memcpy_ceiling.samples());
  return 0;
}
