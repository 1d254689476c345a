// PeerDirectory: how a transfer engine finds a peer's data port by the
// peer's segment name, and tells others its own.
//
//  - P2PHANDSHAKE (the reference's name): no metadata server; a segment is
//    named "host:rpc_port" and the name is the address.
//  - http(s)://host:port/path: the HTTP metadata server (mc::metadata,
//    mooncake-metadata-server(1)); an engine PUTs "host:rpc_port" under
//    "mooncake/p2p/<segment name>" when it starts, DELETEs it when it stops,
//    and peers GET it to resolve the name (cached after the first look-up).
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace mc::p2p {

inline constexpr std::string_view kP2pHandshake = "P2PHANDSHAKE";
inline constexpr std::string_view kDirectoryKeyPrefix = "mooncake/p2p/";
// Upper bound of one segment name (a host name and a port, usually).
inline constexpr size_t kMaxSegmentNameBytes = 256;

struct PeerAddress {
  std::string host;
  uint16_t port = 0;
};

// "host:port" (also "[v6]:port"); INVALID_PARAMS naming the text otherwise.
Result<PeerAddress> ParseHostPort(const std::string& text);
// The host part of "host" or "host:port".
std::string HostPart(const std::string& local_hostname);

class PeerDirectory {
 public:
  virtual ~PeerDirectory() = default;
  // The name this engine is known by, given what it was told and its port.
  virtual std::string SegmentName(const std::string& local_hostname, uint16_t port) const = 0;
  virtual Status Publish(const std::string& segment_name, const PeerAddress& self) = 0;
  virtual void Unpublish(const std::string& segment_name) = 0;
  virtual Result<PeerAddress> Resolve(const std::string& segment_name) = 0;
  // Drops what Resolve cached for the name (its peer could not be reached).
  virtual void Forget(const std::string& segment_name) = 0;
};

// For "P2PHANDSHAKE" or an http:// / https:// URL; INVALID_PARAMS naming the
// forms we know otherwise (etcd and redis metadata are not built).
// `auth_token` is sent as a bearer token on PUT and DELETE.
Result<std::unique_ptr<PeerDirectory>> MakePeerDirectory(const std::string& metadata_server,
                                                         const std::string& auth_token);

}  // namespace mc::p2p
