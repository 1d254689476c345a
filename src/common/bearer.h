// HTTP bearer-token checks for the routes that change or reveal cluster
// state (metadata PUT/DELETE, the admin key listings) when the cluster has
// an auth token. The header is compared in constant time, and nothing here
// ever puts the presented token into a message. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace mc {

// True when `token` is empty (no authentication configured) or when
// `authorization` is exactly "Bearer <token>" (scheme case-insensitive).
bool BearerAuthorized(std::string_view authorization, std::string_view token);

// Counts refused requests and logs each with the peer's address and the
// route, never the token presented.
class BearerGuard {
 public:
  // `server` names the listener in log lines ("metadata server").
  BearerGuard(std::string server, std::string token)
      : server_(std::move(server)), token_(std::move(token)) {}
  bool enabled() const { return !token_.empty(); }
  // True if the request may proceed; otherwise logs and counts it.
  bool Admit(std::string_view authorization, std::string_view peer, std::string_view method,
             std::string_view path);
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const std::string server_;
  const std::string token_;
  std::atomic<uint64_t> refused_{0};
};

// The body of a 401 answer, and its WWW-Authenticate header value.
inline constexpr const char* kBearerRefusal =
    "this route needs the cluster's auth token: send 'Authorization: Bearer <token>'";
inline constexpr const char* kBearerChallenge = "Bearer realm=\"mooncake\"";

}  // namespace mc
