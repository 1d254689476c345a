// One HTTP connection in memory for the HTTP fuzz targets
// (metadata_http_fuzz, rest_http_fuzz): the input bytes are what the client
// sent, the replies are collected, and FuzzServer runs cpp-httplib's request
// parser and routing over it, up to kMaxRequests keep-alive requests.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

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

}  // namespace
