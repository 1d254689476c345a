// Module-level names of mooncake.store: ReplicateConfig with the
// reference's fields and enums, the replica descriptors of
// get_replica_desc, BufferHandle, and the functions bind_to_numa_node,
// get_alloc_func_addr and get_free_func_addr.
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "store_py.h"
#include "store_py_types.h"

namespace mooncake_py {

namespace {

using mooncake::ObjectDataType;
using mooncake::ReplicateConfig;
using mooncake::SoftPinAction;

std::string Quoted(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", '" : "'") + v[i] + "'";
  return out + "]";
}

std::string Repr(const ReplicateConfig& c) {
  static const char* kActions[] = {"PRESERVE", "ENABLE", "DISABLE"};
  auto b = [](bool v) { return v ? "True" : "False"; };
  std::ostringstream o;
  o << "ReplicateConfig(replica_num=" << c.replica_num
    << ", nof_replica_num=" << c.nof_replica_num << ", dfs_replica_num=" << c.dfs_replica_num
    << ", with_soft_pin=" << b(c.with_soft_pin)
    << ", soft_pin_action=SoftPinAction." << kActions[static_cast<int>(c.soft_pin_action)]
    << ", soft_pin_ttl_ms="
    << (c.soft_pin_ttl_ms ? std::to_string(*c.soft_pin_ttl_ms) : std::string("None"))
    << ", with_hard_pin=" << b(c.with_hard_pin) << ", preferred_segment='"
    << c.preferred_segment << "', preferred_segments=" << Quoted(c.preferred_segments)
    << ", preferred_nof_segments=" << Quoted(c.preferred_nof_segments)
    << ", prefer_alloc_in_same_node=" << b(c.prefer_alloc_in_same_node)
    << ", data_type=" << static_cast<int>(c.data_type)
    << ", group_ids=" << (c.group_ids ? Quoted(*c.group_ids) : std::string("None")) << ")";
  return o.str();
}

void DefineReplicateConfig(py::module_& m) {
  py::enum_<ObjectDataType>(m, "ObjectDataType")
      .value("UNKNOWN", ObjectDataType::kUnknown)
      .value("KVCACHE", ObjectDataType::kKvCache)
      .value("TENSOR", ObjectDataType::kTensor)
      .value("WEIGHT", ObjectDataType::kWeight)
      .value("SAMPLE", ObjectDataType::kSample)
      .value("ACTIVATION", ObjectDataType::kActivation)
      .value("GRADIENT", ObjectDataType::kGradient)
      .value("OPTIMIZER_STATE", ObjectDataType::kOptimizerState)
      .value("METADATA", ObjectDataType::kMetadata)
      .value("GENERAL", ObjectDataType::kGeneral)
      .export_values();
  py::enum_<SoftPinAction>(m, "SoftPinAction")
      .value("PRESERVE", SoftPinAction::kPreserve)
      .value("ENABLE", SoftPinAction::kEnable)
      .value("DISABLE", SoftPinAction::kDisable);
  py::class_<ReplicateConfig>(m, "ReplicateConfig")
      .def(py::init<>())
      .def_readwrite("replica_num", &ReplicateConfig::replica_num)
      .def_readwrite("nof_replica_num", &ReplicateConfig::nof_replica_num)
      .def_readwrite("dfs_replica_num", &ReplicateConfig::dfs_replica_num)
      .def_readwrite("with_soft_pin", &ReplicateConfig::with_soft_pin)
      .def_readwrite("soft_pin_action", &ReplicateConfig::soft_pin_action)
      .def_readwrite("soft_pin_ttl_ms", &ReplicateConfig::soft_pin_ttl_ms)
      .def_readwrite("with_hard_pin", &ReplicateConfig::with_hard_pin)
      .def_readwrite("preferred_segment", &ReplicateConfig::preferred_segment)
      .def_readwrite("preferred_segments", &ReplicateConfig::preferred_segments)
      .def_readwrite("preferred_nof_segments", &ReplicateConfig::preferred_nof_segments)
      .def_readwrite("prefer_alloc_in_same_node", &ReplicateConfig::prefer_alloc_in_same_node)
      .def_readwrite("data_type", &ReplicateConfig::data_type)
      .def_readwrite("group_ids", &ReplicateConfig::group_ids)
      .def("__repr__", &Repr)
      .def("__str__", &Repr);
}

void DefineReplicaDescriptors(py::module_& m) {
  py::enum_<ReplicaStatus>(m, "ReplicaStatus")
      .value("UNDEFINED", ReplicaStatus::kUndefined)
      .value("INITIALIZED", ReplicaStatus::kInitialized)
      .value("PROCESSING", ReplicaStatus::kProcessing)
      .value("COMPLETE", ReplicaStatus::kComplete)
      .value("REMOVED", ReplicaStatus::kRemoved)
      .value("FAILED", ReplicaStatus::kFailed)
      .export_values();
  py::class_<BufferDescriptor>(m, "Descriptor")
      .def(py::init<>())
      .def_readwrite("size", &BufferDescriptor::size)
      .def_readwrite("buffer_address", &BufferDescriptor::buffer_address)
      .def_readwrite("transport_endpoint", &BufferDescriptor::transport_endpoint)
      .def_readwrite("segment_name", &BufferDescriptor::segment_name)
      .def("__repr__", [](const BufferDescriptor& d) {
        return "<Descriptor size=" + std::to_string(d.size) +
               " buffer_address=" + std::to_string(d.buffer_address) +
               " transport_endpoint=" + d.transport_endpoint + ">";
      });
  py::class_<MemoryDescriptor>(m, "MemoryDescriptor")
      .def_readwrite("buffer_descriptor", &MemoryDescriptor::buffer_descriptor)
      .def_readwrite("buffer_descriptors", &MemoryDescriptor::buffer_descriptors);
  py::class_<DiskDescriptor>(m, "DiskDescriptor")
      .def_readwrite("file_path", &DiskDescriptor::file_path)
      .def_readwrite("object_size", &DiskDescriptor::object_size);
  py::class_<ReplicaDescriptor>(m, "ReplicaDescriptor")
      .def_readonly("status", &ReplicaDescriptor::status)
      .def("is_memory_replica", [](const ReplicaDescriptor& r) { return !r.on_disk; })
      // The reference's DISK replicas live on a shared file system (none
      // here); a store's own disk tier is its LOCAL_DISK kind.
      .def("is_disk_replica", [](const ReplicaDescriptor&) { return false; })
      .def("is_local_disk_replica", [](const ReplicaDescriptor& r) { return r.on_disk; })
      .def("get_memory_descriptor",
           [](const ReplicaDescriptor& r) -> const MemoryDescriptor& {
             if (r.on_disk) throw py::value_error("a disk-tier replica has no memory descriptor");
             return r.memory;
           },
           py::return_value_policy::reference_internal)
      .def("get_disk_descriptor", [](const ReplicaDescriptor& r) -> DiskDescriptor {
        throw py::value_error(r.on_disk ? "a disk-tier (LOCAL_DISK) replica has no shared file "
                                          "path: its store serves it"
                                        : "not a disk replica");
      })
      .def("__repr__", [](const ReplicaDescriptor& r) {
        if (r.on_disk) return "<ReplicaDescriptor LOCAL_DISK size=" + std::to_string(r.disk_size) + ">";
        return "<ReplicaDescriptor MEMORY buffers=" +
               std::to_string(r.memory.buffer_descriptors.size()) + ">";
      });
}

void DefineBufferHandle(py::module_& m) {
  py::class_<BufferHandle>(m, "BufferHandle", py::buffer_protocol())
      .def("ptr", &BufferHandle::ptr)
      .def("size", &BufferHandle::size)
      .def("__len__", &BufferHandle::size)
      .def_buffer([](BufferHandle& b) {
        return py::buffer_info(b.data().data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {b.size()}, {1});
      });
}

// The CPUs of NUMA node `node` from sysfs; empty when there is no such node.
std::optional<cpu_set_t> NodeCpus(int node) {
  std::ifstream in("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  std::string list;
  if (node < 0 || !std::getline(in, list)) return std::nullopt;
  cpu_set_t set;
  CPU_ZERO(&set);
  std::stringstream ss(list);
  std::string range;
  while (std::getline(ss, range, ',')) {
    int lo = 0, hi = 0;
    if (std::sscanf(range.c_str(), "%d-%d", &lo, &hi) != 2) hi = lo = std::atoi(range.c_str());
    for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  }
  return set;
}

// As the reference: run this thread on the node's CPUs and prefer its
// memory; a node that cannot be used is a warning, never an exception.
void BindToNumaNode(int node) {
  auto cpus = NodeCpus(node);
  if (!cpus) {
    std::cerr << "mooncake: NUMA node " << node << " is not available; binding skipped\n";
    return;
  }
  if (sched_setaffinity(0, sizeof(*cpus), &*cpus) != 0) {
    std::cerr << "mooncake: cannot run on NUMA node " << node << "\n";
  }
  constexpr int kMpolPreferred = 1;
  unsigned long mask[16] = {};
  if (node < static_cast<int>(sizeof(mask) * 8)) {
    mask[node / 64] |= 1ul << (node % 64);
    (void)syscall(SYS_set_mempolicy, kMpolPreferred, mask, sizeof(mask) * 8);
  }
}

// get_alloc_func_addr / get_free_func_addr: C functions `void* (size_t)`
// and `void (void*)` handing out page-aligned memory (huge pages when the
// system has them), for callers that plug an allocator in by address.
std::mutex g_alloc_mu;
std::map<void*, size_t> g_allocations;

void* MooncakeHugepageAlloc(size_t size) {
  if (size == 0) return nullptr;
  constexpr size_t kHugePage = 2u << 20;
  const size_t len = (size + kHugePage - 1) / kHugePage * kHugePage;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                 -1, 0);
  if (p == MAP_FAILED) p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::lock_guard lock(g_alloc_mu);
  g_allocations[p] = len;
  return p;
}

void MooncakeHugepageFree(void* ptr) {
  size_t len = 0;
  {
    std::lock_guard lock(g_alloc_mu);
    auto it = g_allocations.find(ptr);
    if (it == g_allocations.end()) return;
    len = it->second;
    g_allocations.erase(it);
  }
  munmap(ptr, len);
}

}  // namespace

void DefineTypes(py::module_& m) {
  DefineReplicateConfig(m);
  DefineReplicaDescriptors(m);
  DefineBufferHandle(m);
  m.def("bind_to_numa_node", &BindToNumaNode, py::arg("node"),
        "Bind the current thread and memory allocation preference to the specified NUMA node");
  m.def("get_alloc_func_addr",
        [] { return reinterpret_cast<uintptr_t>(&MooncakeHugepageAlloc); });
  m.def("get_free_func_addr", [] { return reinterpret_cast<uintptr_t>(&MooncakeHugepageFree); });
}

}  // namespace mooncake_py
