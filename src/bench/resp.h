// RespClient: a minimal Redis client (RESP2) for `mooncake bench --compare`:
// pipelined SET, GET and EXISTS over one blocking TCP connection. Written
// here rather than linking hiredis because the binary must stay fully static
// and Debian ships no static libhiredis. Not thread-safe: one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mc::bench {

// Keys of one pipelined call; bounds the iovec array and the reply backlog.
inline constexpr size_t kMaxRespPipeline = 4096;
// Largest bulk reply accepted (a corrupt length must not allocate gigabytes).
inline constexpr uint64_t kMaxRespBulkBytes = 1ull << 30;

// "redis://HOST:PORT" (port defaults to 6379) to "HOST:PORT".
Result<std::string> ParseRedisUrl(std::string_view url);

// One reply of the subset we use: "+OK", ":1", "$len bytes", "$-1", "-ERR".
struct RespReply {
  enum Kind { kStatus, kInteger, kBulk, kNil, kError } kind = kNil;
  int64_t integer = 0;
  uint64_t bulk_bytes = 0;  // bulk payload length (the payload goes to the sink)
  std::string text;         // status or error text
};

class RespClient {
 public:
  static Result<std::unique_ptr<RespClient>> Connect(const std::string& host_port,
                                                     uint64_t timeout_us);
  ~RespClient();

  // SET every key to `value`; OK unless a reply is not +OK.
  Status Set(std::span<const std::string> keys, std::span<const uint8_t> value);
  // GET every key into `buffer` (resized to the value); per key: the value
  // size, or -1 when absent.
  Result<std::vector<int64_t>> Get(std::span<const std::string> keys, std::vector<uint8_t>* buffer);
  // EXISTS per key.
  Result<std::vector<bool>> Exists(std::span<const std::string> keys);

 private:
  explicit RespClient(int fd, uint64_t timeout_us) : fd_(fd), timeout_us_(timeout_us) {}
  Status SendCommands(std::string_view verb, std::span<const std::string> keys,
                      std::span<const uint8_t> value);
  // Reads one reply; a bulk payload is copied into `sink` (resized).
  Result<RespReply> ReadReply(std::vector<uint8_t>* sink);
  Result<std::string> ReadLine();
  Status ReadExact(uint8_t* out, size_t n);
  Status Fill();

  int fd_;
  uint64_t timeout_us_;
  std::vector<char> in_ = std::vector<char>(1 << 16);
  size_t in_begin_ = 0, in_end_ = 0;
};

}  // namespace mc::bench
