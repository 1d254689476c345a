// The transfer engine's same-host path: when a peer runs on this host, its
// registered memory is written and read by this process directly, not
// through the peer's TCP port.
//
// Each engine serves its MemoryRegistry on the abstract Unix socket
// "@mooncake-p2p-<rpc port>" (LocalPeerServer). A peer whose target host is
// an address of this host connects there (LocalPeerTransport, name "shm"),
// proves the cluster token like the TCP port's AUTH, and per batch asks the
// engine which registered region holds each range (CHECK), so memory the
// engine did not register, or unregistered since, is refused as over TCP.
// Then it copies:
//  - into and out of regions backed by a memfd (allocate_managed_buffer's
//    buffers): the engine passes the fd once (SCM_RIGHTS), the peer maps it
//    shared and copies with memcpy / StreamCopy. Region ids are never reused
//    by an engine, so a mapping cannot outlive the buffer it names.
//  - other registered memory: process_vm_writev / process_vm_readv to the
//    engine's pid (SO_PEERCRED), which the kernel allows a process of the same
//    user (and no Yama restriction).
// Measured on the 2-core dev VM (/tmp test, 4 MiB, median of 5 x 200):
// memcpy into a shared memfd mapping ~3.6 GB/s write, ~3.5 GB/s read;
// process_vm_writev ~1.3 GB/s, process_vm_readv ~0.9 GB/s. So managed
// buffers go by mapping, and process_vm is the fallback for the rest.
//
// Trust: as ShmTransport (transfer/shm_transport.h), the engine cannot stop
// a process of its own user from writing its memory; the CHECK keeps this
// library's peers inside registered memory. The socket serves only
// processes of the engine's uid (SO_PEERCRED) and, with a token, those that
// answer its nonce; a peer talks only to a socket of its own uid.
// An engine that cannot listen there (the name taken) logs it and serves
// its peers on this host through the rpc port.
//
// Any failure passes the op on to TCP (FallbackTransport), except a peer
// that did not answer within the transfer timeout (TRANSFER_FAIL,
// peer_unreachable): TCP would only wait as long again.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "p2p/memory_registry.h"
#include "transfer/transport.h"

namespace mc::p2p {

// Peers connected to one engine's socket at once, and regions one peer
// keeps mapped per engine (the cache is dropped whole past it).
inline constexpr size_t kMaxLocalPeers = 64;
inline constexpr size_t kMaxMappedRegions = 1024;
// Host names a transport remembers as local or not (forgotten whole past it).
inline constexpr size_t kMaxKnownHosts = 4096;

std::string LocalPeerSocket(uint16_t rpc_port);

// Whether `host` (a name or IPv4 literal) is an address of this host.
bool IsLocalHost(const std::string& host);

class LocalPeerServer {
 public:
  static Result<std::unique_ptr<LocalPeerServer>> Start(
      std::shared_ptr<const MemoryRegistry> registry, uint16_t rpc_port, std::string auth_token,
      uint64_t io_timeout_us);
  ~LocalPeerServer();
  LocalPeerServer(const LocalPeerServer&) = delete;
  LocalPeerServer& operator=(const LocalPeerServer&) = delete;

 private:
  struct Conn {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  LocalPeerServer() = default;
  void AcceptLoop();
  void Serve(Conn* conn);
  bool Handshake(int fd);
  bool Answer(int fd);  // one request; false to close

  std::shared_ptr<const MemoryRegistry> registry_;
  std::string auth_token_;
  uint64_t io_timeout_us_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;  // guards conns_
  std::vector<std::unique_ptr<Conn>> conns_;
};

struct LocalPeerOptions {
  std::string auth_token;
  uint64_t io_timeout_us = 30'000'000;
};

struct LocalPeerStats {
  uint64_t mapped_requests = 0;      // copied through a mapped memfd
  uint64_t process_vm_requests = 0;  // by process_vm_writev / readv
};

class LocalPeerTransport final : public transfer::Transport {
 public:
  explicit LocalPeerTransport(LocalPeerOptions options) : options_(std::move(options)) {}
  ~LocalPeerTransport() override;
  std::string_view name() const override { return "shm"; }
  // Ops to a peer not on this host fail NOT_SUPPORTED (for TCP).
  Status Batch(std::span<transfer::TransferOp> ops) override;
  LocalPeerStats stats() const { return {mapped_.load(), process_vm_.load()}; }

 private:
  struct Peer;
  // The connected peer at `port`, or null with *why set.
  std::shared_ptr<Peer> Connect(uint16_t port, Status* why);
  void Drop(uint16_t port, const std::shared_ptr<Peer>& peer);
  Status RunGroup(const std::shared_ptr<Peer>& peer, std::span<transfer::TransferOp> ops,
                  const std::vector<size_t>& which);
  bool LocalCached(const std::string& host);

  const LocalPeerOptions options_;
  std::mutex mu_;  // guards peers_, local_
  std::map<uint16_t, std::shared_ptr<Peer>> peers_;
  std::map<std::string, bool> local_;
  std::atomic<uint64_t> mapped_{0}, process_vm_{0};
};

}  // namespace mc::p2p
