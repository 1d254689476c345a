#include "transfer/fallback_transport.h"

#include <algorithm>

namespace mc::transfer {

namespace {

void NotTried(std::span<TransferOp> ops, const std::vector<size_t>& which, size_t from) {
  for (size_t k = from; k < which.size(); ++k) {
    ops[which[k]].status =
        Error(ErrorCode::TRANSFER_FAIL, "not tried: an earlier op of the batch failed");
  }
}

}  // namespace

Status FallbackTransport::RunLayer(Layer& layer, std::span<TransferOp> ops,
                                   const std::vector<size_t>& here, std::vector<size_t>* next) {
  std::vector<TransferOp> batch;
  for (size_t start = 0; start < here.size(); start += kMaxBatchOps) {
    const size_t n = std::min(kMaxBatchOps, here.size() - start);
    batch.clear();
    for (size_t k = start; k < start + n; ++k) batch.push_back(ops[here[k]]);
    const Status st = layer.transport->Batch(batch);
    // A batch refused whole (its shape) fails every op in it.
    const bool whole = !st.ok() && std::all_of(batch.begin(), batch.end(),
                                               [](const TransferOp& op) { return op.status.ok(); });
    Status failure;
    for (size_t k = 0; k < n; ++k) {
      TransferOp& op = ops[here[start + k]];
      op.status = whole ? st : batch[k].status;
      op.peer_unreachable = batch[k].peer_unreachable;
      op.seal = batch[k].seal;  // what a sealed read proved (transport.h)
      if (op.status.ok()) {
        op.moved_by = layer.transport->name();
      } else if (layer.passes_on && layer.passes_on(op.status)) {
        op.passed_on_by = layer.transport->name();
        next->push_back(here[start + k]);
      } else if (failure.ok()) {
        failure = op.status;
      }
    }
    if (!failure.ok()) {
      NotTried(ops, here, start + n);
      return failure;
    }
  }
  return Status::Ok();
}

Status FallbackTransport::Batch(std::span<TransferOp> ops) {
  std::vector<size_t> pending(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    pending[i] = i;
    ops[i].status = Status::Ok();
    ops[i].peer_unreachable = false;
    ops[i].moved_by = {};
    ops[i].passed_on_by = {};
  }
  for (Layer& layer : layers_) {
    std::vector<size_t> here, later;
    for (size_t i : pending) {
      (!layer.offered || layer.offered(ops[i]) ? here : later).push_back(i);
    }
    std::vector<size_t> passed;
    Status st = RunLayer(layer, ops, here, &passed);
    if (!st.ok()) {
      NotTried(ops, later, 0);
      NotTried(ops, passed, 0);
      return st;
    }
    // Op order is kept, so a layer sees its ops as the caller listed them.
    pending.clear();
    std::merge(later.begin(), later.end(), passed.begin(), passed.end(),
               std::back_inserter(pending));
  }
  for (size_t i : pending) {
    ops[i].status = Error(ErrorCode::NOT_SUPPORTED, "no transport takes this op");
  }
  return pending.empty() ? Status::Ok() : ops[pending[0]].status;
}

Status FallbackTransport::RegisterBuffer(void* addr, uint64_t len) {
  for (Layer& layer : layers_) MC_RETURN_IF_ERROR(layer.transport->RegisterBuffer(addr, len));
  return Status::Ok();
}

Status FallbackTransport::UnregisterBuffer(void* addr) {
  for (Layer& layer : layers_) MC_RETURN_IF_ERROR(layer.transport->UnregisterBuffer(addr));
  return Status::Ok();
}

}  // namespace mc::transfer
