// mooncake._store: the Python binding of libmooncake (mooncake/client.h),
// re-exported as mooncake.store. Method names, argument names, defaults and
// return conventions are the reference Mooncake Store's, so an inference
// engine written for it runs unchanged (list in mooncake-python(3)).
//
// Every call releases the GIL while it talks to the cluster; arguments are
// converted (and Python type errors raised) before that, with the GIL held.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "mooncake/client.h"
#include "store_py.h"

namespace mooncake_py {

using mooncake::ReplicateConfig;
using mooncake::Store;

// Stores not closed by their owner are closed when the interpreter exits,
// so their segments leave the pool at once rather than after client_ttl.
std::mutex g_live_mu;
std::set<Store*> g_live;

void CloseAllAtExit() {
  std::set<Store*> live;
  {
    std::lock_guard lock(g_live_mu);
    live = g_live;
  }
  py::gil_scoped_release release;
  for (Store* s : live) s->Close();
}

PyStore::PyStore() {
  std::lock_guard lock(g_live_mu);
  g_live.insert(this);
}

// Closing on destruction happens without the GIL, so other Python threads
// run while the segment is unmounted.
PyStore::~PyStore() {
  {
    std::lock_guard lock(g_live_mu);
    g_live.erase(this);
  }
  if (PyGILState_Check()) {
    py::gil_scoped_release release;
    Close();
  } else {
    Close();
  }
}

std::string SizeText(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) throw py::type_error("a size must be an int or a string");
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) || py::isinstance<py::str>(v)) {
    return py::str(v);
  }
  throw py::type_error("a size must be an int or a string such as \"4gb\"");
}

int SetupPositional(Store& s, const std::string& local_hostname,
                    const std::string& metadata_server, const py::object& global_segment_size,
                    const py::object& local_buffer_size, const std::string& protocol,
                    const std::string& rdma_devices, const std::string& master_server_addr) {
  mooncake::SetupConfig c{{"local_hostname", local_hostname},
                          {"metadata_server", metadata_server},
                          {"global_segment_size", SizeText(global_segment_size)},
                          {"local_buffer_size", SizeText(local_buffer_size)},
                          {"protocol", protocol},
                          {"rdma_devices", rdma_devices},
                          {"master_server_addr", master_server_addr}};
  py::gil_scoped_release release;
  return s.Setup(c);
}

int SetupDict(Store& s, const py::dict& config) {
  mooncake::SetupConfig c;
  for (auto item : config) {
    if (!py::isinstance<py::str>(item.first)) throw py::type_error("setup keys must be strings");
    const std::string key = py::str(item.first);
    const bool is_size = key == "global_segment_size" || key == "local_buffer_size";
    c[key] = is_size ? SizeText(item.second) : std::string(py::str(item.second));
  }
  py::gil_scoped_release release;
  return s.Setup(c);
}

py::object HandleOrNone(int64_t code, std::vector<uint8_t>& data) {
  if (code < 0) return py::none();
  return py::cast(std::make_unique<BufferHandle>(std::move(data)));
}

void DefineReplicateConfig(py::module_& m) {
  py::class_<ReplicateConfig>(m, "ReplicateConfig")
      .def(py::init<>())
      .def_readwrite("replica_num", &ReplicateConfig::replica_num)
      .def_readwrite("with_soft_pin", &ReplicateConfig::with_soft_pin)
      .def_readwrite("soft_pin_ttl_ms", &ReplicateConfig::soft_pin_ttl_ms)
      .def_readwrite("with_hard_pin", &ReplicateConfig::with_hard_pin)
      .def_readwrite("preferred_segment", &ReplicateConfig::preferred_segment)
      .def_readwrite("preferred_segments", &ReplicateConfig::preferred_segments)
      .def_readwrite("prefer_alloc_in_same_node", &ReplicateConfig::prefer_alloc_in_same_node)
      .def("__repr__", [](const ReplicateConfig& c) {
        std::string segs;
        for (const auto& s : c.preferred_segments) segs += (segs.empty() ? "" : ", ") + s;
        return "ReplicateConfig(replica_num=" + std::to_string(c.replica_num) +
               ", with_soft_pin=" + (c.with_soft_pin ? "True" : "False") +
               ", soft_pin_ttl_ms=" + std::to_string(c.soft_pin_ttl_ms) +
               ", with_hard_pin=" + (c.with_hard_pin ? "True" : "False") +
               ", preferred_segment='" + c.preferred_segment + "', preferred_segments=[" + segs +
               "], prefer_alloc_in_same_node=" + (c.prefer_alloc_in_same_node ? "True" : "False") +
               ")";
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

void DefineBytesMethods(py::class_<PyStore, Store>& c);
void DefineZeroCopyMethods(py::class_<PyStore, Store>& c);
void DefineQueryMethods(py::class_<PyStore, Store>& c);

}  // namespace mooncake_py

PYBIND11_MODULE(_store, m) {
  using namespace mooncake_py;
  m.doc() = "mooncake.store: the mooncake client for inference engines (see mooncake-python(3))";
  DefineReplicateConfig(m);
  DefineBufferHandle(m);
  // The base is registered (not constructible) so the calls below, written
  // against Store, accept a MooncakeDistributedStore.
  py::class_<Store>(m, "_Store");
  py::class_<PyStore, Store> c(m, "MooncakeDistributedStore");
  c.def(py::init<>())
      .def("setup", &SetupPositional, py::arg("local_hostname"), py::arg("metadata_server"),
           py::arg("global_segment_size") = 16 << 20, py::arg("local_buffer_size") = 16 << 20,
           py::arg("protocol") = "tcp", py::arg("rdma_devices") = "",
           py::arg("master_server_addr") = "127.0.0.1:50051")
      .def("setup", &SetupDict, py::arg("config"))
      .def("setup", [](Store& s) { return SetupDict(s, py::dict()); })
      .def("close", [](Store& s) {
        py::gil_scoped_release release;
        return s.Close();
      })
      .def("get_hostname", [](Store& s) { return s.GetHostname(); })
      .def("health_check", [](Store& s) {
        py::gil_scoped_release release;
        return s.HealthCheck();
      });
  DefineBytesMethods(c);
  DefineZeroCopyMethods(c);
  DefineQueryMethods(c);
  DefineOpsMethods(m, c);
  py::module_::import("atexit").attr("register")(py::cpp_function(&CloseAllAtExit));
}

namespace mooncake_py {

void DefineBytesMethods(py::class_<PyStore, Store>& c) {
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

void DefineZeroCopyMethods(py::class_<PyStore, Store>& c) {
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

void DefineQueryMethods(py::class_<PyStore, Store>& c) {
  using GilFree = py::call_guard<py::gil_scoped_release>;
  c.def("is_exist", &Store::IsExist, py::arg("key"), GilFree())
      .def("batch_is_exist", &Store::BatchIsExist, py::arg("keys"), GilFree())
      .def("get_size", &Store::GetSize, py::arg("key"), GilFree())
      .def("remove", &Store::Remove, py::arg("key"), py::arg("force") = false, GilFree())
      .def("batch_remove", &Store::BatchRemove, py::arg("keys"), py::arg("force") = false, GilFree())
      .def("remove_all", &Store::RemoveAll, py::arg("force") = false, GilFree());
}

}  // namespace mooncake_py
