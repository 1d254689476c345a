// RdmaTransport: placeholder behind the Transport seam so the seam is shaped
// for RDMA from the start. It opens the first RDMA device through libibverbs
// to prove the dependency links; every transfer returns NOT_SUPPORTED until
// one-sided RDMA WRITE/READ (QPs, memory registration, rkeys published in the
// segment descriptor) is implemented. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "transfer/transport.h"

struct ibv_context;

namespace mc::transfer {

class RdmaTransport final : public Transport {
 public:
  // NOT_SUPPORTED when the host has no RDMA device (the usual case in CI).
  static Result<std::unique_ptr<RdmaTransport>> Create();
  ~RdmaTransport() override;

  std::string_view name() const override { return "rdma"; }
  Status Batch(std::span<TransferOp> ops) override;
  const std::string& device_name() const { return device_name_; }

 private:
  RdmaTransport() = default;
  std::string device_name_;
  ::ibv_context* context_ = nullptr;
};

}  // namespace mc::transfer
