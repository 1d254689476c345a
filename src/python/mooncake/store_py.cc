// mooncake._store: the Python binding of libmooncake (mooncake/client.h),
// re-exported as mooncake.store. Method names, argument names, defaults and
// return conventions are the reference Mooncake Store's, so an inference
// engine written for it runs unchanged (list in mooncake-python(3)).
//
// Every call releases the GIL while it talks to the cluster; arguments are
// converted (and Python type errors raised) before that, with the GIL held.
// The methods live in store_py_<theme>.cc (store_py.h lists them).
#include <mutex>
#include <set>

#include "store_py.h"

namespace mooncake_py {

namespace {

// Stores not closed by their owner are closed when the interpreter exits,
// so their segments leave the pool at once rather than after client_ttl.
std::mutex g_live_mu;
std::set<mooncake::Store*> g_live;

void CloseAllAtExit() {
  std::set<mooncake::Store*> live;
  {
    std::lock_guard lock(g_live_mu);
    live = g_live;
  }
  py::gil_scoped_release release;
  for (mooncake::Store* s : live) s->Close();
}

}  // namespace

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

}  // namespace mooncake_py

PYBIND11_MODULE(_store, m) {
  using namespace mooncake_py;
  using mooncake::Store;
  m.doc() = "mooncake.store: the mooncake client for inference engines (see mooncake-python(3))";
  DefineTypes(m);
  // The base is registered (not constructible) so the calls below, written
  // against Store, accept a MooncakeDistributedStore.
  py::class_<Store>(m, "_Store");
  StoreClass c(m, "MooncakeDistributedStore");
  c.def(py::init<>())
      .def("close", [](Store& s) {
        py::gil_scoped_release release;
        return s.Close();
      })
      .def("get_hostname", [](Store& s) { return s.GetHostname(); })
      .def("health_check", [](Store& s) {
        py::gil_scoped_release release;
        return s.HealthCheck();
      });
  DefineSetup(c);
  DefineBytesMethods(c);
  DefineZeroCopyMethods(c);
  DefineQueryMethods(c);
  DefineSessionMethods(c);
  DefineOpsMethods(m, c);
  DefineDummyMethods(m, c);
  py::module_::import("atexit").attr("register")(py::cpp_function(&CloseAllAtExit));
}
