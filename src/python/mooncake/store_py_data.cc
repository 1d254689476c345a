// put/get of Python bytes-like objects (copied through this process) and of
// registered memory named by address (zero copy), as the reference's.
// A put of a key that exists returns 0 and leaves the stored object as it
// was (mooncake-python(3), PUT SEMANTICS).
#include "store_py.h"

namespace mooncake_py {

namespace {

using mooncake::ReplicateConfig;
using mooncake::Store;

py::object HandleOrNone(int64_t code, std::vector<uint8_t>& data) {
  if (code < 0) return py::none();
  return py::cast(std::make_unique<BufferHandle>(std::move(data)));
}

}  // namespace

void DefineBytesMethods(StoreClass& c) {
  c.def("put", [](Store& s, const std::string& key, const py::object& value,
                  const ReplicateConfig& config) {
     ReadView v(value);
     py::gil_scoped_release release;
     return s.Put(key, v.span(), config);
   }, py::arg("key"), py::arg("value"), py::arg("config") = ReplicateConfig{})
      .def("put_parts", [](Store& s, const std::string& key, const py::args& parts,
                           const ReplicateConfig& config) {
        std::vector<std::unique_ptr<ReadView>> views;
        std::vector<std::span<const uint8_t>> spans;
        for (const auto& p : parts) {
          views.push_back(std::make_unique<ReadView>(p));
          spans.push_back(views.back()->span());
        }
        py::gil_scoped_release release;
        return s.PutParts(key, spans, config);
      }, py::arg("key"), py::arg("config") = ReplicateConfig{})
      .def("put_batch", [](Store& s, const std::vector<std::string>& keys,
                           const std::vector<py::object>& values, const ReplicateConfig& config) {
        std::vector<std::unique_ptr<ReadView>> views;
        std::vector<std::span<const uint8_t>> spans;
        for (const auto& v : values) {
          views.push_back(std::make_unique<ReadView>(v));
          spans.push_back(views.back()->span());
        }
        py::gil_scoped_release release;
        return s.PutBatch(keys, spans, config);
      }, py::arg("keys"), py::arg("values"), py::arg("config") = ReplicateConfig{})
      .def("get", [](Store& s, const std::string& key) {
        std::vector<uint8_t> data;
        int64_t n;
        {
          py::gil_scoped_release release;
          n = s.Get(key, &data);
        }
        if (n < 0) return py::bytes();
        return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
      }, py::arg("key"))
      .def("get_batch", [](Store& s, const std::vector<std::string>& keys) {
        std::vector<std::vector<uint8_t>> data;
        std::vector<int64_t> codes;
        {
          py::gil_scoped_release release;
          codes = s.BatchGet(keys, &data);
        }
        py::list out;
        for (size_t i = 0; i < keys.size(); ++i) {
          out.append(codes[i] < 0 ? py::bytes()
                                  : py::bytes(reinterpret_cast<const char*>(data[i].data()),
                                              data[i].size()));
        }
        return out;
      }, py::arg("keys"))
      .def("get_buffer", [](Store& s, const std::string& key) {
        std::vector<uint8_t> data;
        int64_t n;
        {
          py::gil_scoped_release release;
          n = s.Get(key, &data);
        }
        return HandleOrNone(n, data);
      }, py::arg("key"))
      .def("batch_get_buffer", [](Store& s, const std::vector<std::string>& keys) {
        std::vector<std::vector<uint8_t>> data;
        std::vector<int64_t> codes;
        {
          py::gil_scoped_release release;
          codes = s.BatchGet(keys, &data);
        }
        py::list out;
        for (size_t i = 0; i < keys.size(); ++i) out.append(HandleOrNone(codes[i], data[i]));
        return out;
      }, py::arg("keys"));
}

void DefineZeroCopyMethods(StoreClass& c) {
  using GilFree = py::call_guard<py::gil_scoped_release>;
  c.def("register_buffer", [](Store& s, uintptr_t ptr, size_t size) {
     return s.RegisterBuffer(reinterpret_cast<void*>(ptr), size);
   }, py::arg("buffer_ptr"), py::arg("size"), GilFree())
      .def("unregister_buffer", [](Store& s, uintptr_t ptr) {
        return s.UnregisterBuffer(reinterpret_cast<void*>(ptr));
      }, py::arg("buffer_ptr"), GilFree())
      .def("put_from", [](Store& s, const std::string& key, uintptr_t ptr, size_t size,
                          const ReplicateConfig& config) {
        return s.PutFrom(key, reinterpret_cast<const void*>(ptr), size, config);
      }, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
         py::arg("config") = ReplicateConfig{}, GilFree())
      .def("put_from_with_metadata", [](Store& s, const std::string& key, uintptr_t ptr,
                                        uintptr_t metadata_ptr, size_t size, size_t metadata_size,
                                        const ReplicateConfig& config) {
        return s.PutFromWithMetadata(key, reinterpret_cast<const void*>(ptr),
                                     reinterpret_cast<const void*>(metadata_ptr), size,
                                     metadata_size, config);
      }, py::arg("key"), py::arg("buffer_ptr"), py::arg("metadata_buffer_ptr"), py::arg("size"),
         py::arg("metadata_size"), py::arg("config") = ReplicateConfig{}, GilFree())
      .def("get_into", [](Store& s, const std::string& key, uintptr_t ptr, size_t size) {
        return s.GetInto(key, reinterpret_cast<void*>(ptr), size);
      }, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"), GilFree())
      .def("batch_put_from", [](Store& s, const std::vector<std::string>& keys,
                                const std::vector<uintptr_t>& ptrs, const std::vector<size_t>& sizes,
                                const ReplicateConfig& config) {
        return s.BatchPutFrom(keys, Ptrs(ptrs), sizes, config);
      }, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"),
         py::arg("config") = ReplicateConfig{}, GilFree())
      .def("batch_get_into", [](Store& s, const std::vector<std::string>& keys,
                                const std::vector<uintptr_t>& ptrs, const std::vector<size_t>& sizes) {
        return s.BatchGetInto(keys, Ptrs(ptrs), sizes);
      }, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"), GilFree())
      .def("batch_put_from_multi_buffers",
           [](Store& s, const std::vector<std::string>& keys,
              const std::vector<std::vector<uintptr_t>>& ptrs,
              const std::vector<std::vector<size_t>>& sizes, const ReplicateConfig& config) {
             return s.BatchPutFromMultiBuffers(keys, PtrLists(ptrs), sizes, config);
           }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("config") = ReplicateConfig{}, GilFree())
      .def("batch_get_into_multi_buffers",
           [](Store& s, const std::vector<std::string>& keys,
              const std::vector<std::vector<uintptr_t>>& ptrs,
              const std::vector<std::vector<size_t>>& sizes, bool /*prefer_alloc_in_same_node*/) {
             return s.BatchGetIntoMultiBuffers(keys, PtrLists(ptrs), sizes);
           }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("prefer_alloc_in_same_node") = false, GilFree());
}


}  // namespace mooncake_py
