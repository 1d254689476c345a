// The dummy-client methods of MooncakeDistributedStore (setup_dummy,
// init_all, alloc_from_mem_pool) and MooncakeHostMemAllocator, with the
// reference's signatures and return conventions (mooncake-python(3),
// mooncake-client(1)).
#include <string>

#include "store_py.h"

namespace mooncake_py {

namespace {

using mooncake::Store;

// The reference's init_all buffer: 16 MiB of segment unless told.
constexpr size_t kInitAllSegmentBytes = 16u << 20;

// What Python sees of the process's host memory allocator.
struct HostMemAllocator {};

}  // namespace

void DefineDummyMethods(py::module_& m, StoreClass& c) {
  c.def(
       "setup_dummy",
       [](Store& s, size_t mem_pool_size, size_t local_buffer_size,
          const std::string& server_address) {
         py::gil_scoped_release release;
         return s.SetupDummy(mem_pool_size, local_buffer_size, server_address);
       },
       py::arg("mem_pool_size"), py::arg("local_buffer_size"), py::arg("server_address"),
       "Attach to the host's `mooncake client` at server_address (host:port) as a dummy "
       "client with a shared pool of mem_pool_size + local_buffer_size bytes; 0 or negative.")
      .def(
          "init_all",
          [](Store& s, const std::string& protocol, const std::string& device_name,
             size_t mount_segment_size) {
            py::gil_scoped_release release;
            // The reference's real client: setup with its own defaults, the
            // rest from MOONCAKE_CONFIG_PATH / MOONCAKE_* as setup() takes them.
            return s.Setup({{"protocol", protocol},
                            {"rdma_devices", device_name},
                            {"global_segment_size", std::to_string(mount_segment_size)}});
          },
          py::arg("protocol"), py::arg("device_name"),
          py::arg("mount_segment_size") = kInitAllSegmentBytes)
      .def(
          "alloc_from_mem_pool",
          [](Store& s, size_t size) {
            py::gil_scoped_release release;
            return s.AllocFromMemPool(size);
          },
          py::arg("size"),
          "Address of size bytes of the dummy's shared pool (zero copy for put_from / "
          "get_into); 0 when not a dummy or the pool is full.");

  py::class_<HostMemAllocator>(m, "MooncakeHostMemAllocator")
      .def(py::init<>())
      .def(
          "alloc",
          [](HostMemAllocator&, size_t size) {
            py::gil_scoped_release release;
            return reinterpret_cast<uintptr_t>(mooncake::HostMemAlloc(size));
          },
          py::arg("size"))
      .def(
          "free",
          [](HostMemAllocator&, uintptr_t ptr) {
            py::gil_scoped_release release;
            return mooncake::HostMemFree(reinterpret_cast<void*>(ptr));
          },
          py::arg("ptr"));
}

}  // namespace mooncake_py
