// setup() in the reference's two forms: seven positional arguments and the
// release's keywords, or one dict with the same keys. Every argument's type
// is checked here, so a wrong one is a TypeError naming it; the values then
// go to Store::Setup as text (keys in mooncake/client.h), which logs once at
// INFO each keyword whose feature is not built yet.
#include <string>

#include "store_py.h"

namespace mooncake_py {

namespace {

using mooncake::SetupConfig;
using mooncake::Store;

// The reference's DEFAULT_CLIENT_HTTP_PORT.
constexpr int kDefaultClientHttpPort = 9300;

std::string TypeName(const py::handle& v) { return py::str(py::type::of(v).attr("__name__")); }

[[noreturn]] void WrongType(const char* name, const char* want, const py::handle& v) {
  throw py::type_error(std::string("setup(): ") + name + " must be " + want + ", not " +
                       TypeName(v));
}

std::string Str(const char* name, const py::handle& v) {
  if (!py::isinstance<py::str>(v)) WrongType(name, "a str", v);
  return py::str(v);
}

// Sizes: an int of bytes, or a string such as "4gb" (ours besides).
std::string Size(const char* name, const py::handle& v) {
  if (py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v)) {
    if (v.cast<py::int_>() < py::int_(0)) throw py::value_error(std::string("setup(): ") + name + " must not be negative");
    return py::str(v);
  }
  if (py::isinstance<py::str>(v)) return py::str(v);
  WrongType(name, "an int or a str such as \"4gb\"", v);
}

std::string Bool(const char* name, const py::handle& v) {
  if (!py::isinstance<py::bool_>(v)) WrongType(name, "a bool", v);
  return v.cast<bool>() ? "true" : "false";
}

std::string Port(const char* name, const py::handle& v) {
  if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v)) WrongType(name, "an int", v);
  const long port = v.cast<long>();
  if (port < 0 || port > 65535) throw py::value_error(std::string("setup(): ") + name + " must be 0..65535");
  return std::to_string(port);
}

int Run(Store& s, const SetupConfig& c) {
  py::gil_scoped_release release;
  return s.Setup(c);
}

int SetupPositional(Store& s, const py::object& local_hostname, const py::object& metadata_server,
                    const py::object& global_segment_size, const py::object& local_buffer_size,
                    const py::object& protocol, const py::object& rdma_devices,
                    const py::object& master_server_addr, const py::object& engine,
                    const py::object& enable_ssd_offload, const py::object& ssd_offload_path,
                    const py::object& tenant_id, const py::object& enable_client_http_server,
                    const py::object& client_http_port) {
  SetupConfig c{{"local_hostname", Str("local_hostname", local_hostname)},
                {"metadata_server", Str("metadata_server", metadata_server)},
                {"global_segment_size", Size("global_segment_size", global_segment_size)},
                {"local_buffer_size", Size("local_buffer_size", local_buffer_size)},
                {"protocol", Str("protocol", protocol)},
                {"rdma_devices", Str("rdma_devices", rdma_devices)},
                {"master_server_addr", Str("master_server_addr", master_server_addr)},
                {"enable_ssd_offload", Bool("enable_ssd_offload", enable_ssd_offload)},
                {"ssd_offload_path", Str("ssd_offload_path", ssd_offload_path)},
                {"tenant_id", Str("tenant_id", tenant_id)},
                {"enable_client_http_server",
                 Bool("enable_client_http_server", enable_client_http_server)},
                {"client_http_port", Port("client_http_port", client_http_port)}};
  // A reference TransferEngine to share: this store moves bytes itself.
  if (!engine.is_none()) c["engine"] = TypeName(engine);
  return Run(s, c);
}

// The dict form: the same keys, values checked as above; strings are also
// taken for sizes, flags and ports (as a mooncake.json gives them), and a
// key the reference does not know goes through unchecked (ours, such as
// auth_token or tls_ca).
int SetupDict(Store& s, const py::dict& config) {
  SetupConfig c;
  for (auto item : config) {
    if (!py::isinstance<py::str>(item.first)) {
      throw py::type_error("setup(): config keys must be str, not " + TypeName(item.first));
    }
    const std::string key = py::str(item.first);
    const py::handle v = item.second;
    const char* k = key.c_str();
    if (v.is_none()) continue;
    if (key == "engine") {
      c[key] = TypeName(v);
    } else if (key == "global_segment_size" || key == "local_buffer_size") {
      c[key] = Size(k, v);
    } else if (key == "enable_ssd_offload" || key == "enable_client_http_server") {
      c[key] = py::isinstance<py::str>(v) ? std::string(py::str(v)) : Bool(k, v);
    } else if (key == "client_http_port") {
      c[key] = py::isinstance<py::str>(v) ? std::string(py::str(v)) : Port(k, v);
    } else if (py::isinstance<py::str>(v) || py::isinstance<py::int_>(v) ||
               py::isinstance<py::float_>(v)) {
      c[key] = py::isinstance<py::bool_>(v) ? (v.cast<bool>() ? "true" : "false")
                                            : std::string(py::str(v));
    } else {
      WrongType(k, "a str, an int or a bool", v);
    }
  }
  return Run(s, c);
}

}  // namespace

void DefineSetup(StoreClass& c) {
  c.def("setup", &SetupPositional, py::arg("local_hostname"), py::arg("metadata_server"),
        py::arg("global_segment_size"), py::arg("local_buffer_size"), py::arg("protocol"),
        py::arg("rdma_devices"), py::arg("master_server_addr"), py::arg("engine") = py::none(),
        py::arg("enable_ssd_offload") = false, py::arg("ssd_offload_path") = "",
        py::arg("tenant_id") = "default", py::arg("enable_client_http_server") = false,
        py::arg("client_http_port") = kDefaultClientHttpPort)
      .def("setup", &SetupDict, py::arg("config"),
           "Setup the store with a configuration dictionary (the keys of the positional form).")
      // Ours: everything from MOONCAKE_CONFIG_PATH and the MOONCAKE_* environment.
      .def("setup", [](Store& s) { return Run(s, {}); });
}

}  // namespace mooncake_py
