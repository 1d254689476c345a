#include "transfer/rdma_transport.h"

#include <infiniband/verbs.h>

#include "transfer/rdma_probe.h"

namespace mc::transfer {

Result<std::unique_ptr<RdmaTransport>> RdmaTransport::Create() {
  MC_ASSIGN_OR_RETURN(std::vector<std::string> devices, ListRdmaDevices());
  if (devices.empty()) return Error(ErrorCode::NOT_SUPPORTED, "no RDMA device on this host");
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr || num == 0) {
    if (list != nullptr) ibv_free_device_list(list);
    return Error(ErrorCode::NOT_SUPPORTED, "no RDMA device on this host");
  }
  std::unique_ptr<RdmaTransport> t(new RdmaTransport());
  t->device_name_ = ibv_get_device_name(list[0]);
  t->context_ = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (t->context_ == nullptr) {
    return Error(ErrorCode::NOT_SUPPORTED, "cannot open RDMA device " + t->device_name_);
  }
  return t;
}

RdmaTransport::~RdmaTransport() {
  if (context_ != nullptr) ibv_close_device(context_);
}

Status RdmaTransport::Batch(std::span<TransferOp> ops) {
  MC_RETURN_IF_ERROR(ValidateBatch(ops));
  Status st = Error(ErrorCode::NOT_SUPPORTED,
                    "RDMA transfers are not implemented yet (device " + device_name_ + ")");
  for (TransferOp& op : ops) op.status = st;
  return ops.empty() ? Status::Ok() : st;
}

}  // namespace mc::transfer
