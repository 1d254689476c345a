// Shared pieces of the mooncake._store binding (store_py*.cc): the Python
// class over mooncake::Store, buffer views and pointer conversions. Each
// store_py_<theme>.cc adds one theme's methods with a Define* function that
// PYBIND11_MODULE (store_py.cc) calls; a new theme adds a file and a call.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mooncake/client.h"

namespace mooncake_py {

namespace py = pybind11;

// The Store behind one Python MooncakeDistributedStore (store_py.cc):
// tracked so the interpreter's exit closes stores their owner did not.
class PyStore : public mooncake::Store {
 public:
  PyStore();
  ~PyStore();
};

using StoreClass = py::class_<PyStore, mooncake::Store>;

// A contiguous read-only view of any object with the buffer protocol
// (bytes, bytearray, memoryview, numpy arrays). Raises BufferError for a
// non-contiguous buffer and TypeError for an object without the protocol.
class ReadView {
 public:
  explicit ReadView(const py::handle& obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  }
  ~ReadView() { PyBuffer_Release(&view_); }
  ReadView(const ReadView&) = delete;
  ReadView& operator=(const ReadView&) = delete;
  std::span<const uint8_t> span() const {
    return {static_cast<const uint8_t*>(view_.buf), static_cast<size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
};

// The bytes of one object, owned here and exposed through the buffer
// protocol (get_buffer / batch_get_buffer): no copy into a Python bytes.
class BufferHandle {
 public:
  explicit BufferHandle(std::vector<uint8_t> data) : data_(std::move(data)) {}
  uintptr_t ptr() const { return reinterpret_cast<uintptr_t>(data_.data()); }
  size_t size() const { return data_.size(); }
  std::vector<uint8_t>& data() { return data_; }

 private:
  std::vector<uint8_t> data_;
};

inline std::vector<void*> Ptrs(const std::vector<uintptr_t>& p) {
  std::vector<void*> out;
  out.reserve(p.size());
  for (uintptr_t v : p) out.push_back(reinterpret_cast<void*>(v));
  return out;
}

inline std::vector<std::vector<void*>> PtrLists(const std::vector<std::vector<uintptr_t>>& p) {
  std::vector<std::vector<void*>> out;
  out.reserve(p.size());
  for (const auto& l : p) out.push_back(Ptrs(l));
  return out;
}

// Module-level types: ReplicateConfig and its enums, replica descriptors,
// BufferHandle, and the functions bind_to_numa_node, get_alloc_func_addr,
// get_free_func_addr (store_py_types.cc).
void DefineTypes(py::module_& m);
// setup() in the reference's two forms (store_py_setup.cc).
void DefineSetup(StoreClass& c);
// put/get of bytes and of registered memory (store_py_data.cc).
void DefineBytesMethods(StoreClass& c);
void DefineZeroCopyMethods(StoreClass& c);
// Queries, removal, replica descriptors and segments (store_py_query.cc).
void DefineQueryMethods(StoreClass& c);
// Ranged reads and put/get sessions (store_py_session.cc).
void DefineSessionMethods(StoreClass& c);
// Upserts and replica operations, with their module-level types TaskType,
// TaskStatus and QueryTaskResponse (store_py_ops.cc).
void DefineOpsMethods(py::module_& m, StoreClass& c);
// setup_dummy, init_all, alloc_from_mem_pool and MooncakeHostMemAllocator
// (store_py_dummy.cc).
void DefineDummyMethods(py::module_& m, StoreClass& c);

}  // namespace mooncake_py
