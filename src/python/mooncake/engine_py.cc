// mooncake.engine: the reference's TransferEngine class over p2p's engine
// (p2p/transfer_engine.h), with its method names, argument order and return
// conventions: 0 for success and -1 for failure, batch ids that are 0 when a
// submission failed, transfer_check_status's 1 / 0 / -1 / -2 (done,
// pending, failed, timed out). Every call that moves bytes drops the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "p2p/transfer_engine.h"

namespace py = pybind11;

namespace mooncake_py {
namespace {

using mc::p2p::BatchState;
using mc::p2p::TransferRequest;
using mc::transfer::OpKind;

// The reference reads MC_TRANSFER_TIMEOUT in seconds and takes at least 5.
constexpr int kMinTransferTimeoutS = 5;

enum class TransferOpcode { kRead = 0, kWrite = 1 };

OpKind Kind(TransferOpcode op) { return op == TransferOpcode::kRead ? OpKind::kRead : OpKind::kWrite; }

uint64_t TransferTimeoutUs() {
  const char* env = std::getenv("MC_TRANSFER_TIMEOUT");
  if (env == nullptr) return mc::p2p::kDefaultTransferTimeoutUs;
  return static_cast<uint64_t>(std::max(kMinTransferTimeoutS, std::atoi(env))) * 1'000'000;
}

int Fail(const mc::Status& st, const char* what) { return mc::p2p::LogFailure(what, st); }

class TransferEnginePy {
 public:
  ~TransferEnginePy() {
    py::gil_scoped_release release;
    engine_.reset();
  }

  int Initialize(const std::string& local_hostname, const std::string& metadata_server,
                 const std::string& protocol, const std::string& device_name) {
    if (engine_) return Fail(mc::Error(mc::ErrorCode::INVALID_PARAMS, "already initialized"), "initialize");
    mc::p2p::EngineOptions o;
    o.local_hostname = local_hostname;
    o.metadata_server = metadata_server;
    o.protocol = protocol;
    o.device_name = device_name;  // protocol rdma: "mlx5_0,mlx5_1"; empty: every NIC
    o.transfer_timeout_us = TransferTimeoutUs();
    // The cluster's shared secret, as every other mooncake process takes it:
    // the rpc port then answers only peers that prove they hold it.
    if (const char* token = std::getenv("MOONCAKE_AUTH_TOKEN")) o.auth_token = token;
    // MC_TE_SAME_HOST=0: peers on this host over TCP too (benchmarks, tests).
    if (const char* same = std::getenv("MC_TE_SAME_HOST")) o.same_host = std::string(same) != "0";
    py::gil_scoped_release release;
    auto e = mc::p2p::TransferEngine::Start(o);
    if (!e.ok()) return Fail(e.status(), "initialize");
    engine_ = std::move(e.value());
    return 0;
  }

  int GetRpcPort() const { return engine_ ? engine_->rpc_port() : -1; }

  int RegisterMemory(uintptr_t addr, size_t capacity, const std::string&) {
    if (!engine_) return NotReady("register_memory");
    mc::Status st = engine_->RegisterMemory(addr, capacity);
    return st.ok() ? 0 : Fail(st, "register_memory");
  }
  int UnregisterMemory(uintptr_t addr) {
    if (!engine_) return NotReady("unregister_memory");
    mc::Status st = engine_->UnregisterMemory(addr);
    return st.ok() ? 0 : Fail(st, "unregister_memory");
  }
  int BatchRegisterMemory(const std::vector<uintptr_t>& addrs, const std::vector<size_t>& caps,
                          const std::string& location) {
    if (addrs.size() != caps.size()) return Mismatch("batch_register_memory");
    for (size_t i = 0; i < addrs.size(); ++i) {
      if (RegisterMemory(addrs[i], caps[i], location) != 0) {
        for (size_t j = 0; j < i; ++j) (void)UnregisterMemory(addrs[j]);
        return -1;
      }
    }
    return 0;
  }
  int BatchUnregisterMemory(const std::vector<uintptr_t>& addrs) {
    int rc = 0;
    for (uintptr_t a : addrs) rc = UnregisterMemory(a) == 0 ? rc : -1;
    return rc;
  }

  int TransferSync(const std::string& target, uintptr_t buffer, uintptr_t peer, size_t length,
                   TransferOpcode op, const py::object&, const std::string&) {
    return BatchTransferSync(target, {buffer}, {peer}, {length}, op, py::none(), "");
  }
  int BatchTransferSync(const std::string& target, const std::vector<uintptr_t>& buffers,
                        const std::vector<uintptr_t>& peers, const std::vector<size_t>& lengths,
                        TransferOpcode op, const py::object&, const std::string&) {
    if (!engine_) return NotReady("transfer");
    auto reqs = Requests(buffers, peers, lengths);
    if (!reqs) return Mismatch("transfer");
    py::gil_scoped_release release;
    mc::Status st = engine_->Transfer(target, Kind(op), *reqs);
    return st.ok() ? 0 : Fail(st, "transfer");
  }
  uint64_t BatchTransferAsync(const std::string& target, const std::vector<uintptr_t>& buffers,
                              const std::vector<uintptr_t>& peers,
                              const std::vector<size_t>& lengths, TransferOpcode op,
                              const std::string&) {
    if (!engine_) return NotReady("submit"), 0;
    auto reqs = Requests(buffers, peers, lengths);
    if (!reqs) return Mismatch("submit"), 0;
    py::gil_scoped_release release;
    auto id = engine_->Submit(target, Kind(op), std::move(*reqs));
    if (!id.ok()) return Fail(id.status(), "submit"), 0;
    return id.value();
  }
  int GetBatchTransferStatus(const std::vector<uint64_t>& ids) {
    if (!engine_) return NotReady("get_batch_transfer_status");
    py::gil_scoped_release release;
    mc::Status st = engine_->Wait(ids);
    return st.ok() ? 0 : Fail(st, "get_batch_transfer_status");
  }
  int TransferCheckStatus(uint64_t id) {
    if (!engine_) return NotReady("transfer_check_status");
    auto state = engine_->Poll(id);
    if (!state.ok()) return Fail(state.status(), "transfer_check_status");
    switch (state.value()) {
      case BatchState::kCompleted: return 1;
      case BatchState::kFailed: return -1;
      case BatchState::kPending: return 0;
    }
    return -1;
  }

  uintptr_t AllocateManagedBuffer(size_t length) {
    if (!engine_) return 0;
    auto addr = engine_->AllocateManaged(length);
    if (!addr.ok()) return Fail(addr.status(), "allocate_managed_buffer"), 0;
    return addr.value();
  }
  int FreeManagedBuffer(uintptr_t addr, size_t) {
    if (!engine_) return NotReady("free_managed_buffer");
    mc::Status st = engine_->FreeManaged(addr);
    return st.ok() ? 0 : Fail(st, "free_managed_buffer");
  }
  // Ours, not the reference's: {"shm"|"tcp": {"requests": n, "bytes": n}},
  // which path moved this engine's transfers; "shm" also says how many
  // requests went by a mapped memfd and how many by process_vm_*.
  py::dict GetTransferPathStats() const {
    py::dict out;
    if (!engine_) return out;
    for (const auto& [name, c] : engine_->path_stats()) {
      py::dict d;
      d["requests"] = c.requests;
      d["bytes"] = c.bytes;
      if (name == "shm") {
        const auto local = engine_->same_host_stats();
        d["mapped_requests"] = local.mapped_requests;
        d["process_vm_requests"] = local.process_vm_requests;
      }
      out[py::str(name)] = d;
    }
    return out;
  }

 private:
  static int NotReady(const char* what) {
    return Fail(mc::Error(mc::ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "call initialize() first"), what);
  }
  static int Mismatch(const char* what) {
    return Fail(mc::Error(mc::ErrorCode::INVALID_PARAMS,
                          "buffers, peer_buffer_addresses and lengths differ in size"),
                what);
  }
  static std::optional<std::vector<TransferRequest>> Requests(const std::vector<uintptr_t>& buffers,
                                                              const std::vector<uintptr_t>& peers,
                                                              const std::vector<size_t>& lengths) {
    if (buffers.size() != peers.size() || buffers.size() != lengths.size()) return std::nullopt;
    std::vector<TransferRequest> reqs(buffers.size());
    for (size_t i = 0; i < reqs.size(); ++i) reqs[i] = {buffers[i], peers[i], lengths[i]};
    return reqs;
  }

  std::unique_ptr<mc::p2p::TransferEngine> engine_;
};

int WriteBytesToBuffer(TransferEnginePy&, uintptr_t dest, const py::bytes& src, size_t length) {
  const std::string_view data = src;
  if (length > data.size()) return -1;
  std::memcpy(reinterpret_cast<void*>(dest), data.data(), length);
  return 0;
}

py::bytes ReadBytesFromBuffer(TransferEnginePy&, uintptr_t source, size_t length) {
  return py::bytes(reinterpret_cast<const char*>(source), length);
}

}  // namespace
}  // namespace mooncake_py

PYBIND11_MODULE(engine, m) {
  using mooncake_py::TransferEnginePy;
  using mooncake_py::TransferOpcode;
  m.doc() = "mooncake.engine: peer-to-peer transfers between registered memory (TransferEngine)";
  for (const char* flag : {"SUPPORT_EFA", "SUPPORT_HIP", "SUPPORT_MNNVL", "SUPPORT_MUSA",
                           "SUPPORT_INTRA_NVLINK", "SUPPORT_CUDA"}) {
    m.attr(flag) = false;
  }
  py::enum_<TransferOpcode> opcode(m, "TransferOpcode", py::arithmetic());
  opcode.value("Read", TransferOpcode::kRead).value("Write", TransferOpcode::kWrite).export_values();

  py::class_<TransferEnginePy> c(m, "TransferEngine");
  c.def(py::init<>())
      .def("initialize", &TransferEnginePy::Initialize, py::arg("local_hostname"),
           py::arg("metadata_server"), py::arg("protocol"), py::arg("device_name"))
      .def("get_rpc_port", &TransferEnginePy::GetRpcPort)
      .def("allocate_managed_buffer", &TransferEnginePy::AllocateManagedBuffer, py::arg("length"))
      .def("free_managed_buffer", &TransferEnginePy::FreeManagedBuffer, py::arg("buffer"),
           py::arg("length"))
      .def("get_transfer_path_stats", &TransferEnginePy::GetTransferPathStats)
      .def("register_memory", &TransferEnginePy::RegisterMemory, py::arg("buffer_addr"),
           py::arg("capacity"), py::arg("location") = "*")
      .def("unregister_memory", &TransferEnginePy::UnregisterMemory, py::arg("buffer_addr"))
      .def("batch_register_memory", &TransferEnginePy::BatchRegisterMemory,
           py::arg("buffer_addresses"), py::arg("capacities"), py::arg("location") = "*")
      .def("batch_unregister_memory", &TransferEnginePy::BatchUnregisterMemory,
           py::arg("buffer_addresses"))
      .def("transfer_sync", &TransferEnginePy::TransferSync, py::arg("target_hostname"),
           py::arg("buffer"), py::arg("peer_buffer_address"), py::arg("length"),
           py::arg("opcode"), py::arg("notify") = py::none(), py::arg("transport_hint") = "")
      .def("batch_transfer_sync", &TransferEnginePy::BatchTransferSync,
           py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
           py::arg("lengths"), py::arg("opcode"), py::arg("notify") = py::none(),
           py::arg("transport_hint") = "")
      .def("batch_transfer_async", &TransferEnginePy::BatchTransferAsync,
           py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
           py::arg("lengths"), py::arg("opcode"), py::arg("transport_hint") = "")
      .def("get_batch_transfer_status", &TransferEnginePy::GetBatchTransferStatus,
           py::arg("batch_ids"))
      .def("transfer_check_status", &TransferEnginePy::TransferCheckStatus, py::arg("batch_id"))
      .def("write_bytes_to_buffer", &mooncake_py::WriteBytesToBuffer, py::arg("dest_address"),
           py::arg("src_ptr"), py::arg("length"))
      .def("read_bytes_from_buffer", &mooncake_py::ReadBytesFromBuffer,
           py::arg("source_address"), py::arg("length"));
  // The directional forms: the same calls with the opcode fixed.
  using Addrs = const std::vector<uintptr_t>&;
  using Lens = const std::vector<size_t>&;
  for (auto [suffix, op] : {std::pair{"write", TransferOpcode::kWrite},
                            std::pair{"read", TransferOpcode::kRead}}) {
    const std::string s(suffix);
    c.def(("transfer_sync_" + s).c_str(),
          [op](TransferEnginePy& e, const std::string& t, uintptr_t b, uintptr_t p, size_t n,
               const std::string& hint) { return e.TransferSync(t, b, p, n, op, py::none(), hint); },
          py::arg("target_hostname"), py::arg("buffer"), py::arg("peer_buffer_address"),
          py::arg("length"), py::arg("transport_hint") = "");
    c.def(("batch_transfer_sync_" + s).c_str(),
          [op](TransferEnginePy& e, const std::string& t, Addrs b, Addrs p, Lens n,
               const std::string& hint) {
            return e.BatchTransferSync(t, b, p, n, op, py::none(), hint);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("transport_hint") = "");
    c.def(("batch_transfer_async_" + s).c_str(),
          [op](TransferEnginePy& e, const std::string& t, Addrs b, Addrs p, Lens n,
               const std::string& hint) { return e.BatchTransferAsync(t, b, p, n, op, hint); },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("transport_hint") = "");
  }
  c.def("transfer_submit_write",
        [](TransferEnginePy& e, const std::string& t, uintptr_t b, uintptr_t p, size_t n,
           const std::string& hint) {
          return e.BatchTransferAsync(t, {b}, {p}, {n}, TransferOpcode::kWrite, hint);
        },
        py::arg("target_hostname"), py::arg("buffer"), py::arg("peer_buffer_address"),
        py::arg("length"), py::arg("transport_hint") = "");
  c.attr("TransferOpcode") = opcode;
}
