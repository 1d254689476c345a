// Queries and removal, replica descriptors, and the segments this process
// serves (mount_segment and the like), as the reference's methods.
#include "store_py.h"
#include "store_py_types.h"

namespace mooncake_py {

namespace {

using mooncake::Store;

std::vector<ReplicaDescriptor> ReplicaDesc(Store& s, const std::string& key) {
  std::vector<mooncake::ReplicaInfo> infos;
  std::vector<ReplicaDescriptor> out;
  if (s.GetReplicaDesc(key, &infos) != mooncake::kOk) return out;
  for (const auto& r : infos) out.push_back(ToDescriptor(r));
  return out;
}

// {"ret": code, "segment_ids": [...]} and, for an allocation,
// "allocated_size": the reference's dict answers.
py::dict SegmentAnswer(int ret, const std::vector<std::string>& ids) {
  py::dict d;
  d["ret"] = ret;
  d["segment_ids"] = py::cast(ids);
  return d;
}

void DefineSegmentMethods(StoreClass& c) {
  // A file or device region as a segment: not built (segments are memory
  // this process allocates); NOT_SUPPORTED, nothing mounted.
  c.def("mount_segment", [](Store&, const std::string& path, size_t, size_t, const std::string&,
                            const std::string&) {
     if (path.empty()) return SegmentAnswer(mooncake::kInvalidParams, {});
     return SegmentAnswer(mooncake::kNotSupported, {});
   }, py::arg("path"), py::arg("size"), py::arg("offset") = 0, py::arg("protocol") = "tcp",
     py::arg("location") = "")
      .def("allocate_and_mount_segment", [](Store& s, size_t size, const std::string& protocol,
                                            const std::string& /*location*/) {
        std::vector<std::string> ids;
        size_t allocated = 0;
        int ret;
        {
          py::gil_scoped_release release;
          ret = s.AllocateAndMountSegment(size, protocol, &ids, &allocated);
        }
        py::dict d = SegmentAnswer(ret, ids);
        d["allocated_size"] = allocated;
        return d;
      }, py::arg("size"), py::arg("protocol") = "tcp", py::arg("location") = "")
      // The memory of a segment this process allocated is freed when it is
      // unmounted, so both calls do the same here.
      .def("unmount_segment", &Store::UnmountSegment, py::arg("segment_ids"),
           py::arg("grace_period_seconds") = 0, py::call_guard<py::gil_scoped_release>())
      .def("unmount_and_free_segment", &Store::UnmountSegment, py::arg("segment_ids"),
           py::arg("grace_period_seconds") = 0, py::call_guard<py::gil_scoped_release>())
      // The disk half of this process's segments (mooncake/client.h).
      .def("unmount_local_disk_segment", &Store::UnmountLocalDiskSegment,
           py::arg("grace_period_seconds") = 0, py::call_guard<py::gil_scoped_release>())
      .def("get_offload_rpc_read_count", [](Store& s) {
        return static_cast<int64_t>(s.OffloadReadCount());
      }, py::call_guard<py::gil_scoped_release>());
}

}  // namespace

void DefineQueryMethods(StoreClass& c) {
  using GilFree = py::call_guard<py::gil_scoped_release>;
  c.def("is_exist", &Store::IsExist, py::arg("key"), GilFree())
      .def("batch_is_exist", &Store::BatchIsExist, py::arg("keys"), GilFree())
      .def("get_size", &Store::GetSize, py::arg("key"), GilFree())
      .def("remove", &Store::Remove, py::arg("key"), py::arg("force") = false, GilFree())
      .def("batch_remove", &Store::BatchRemove, py::arg("keys"), py::arg("force") = false, GilFree())
      .def("remove_all", &Store::RemoveAll, py::arg("force") = false, GilFree())
      .def("get_replica_desc", &ReplicaDesc, py::arg("key"), GilFree())
      // Keys with no object are left out, as the reference does.
      .def("batch_get_replica_desc", [](Store& s, const std::vector<std::string>& keys) {
        std::map<std::string, std::vector<ReplicaDescriptor>> out;
        for (const auto& k : keys) {
          auto d = ReplicaDesc(s, k);
          if (!d.empty()) out[k] = std::move(d);
        }
        return out;
      }, py::arg("keys"), GilFree());
  DefineSegmentMethods(c);
}

}  // namespace mooncake_py
