#include "bench/resp.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/socket.h"

namespace mc::bench {

namespace {

Status Fail(const std::string& why) { return Error(ErrorCode::RPC_FAIL, "redis: " + why); }

// Sends every iovec, resuming after partial writes; the socket is blocking
// with SO_SNDTIMEO, so a stuck peer ends in an error instead of a hang.
Status WriteVec(int fd, std::vector<iovec>& iov) {
  size_t i = 0;
  while (i < iov.size()) {
    int n_iov = static_cast<int>(std::min<size_t>(iov.size() - i, IOV_MAX));
    msghdr msg{};
    msg.msg_iov = &iov[i];
    msg.msg_iovlen = n_iov;
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(std::string("send: ") + std::strerror(errno));
    }
    auto left = static_cast<size_t>(n);
    while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
    if (left > 0) {
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
      iov[i].iov_len -= left;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return Error(ErrorCode::INVALID_PARAMS, "'" + std::string(url) + "': expected redis://HOST:PORT");
  }
  std::string rest(url.substr(kScheme.size()));
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find('/') != std::string::npos || rest.find('@') != std::string::npos) {
    return Error(ErrorCode::INVALID_PARAMS, "'" + std::string(url) + "': expected redis://HOST:PORT");
  }
  if (rest.find(':') == std::string::npos) rest += ":6379";
  auto hp = net::ParseHostPort(rest);
  if (!hp.ok()) return Error(ErrorCode::INVALID_PARAMS, "'" + std::string(url) + "': " + hp.status().message());
  return rest;
}

Result<std::unique_ptr<RespClient>> RespClient::Connect(const std::string& host_port,
                                                        uint64_t timeout_us) {
  MC_ASSIGN_OR_RETURN(net::HostPort hp, net::ParseHostPort(host_port));
  auto fd = net::ConnectTcp(hp, timeout_us);
  if (!fd.ok()) return Fail("cannot connect to " + host_port + ": " + fd.status().message());
  timeval tv{static_cast<time_t>(timeout_us / 1000000), static_cast<suseconds_t>(timeout_us % 1000000)};
  ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(*fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return std::unique_ptr<RespClient>(new RespClient(*fd, timeout_us));
}

RespClient::~RespClient() { ::close(fd_); }

Status RespClient::SendCommands(std::string_view verb, std::span<const std::string> keys,
                                std::span<const uint8_t> value) {
  if (keys.size() > kMaxRespPipeline) return Fail("pipeline longer than " + std::to_string(kMaxRespPipeline));
  bool with_value = verb == "SET";
  // Headers are built first so the iovecs can point into a stable vector.
  std::vector<std::string> heads(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string& h = heads[i];
    h = "*" + std::to_string(with_value ? 3 : 2) + "\r\n$" + std::to_string(verb.size()) + "\r\n";
    h.append(verb);
    h += "\r\n$" + std::to_string(keys[i].size()) + "\r\n" + keys[i] + "\r\n";
    if (with_value) h += "$" + std::to_string(value.size()) + "\r\n";
  }
  static const char kCrlf[] = "\r\n";
  std::vector<iovec> iov;
  iov.reserve(keys.size() * 3);
  for (auto& h : heads) {
    iov.push_back({h.data(), h.size()});
    if (with_value) {
      iov.push_back({const_cast<uint8_t*>(value.data()), value.size()});
      iov.push_back({const_cast<char*>(kCrlf), 2});
    }
  }
  return WriteVec(fd_, iov);
}

Status RespClient::Fill() {
  if (in_begin_ == in_end_) in_begin_ = in_end_ = 0;
  if (in_end_ == in_.size()) {
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
  for (;;) {
    ssize_t n = ::recv(fd_, in_.data() + in_end_, in_.size() - in_end_, 0);
    if (n > 0) {
      in_end_ += static_cast<size_t>(n);
      return Status::Ok();
    }
    if (n == 0) return Fail("connection closed");
    if (errno != EINTR) return Fail(std::string("recv: ") + std::strerror(errno));
  }
}

Result<std::string> RespClient::ReadLine() {
  for (;;) {
    std::string_view avail(in_.data() + in_begin_, in_end_ - in_begin_);
    size_t eol = avail.find("\r\n");
    if (eol != std::string_view::npos) {
      std::string line(avail.substr(0, eol));
      in_begin_ += eol + 2;
      return line;
    }
    if (avail.size() >= in_.size()) return Fail("reply line too long");
    MC_RETURN_IF_ERROR(Fill());
  }
}

Status RespClient::ReadExact(uint8_t* out, size_t n) {
  size_t from_buffer = std::min(n, in_end_ - in_begin_);
  if (out != nullptr) std::memcpy(out, in_.data() + in_begin_, from_buffer);
  in_begin_ += from_buffer;
  size_t got = from_buffer;
  // Large payloads go straight from the socket to the destination.
  while (got < n) {
    if (out == nullptr || n - got < in_.size() / 2) {
      MC_RETURN_IF_ERROR(Fill());
      size_t take = std::min(n - got, in_end_ - in_begin_);
      if (out != nullptr) std::memcpy(out + got, in_.data() + in_begin_, take);
      in_begin_ += take;
      got += take;
      continue;
    }
    ssize_t r = ::recv(fd_, out + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0) {
      return Fail("connection closed");
    } else if (errno != EINTR) {
      return Fail(std::string("recv: ") + std::strerror(errno));
    }
  }
  return Status::Ok();
}

Result<RespReply> RespClient::ReadReply(std::vector<uint8_t>* sink) {
  MC_ASSIGN_OR_RETURN(std::string line, ReadLine());
  if (line.empty()) return Fail("empty reply line");
  RespReply r;
  std::string body = line.substr(1);
  switch (line[0]) {
    case '+': r.kind = RespReply::kStatus; r.text = body; return r;
    case '-': r.kind = RespReply::kError; r.text = body; return r;
    case ':': r.kind = RespReply::kInteger; r.integer = std::strtoll(body.c_str(), nullptr, 10); return r;
    case '$': {
      long long len = std::strtoll(body.c_str(), nullptr, 10);
      if (len < 0) return r;  // kNil
      if (static_cast<uint64_t>(len) > kMaxRespBulkBytes) return Fail("bulk reply of " + body + " bytes");
      r.kind = RespReply::kBulk;
      r.bulk_bytes = static_cast<uint64_t>(len);
      if (sink != nullptr) sink->resize(r.bulk_bytes);
      MC_RETURN_IF_ERROR(ReadExact(sink ? sink->data() : nullptr, r.bulk_bytes));
      uint8_t crlf[2];
      MC_RETURN_IF_ERROR(ReadExact(crlf, 2));
      return r;
    }
    default: return Fail("unexpected reply '" + line.substr(0, 40) + "'");
  }
}

Status RespClient::Set(std::span<const std::string> keys, std::span<const uint8_t> value) {
  MC_RETURN_IF_ERROR(SendCommands("SET", keys, value));
  Status first = Status::Ok();
  for (size_t i = 0; i < keys.size(); ++i) {
    MC_ASSIGN_OR_RETURN(RespReply r, ReadReply(nullptr));
    if (r.kind != RespReply::kStatus && first.ok()) first = Fail("SET " + keys[i] + ": " + r.text);
  }
  return first;
}

Result<std::vector<int64_t>> RespClient::Get(std::span<const std::string> keys,
                                             std::vector<uint8_t>* buffer) {
  MC_RETURN_IF_ERROR(SendCommands("GET", keys, {}));
  std::vector<int64_t> sizes;
  sizes.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    MC_ASSIGN_OR_RETURN(RespReply r, ReadReply(buffer));
    if (r.kind == RespReply::kError) return Fail("GET " + keys[i] + ": " + r.text);
    sizes.push_back(r.kind == RespReply::kBulk ? static_cast<int64_t>(r.bulk_bytes) : -1);
  }
  return sizes;
}

Result<std::vector<bool>> RespClient::Exists(std::span<const std::string> keys) {
  MC_RETURN_IF_ERROR(SendCommands("EXISTS", keys, {}));
  std::vector<bool> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    MC_ASSIGN_OR_RETURN(RespReply r, ReadReply(nullptr));
    if (r.kind != RespReply::kInteger) return Fail("EXISTS " + keys[i] + ": " + r.text);
    out.push_back(r.integer > 0);
  }
  return out;
}

}  // namespace mc::bench
