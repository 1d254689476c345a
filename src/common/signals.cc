#include "common/signals.h"

#include <csignal>

#include <atomic>
#include <chrono>
#include <thread>

namespace mc {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
void OnSignal(int) { g_stop.store(true); }
void OnHangup(int) { g_reload.store(true); }
}  // namespace

void InstallStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool StopRequested() { return g_stop.load(); }

void InstallReloadSignal() {
  struct sigaction sa {};
  sa.sa_handler = OnHangup;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGHUP, &sa, nullptr);
}

bool TakeReloadRequest() { return g_reload.exchange(false); }

bool WaitForStop(uint64_t timeout_ms) {
  // Polling in 20 ms steps keeps this async-signal-safe and simple; the
  // callers are housekeeping loops, not latency-critical paths.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!g_stop.load()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace mc
