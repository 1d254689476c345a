// mooncake._store: upserts and replica operations (the reference's upsert,
// upsert_parts, upsert_batch, upsert_from, batch_upsert_from,
// create_copy_task, create_move_task, query_task, batch_replica_clear,
// remove_by_regex) and their types TaskType, TaskStatus, QueryTaskResponse.
// Names, keywords, defaults and return shapes as the reference release's.
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "store_py.h"

namespace mooncake_py {

namespace {

using mooncake::ReplicateConfig;
using mooncake::Store;
using GilFree = py::call_guard<py::gil_scoped_release>;

// The reference's UUID: a (first, second) pair, a tuple in Python.
using Uuid = std::pair<uint64_t, uint64_t>;
Uuid ToUuid(const Store::TaskId& t) { return {t.first, t.second}; }

// Numbered as the reference's enums (TaskStatus: FAILED 2, SUCCESS 3).
enum class TaskType : int { kReplicaCopy = 0, kReplicaMove = 1 };
enum class TaskStatus : int { kPending = 0, kProcessing = 1, kFailed = 2, kSuccess = 3 };

struct QueryTaskResponse {
  Uuid id;
  TaskType type = TaskType::kReplicaCopy;
  TaskStatus status = TaskStatus::kPending;
  int64_t created_at_ms_epoch = 0;
  int64_t last_updated_at_ms_epoch = 0;
  Uuid assigned_client;
  std::string message;
};

std::string UuidText(const Uuid& u) {
  return "(" + std::to_string(u.first) + ", " + std::to_string(u.second) + ")";
}

void DefineTaskTypes(py::module_& m) {
  py::enum_<TaskType>(m, "TaskType")
      .value("REPLICA_COPY", TaskType::kReplicaCopy)
      .value("REPLICA_MOVE", TaskType::kReplicaMove)
      .export_values();
  py::enum_<TaskStatus>(m, "TaskStatus")
      .value("PENDING", TaskStatus::kPending)
      .value("PROCESSING", TaskStatus::kProcessing)
      .value("SUCCESS", TaskStatus::kSuccess)
      .value("FAILED", TaskStatus::kFailed)
      .export_values();
  py::class_<QueryTaskResponse>(m, "QueryTaskResponse",
                                "Response structure for QueryTask operation.")
      .def(py::init<>())
      .def_readonly("id", &QueryTaskResponse::id)
      .def_readonly("type", &QueryTaskResponse::type)
      .def_readonly("status", &QueryTaskResponse::status)
      .def_readonly("created_at_ms_epoch", &QueryTaskResponse::created_at_ms_epoch)
      .def_readonly("last_updated_at_ms_epoch", &QueryTaskResponse::last_updated_at_ms_epoch)
      .def_readonly("assigned_client", &QueryTaskResponse::assigned_client)
      .def_readonly("message", &QueryTaskResponse::message)
      .def("__repr__", [](const QueryTaskResponse& r) {
        return "QueryTaskResponse(id=" + UuidText(r.id) +
               ", type=" + std::to_string(static_cast<int>(r.type)) +
               ", status=" + std::to_string(static_cast<int>(r.status)) +
               ", created_at=" + std::to_string(r.created_at_ms_epoch) +
               ", last_updated_at=" + std::to_string(r.last_updated_at_ms_epoch) +
               ", assigned_client=" + UuidText(r.assigned_client) + ", message=\"" + r.message +
               "\")";
      });
}

// Views of the objects' bytes, alive while the call runs without the GIL.
struct Views {
  std::vector<std::unique_ptr<ReadView>> views;
  std::vector<std::span<const uint8_t>> spans;
  void Add(const py::handle& obj) {
    views.push_back(std::make_unique<ReadView>(obj));
    spans.push_back(views.back()->span());
  }
};

void DefineUpserts(StoreClass& c) {
  c.def("upsert", [](Store& s, const std::string& key, const py::object& value,
                     const ReplicateConfig& config) {
     ReadView v(value);
     py::gil_scoped_release release;
     return s.Upsert(key, v.span(), config);
   }, py::arg("key"), py::arg("value"), py::arg("config") = ReplicateConfig{},
     "Upsert raw bytes into the store (insert or update)")
      .def("upsert_parts", [](Store& s, const std::string& key, const py::args& parts,
                              const ReplicateConfig& config) {
        Views v;
        for (const auto& p : parts) {
          // As the reference: each part a 1-D buffer of bytes.
          py::buffer_info info = py::reinterpret_borrow<py::buffer>(p).request(false);
          if (info.ndim != 1 || info.itemsize != 1)
            throw std::runtime_error("parts must be 1-D bytes-like");
          v.Add(p);
        }
        py::gil_scoped_release release;
        return s.UpsertParts(key, v.spans, config);
      }, py::arg("key"), py::arg("config") = ReplicateConfig{},
         "Upsert multiple byte parts as a single object (insert or update)")
      .def("upsert_batch", [](Store& s, const std::vector<std::string>& keys,
                              const std::vector<py::object>& values, const ReplicateConfig& config) {
        Views v;
        for (const auto& value : values) v.Add(value);
        py::gil_scoped_release release;
        return s.UpsertBatch(keys, v.spans, config);
      }, py::arg("keys"), py::arg("values"), py::arg("config") = ReplicateConfig{},
         "Batch upsert raw bytes for multiple keys (insert or update)")
      .def("upsert_from", [](Store& s, const std::string& key, uintptr_t ptr, size_t size,
                             const ReplicateConfig& config) {
        return s.UpsertFrom(key, reinterpret_cast<const void*>(ptr), size, config);
      }, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
         py::arg("config") = ReplicateConfig{}, GilFree(),
         "Upsert object data directly from a pre-allocated buffer")
      .def("batch_upsert_from", [](Store& s, const std::vector<std::string>& keys,
                                   const std::vector<uintptr_t>& ptrs,
                                   const std::vector<size_t>& sizes, const ReplicateConfig& config) {
        return s.BatchUpsertFrom(keys, Ptrs(ptrs), sizes, config);
      }, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"),
         py::arg("config") = ReplicateConfig{}, GilFree(),
         "Upsert object data directly from pre-allocated buffers for multiple keys");
}

void DefineTasks(StoreClass& c) {
  c.def("create_copy_task", [](Store& s, const std::string& key,
                               const std::vector<std::string>& targets) {
     Store::TaskId id;
     int code;
     {
       py::gil_scoped_release release;
       code = s.CreateCopyTask(key, targets, &id);
     }
     return py::make_tuple(ToUuid(id), code);
   }, py::arg("key"), py::arg("targets"),
     "Copy an object to target segments; returns (task id, 0) or ((0, 0), error code)")
      .def("create_move_task", [](Store& s, const std::string& key, const std::string& source,
                                  const std::string& target) {
        Store::TaskId id;
        int code;
        {
          py::gil_scoped_release release;
          code = s.CreateMoveTask(key, source, target, &id);
        }
        return py::make_tuple(ToUuid(id), code);
      }, py::arg("key"), py::arg("source"), py::arg("target"),
         "Move an object from source segment to target segment; returns (task id, code)")
      .def("query_task", [](Store& s, const Uuid& task_id) {
        Store::TaskInfo info;
        int code;
        {
          py::gil_scoped_release release;
          code = s.QueryTask({task_id.first, task_id.second}, &info);
        }
        if (code != 0) return py::make_tuple(py::none(), code);
        QueryTaskResponse r{ToUuid(info.id),
                            static_cast<TaskType>(info.type),
                            static_cast<TaskStatus>(info.status),
                            info.created_at_ms_epoch,
                            info.last_updated_at_ms_epoch,
                            ToUuid(info.assigned_client),
                            info.message};
        return py::make_tuple(py::cast(r), 0);
      }, py::arg("task_id"),
         "Query a task: (QueryTaskResponse, 0), or (None, error code)");
}

}  // namespace

void DefineOpsMethods(py::module_& m, StoreClass& c) {
  DefineTaskTypes(m);
  DefineUpserts(c);
  DefineTasks(c);
  c.def("batch_replica_clear", &Store::BatchReplicaClear, py::arg("keys"),
        py::arg("segment_name") = "", GilFree(),
        "Clear replicas for the given keys. Requires lease to be expired.")
      .def("remove_by_regex", &Store::RemoveByRegex, py::arg("regex_pattern"),
           py::arg("force") = false, GilFree(),
           "Removes objects whose keys match the regular expression; returns how many, "
           "or a negative error code");
}

}  // namespace mooncake_py
