// DummyServer: the standalone client's side of the dummy-client protocol
// (proto/dummy_ops.h, mooncake-client(1)). Listens on a Unix socket; each
// dummy client (an engine rank) that connects asks for a pool, which this
// side creates as a memfd, maps, registers with the Client and passes over
// the socket (SCM_RIGHTS). Then every request the dummy sends runs on the
// Client with spans into that pool: bytes move between the pool and the
// segments without passing through the socket.
//
// A dummy that goes away (closed socket, killed process) is noticed at
// once (the read fails): a call it had in flight runs to its end on this
// side, so a put either stores the whole object or is revoked by the
// Client, never left half written; then the pool is unregistered and
// unmapped, its memory returns to the system and the budget.
//
// Thread-safe: one thread accepts, one thread serves each dummy; Stop() from
// any thread ends them all.
//
// Gets: a dummy may read a key again without this side, straight from a
// same-host segment, with the location this side's Client cached
// (DummyGetIntoLearn, client/direct_reads.h); every call here that changes
// keys bumps their slots in the forget table shared with all dummies
// (client/dummy_forgets.h), so none reads a location such a call replaced.
//
// Puts: a dummy may put by itself (client/dummy_puts.h) once it handed its
// put journal over (DummyDirectPuts); when its connection ends, the puts the
// journal still names are revoked here (Client::RevokePuts): a dummy killed
// mid-put leaves no put in progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "msg/dummy_messages.h"

namespace mc::client {
class Client;
struct ForgetTable;
}

namespace mc::clientd {

// Dummies served at once (one per TP rank; a host rarely has more than 16).
inline constexpr uint32_t kDefaultMaxDummies = 64;
inline constexpr uint32_t kMaxDummies = 1024;

struct DummyServerOptions {
  std::string socket_path;  // '@' prefix: abstract
  // All the dummies' pools together (memory this host lends its ranks).
  uint64_t max_pool_bytes = 256ull << 30;
  uint32_t max_dummies = kDefaultMaxDummies;
  // What dummies need to put by themselves (client/dummy_puts.h:
  // DirectPutsSettings); an empty master: their puts come through here.
  msg::DummyDirectPutsReply direct_puts;
};

class DummyServer {
 public:
  // Serves `client` (which must outlive the server) on options.socket_path.
  // `hostname` is what dummies report as get_hostname (the segment's name).
  static Result<std::unique_ptr<DummyServer>> Start(client::Client& client, std::string hostname,
                                                    const DummyServerOptions& options);
  ~DummyServer();
  DummyServer(const DummyServer&) = delete;
  DummyServer& operator=(const DummyServer&) = delete;

  // Closes the socket and every dummy's connection, waits for their calls
  // to end and releases their pools. Idempotent.
  void Stop();

  uint32_t attached() const { return attached_.load(); }
  uint64_t pool_bytes() const { return pool_bytes_.load(); }
  const std::string& socket_path() const { return options_.socket_path; }

 private:
  struct Session;
  DummyServer(client::Client& client, std::string hostname, const DummyServerOptions& o);
  void AcceptLoop();
  void AcceptUntilStopped();
  void Serve(Session* s);
  void ServeRequests(Session* s);
  // The reply to DummyDirectPuts, whose frame brought the journal `fd`.
  std::string TakeJournal(Session* s, int fd);
  void RevokeUnfinishedPuts(Session* s);
  void Reap(bool all);

  client::Client& client_;
  const std::string hostname_;
  const DummyServerOptions options_;
  int listen_fd_ = -1;
  // Shared with every dummy (client/dummy_forgets.h).
  client::ForgetTable* forgets_ = nullptr;
  int forgets_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<uint32_t> attached_{0};
  std::atomic<uint64_t> pool_bytes_{0};
  std::thread acceptor_;
  std::mutex mu_;  // sessions_
  std::list<std::unique_ptr<Session>> sessions_;
};

}  // namespace mc::clientd
