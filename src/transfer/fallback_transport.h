// FallbackTransport: several transports behind one, tried in order. Each op
// is offered to the first layer that takes ops like it; when that layer
// fails the op with a status it passes on, the op goes to the next layer,
// and so on; any other failure fails the batch. Each op records which layer
// moved it (TransferOp::moved_by) and which passed it on last
// (passed_on_by), so the caller can count paths.
//
// The client's data path is one: shm (same-host ops only; any failure, e.g.
// a segment it cannot map, passes the op on), RDMA (protocol rdma; a store
// that serves no RDMA answers NOT_SUPPORTED and the op passes on), TCP.
//
// Thread-safe when its layers are (they are called concurrently).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "transfer/transport.h"

namespace mc::transfer {

class FallbackTransport final : public Transport {
 public:
  struct Layer {
    std::unique_ptr<Transport> transport;
    // The ops this layer is offered; null: every op that reaches it.
    std::function<bool(const TransferOp&)> offered;
    // Whether a failed op goes on to the next layer; null: none does.
    std::function<bool(const Status&)> passes_on;
  };

  explicit FallbackTransport(std::vector<Layer> layers) : layers_(std::move(layers)) {}

  std::string_view name() const override { return "fallback"; }

  // Any number of ops (each layer gets them kMaxBatchOps at a time). A
  // layer's chunk that fails an op it does not pass on ends the batch: the
  // ops not tried yet fail with TRANSFER_FAIL, and the first such failure
  // (by op index within that chunk) is returned. An op no layer is offered
  // fails with NOT_SUPPORTED.
  Status Batch(std::span<TransferOp> ops) override;

  // On every layer; the first failure.
  Status RegisterBuffer(void* addr, uint64_t len) override;
  Status UnregisterBuffer(void* addr) override;

 private:
  // Runs the ops `here` (indices into `ops`) over `layer`; those it passes
  // on are appended to `next`. The batch's failure, or OK.
  Status RunLayer(Layer& layer, std::span<TransferOp> ops, const std::vector<size_t>& here,
                  std::vector<size_t>* next);

  std::vector<Layer> layers_;
};

}  // namespace mc::transfer
