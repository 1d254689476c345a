// rpc_bench: the RPC framework's ceiling over loopback, with a handler that
// does no work (ExistKey answers true). Prints its setup, then one line per
// (connections, batch) case: calls/s, metadata ops/s and mean latency.
//   rpc_bench [seconds_per_case=2] [io_threads=2]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "common/log.h"
#include "rpc/client.h"
#include "rpc/server.h"
#include "rpc/testing.h"

using namespace mc;
using namespace mc::rpc;
using namespace mc::proto;

namespace {

class NullHandler : public testing::RefusingHandler {
 public:
  Result<bool> ExistKey(const msg::KeyRequest&) override { return true; }
  Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req) override {
    return msg::Batch<msg::BatchItem<bool>>(req.size(), msg::BatchItem<bool>{Status::Ok(), true});
  }
};

void RunCase(const std::string& address, int connections, int batch, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&, t] {
      ClientOptions o;
      o.master = address;
      o.max_connections = 1;
      MasterClient c(o);
      msg::Batch<msg::KeyRequest> keys;
      for (int i = 0; i < batch; ++i) keys.push_back({{1, 2}, "bench/key/" + std::to_string(t * 1000 + i)});
      uint64_t n = 0, bad = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        bool ok = batch == 1 ? c.Invoke<Opcode::kExistKey>(keys[0]).ok() : c.Invoke<Opcode::kBatchExistKey>(keys).ok();
        ++n;
        bad += ok ? 0 : 1;
      }
      calls += n;
      failures += bad;
    });
  }
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cps = calls / secs;
  std::printf("connections=%-2d batch=%-3d  calls/s=%9.0f  ops/s=%10.0f  mean_latency_us=%7.1f  failures=%llu\n",
              connections, batch, cps, cps * batch, connections / cps * 1e6,
              static_cast<unsigned long long>(failures.load()));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  uint32_t io_threads = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 2;
  SetLogLevel(LogLevel::WARN);
  NullHandler handler;
  ServerOptions so;
  so.address = "127.0.0.1";
  so.port = 0;
  so.io_threads = io_threads;
  Server server(so, &handler);
  if (Status st = server.Start(); !st.ok()) {
    std::fprintf(stderr, "rpc_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  std::string address = "127.0.0.1:" + std::to_string(server.port());
  std::printf("rpc_bench: loopback %s, server io_threads=%u, %u cpus, %.1f s per case,\n"
              "  op=ExistKey (batch 1) / BatchExistKey (batch > 1), null handler, one synchronous\n"
              "  client thread per connection\n",
              address.c_str(), io_threads, std::thread::hardware_concurrency(), seconds);
  for (int connections : {1, 8})
    for (int batch : {1, 32}) RunCase(address, connections, batch, seconds);
  server.Stop();
  return 0;
}
