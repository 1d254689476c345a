// Ranged reads (get_into_ranges) and the put/get sessions of the
// reference's newest code: one value per key, 0 / bytes moved / negative.
#include "store_py.h"

namespace mooncake_py {

using mooncake::ReplicateConfig;
using mooncake::Store;

void DefineSessionMethods(StoreClass& c) {
  using GilFree = py::call_guard<py::gil_scoped_release>;
  using SizeLists = std::vector<std::vector<size_t>>;
  using PtrLists2 = std::vector<std::vector<uintptr_t>>;
  c.def("get_into_ranges", [](Store& s, const std::vector<uintptr_t>& ptrs,
                              const std::vector<std::vector<std::string>>& all_keys,
                              const Store::Ranges3& dst, const Store::Ranges3& src,
                              const Store::Ranges3& sizes) {
     return s.GetIntoRanges(Ptrs(ptrs), all_keys, dst, src, sizes);
   }, py::arg("buffer_ptrs"), py::arg("all_keys"), py::arg("all_dst_offsets"),
     py::arg("all_src_offsets"), py::arg("all_sizes"), GilFree())
      .def("batch_put_session_start", &Store::PutSessionStart, py::arg("keys"), py::arg("sizes"),
           py::arg("config") = ReplicateConfig{}, GilFree())
      .def("batch_put_from_multi_buffer_ranges", [](Store& s, const std::vector<std::string>& keys,
                                                    const PtrLists2& ptrs, const SizeLists& sizes,
                                                    const SizeLists& dst_offsets) {
        return s.PutSessionWriteRanges(keys, PtrLists(ptrs), sizes, dst_offsets);
      }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
         py::arg("all_dst_offsets"), GilFree())
      .def("batch_put_session_end", &Store::PutSessionEnd, py::arg("keys"), GilFree())
      .def("batch_put_session_revoke", &Store::PutSessionRevoke, py::arg("keys"), GilFree())
      .def("batch_get_session_start", &Store::GetSessionStart, py::arg("keys"), GilFree())
      .def("batch_get_into_multi_buffer_ranges", [](Store& s, const std::vector<std::string>& keys,
                                                    const PtrLists2& ptrs, const SizeLists& sizes,
                                                    const SizeLists& src_offsets) {
        return s.GetSessionReadRanges(keys, PtrLists(ptrs), sizes, src_offsets);
      }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
         py::arg("all_src_offsets"), GilFree())
      .def("batch_get_session_end", &Store::GetSessionEnd, py::arg("keys"), GilFree());
}

}  // namespace mooncake_py
