// Every default that more than one module states, defined once.
//
// The config tree (config/config.h) is where a user's setting lands, but the
// layers under it keep their own options structs (master::Options,
// rpc::ServerOptions, rpc::ClientOptions, metadata::KvLimits,
// transfer::TcpTransportOptions, master::PoolLevel) so that they can be used,
// tested and benchmarked without the config. Both initialise from the
// constants below, so a default changes in one place and the two cannot
// drift. A default only one module knows stays in that module.
// Plain constants: thread-safe. (Ceilings, the largest values allowed, are
// in common/ceilings.h.)
#pragma once

#include <cstdint>
#include <string_view>

namespace mc {

// ---- the master's RPC endpoint ([cluster], [master]; rpc::ServerOptions, ClientOptions) ----
inline constexpr uint16_t kDefaultMasterRpcPort = 50051;
// Where a client looks for the master: this host on kDefaultMasterRpcPort.
inline constexpr const char* kDefaultMasterAddress = "127.0.0.1:50051";
inline constexpr const char* kDefaultMasterRpcBindAddress = "0.0.0.0";
inline constexpr uint32_t kDefaultMasterMaxConnections = 4096;
inline constexpr uint64_t kDefaultRpcTimeoutUs = 5000000;  // one call, one connection attempt
inline constexpr uint32_t kDefaultRpcRetries = 5;          // connection attempts per call

namespace defaults_internal {
constexpr uint32_t PortOf(std::string_view host_port) {
  uint32_t port = 0;
  for (char c : host_port.substr(host_port.rfind(':') + 1)) port = port * 10 + uint32_t(c - '0');
  return port;
}
}  // namespace defaults_internal
static_assert(defaults_internal::PortOf(kDefaultMasterAddress) == kDefaultMasterRpcPort,
              "a client's default master is the master's default port");

// ---- the master's state machine ([master]; master::Options) ----
inline constexpr uint64_t kDefaultKvLeaseTtlUs = 10000000;
// How long a sealed-read grant (direct reads, issue 33) lives: it needs no
// lease, only a seal, so it may live longer; a client's cached location is
// used no longer than this.
inline constexpr uint64_t kSealedReadGrantTtlUs = 60000000;
// A client's default for [cluster] direct_read_ttl (at most the above): how
// long a key removed or replaced by another client may still be read in its
// old version (whole; never another key's or version's bytes).
inline constexpr uint64_t kDefaultDirectReadTtlUs = 5000000;
inline constexpr uint64_t kDefaultKvSoftPinTtlUs = 1800000000;
inline constexpr double kDefaultEvictionHighWatermarkRatio = 0.90;  // also master::PoolLevel
inline constexpr double kDefaultEvictionRatio = 0.05;               // also master::PoolLevel
inline constexpr uint64_t kDefaultClientTtlUs = 10000000;
inline constexpr uint64_t kDefaultPutTimeoutUs = 30000000;
inline constexpr uint64_t kDefaultStripeSizeBytes = 16ull << 20;
inline constexpr uint32_t kDefaultMaxBatch = 4096;     // at most kMaxBatchItems
inline constexpr uint32_t kDefaultMaxKeyBytes = 4096;  // at most kMaxStringBytes

// ---- the metadata server ([metadata_server]; metadata::KvLimits) ----
inline constexpr uint32_t kDefaultMetadataMaxKeyBytes = 4096;
inline constexpr uint64_t kDefaultMetadataMaxValueBytes = 4ull << 20;

// ---- the data plane ([client]; transfer::TcpTransportOptions) ----
inline constexpr uint32_t kDefaultTcpStreams = 8;  // connections one transfer stripes over

}  // namespace mc
