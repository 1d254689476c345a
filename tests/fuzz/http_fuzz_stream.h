// One HTTP connection in memory for the HTTP fuzz targets
// (metadata_http_fuzz, rest_http_fuzz): the input bytes are what the client
// sent, the replies are collected, and FuzzServer runs cpp-httplib's request
// parser and routing over it, up to kMaxRequests keep-alive requests.
// AnyStatus500 reads the replies' status lines.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

constexpr int kMaxRequests = 8;

// One connection's bytes in, the server's replies collected.
class FuzzStream : public httplib::Stream {
 public:
  FuzzStream(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = std::min(size, size_ - pos_);
    std::memcpy(ptr, data_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "192.0.2.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "192.0.2.2";
    port = 8080;
  }
  socket_t socket() const override { return 0; }
  bool drained() const { return pos_ >= size_; }
  const std::string& out() const { return out_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string out_;
};

class FuzzServer : public httplib::Server {
 public:
  void Serve(FuzzStream& stream) {
    for (int i = 0; i < kMaxRequests && !stream.drained(); ++i) {
      bool closed = false;
      if (!process_request(stream, false, closed, nullptr) || closed) break;
    }
  }
};

// True when one of the responses in `out` (keep-alive responses one after
// another) has status 500. Walks the responses by their status lines and
// Content-Length, so a 500 is never read from a body: an error message
// quotes the request (a body holding "HTTP/1.1 500" once made this fire),
// and a get returns a stored value verbatim. Stops at anything it cannot
// frame (the rest is not a response this server made).
inline bool AnyStatus500(const std::string& out) {
  size_t at = 0;
  while (at < out.size()) {
    static constexpr std::string_view kProto = "HTTP/1.1 ";
    if (out.compare(at, kProto.size(), kProto) != 0) return false;
    if (out.compare(at + kProto.size(), 3, "500") == 0) return true;
    const size_t head_end = out.find("\r\n\r\n", at);
    if (head_end == std::string::npos) return false;
    uint64_t length = 0;
    bool has_length = false;
    for (size_t line = out.find("\r\n", at) + 2; line < head_end;) {
      const size_t end = out.find("\r\n", line);
      const std::string header = out.substr(line, end - line);
      static constexpr std::string_view kLength = "content-length:";
      if (header.size() > kLength.size()) {
        std::string name = header.substr(0, kLength.size());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (name == kLength) {
          length = std::strtoull(header.c_str() + kLength.size(), nullptr, 10);
          has_length = true;
        }
      }
      line = end + 2;
    }
    if (!has_length) return false;
    at = head_end + 4 + length;
  }
  return false;
}

}  // namespace
