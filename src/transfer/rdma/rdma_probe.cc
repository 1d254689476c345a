#include "transfer/rdma/rdma_probe.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstring>

namespace mc::transfer {

Result<std::vector<std::string>> ListRdmaDevices() {
  int num = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr) {
    int err = errno;
    if (err == ENOSYS) {
      return Error(ErrorCode::NOT_SUPPORTED, "no RDMA support in this kernel (ENOSYS)");
    }
    return Error(ErrorCode::INTERNAL_ERROR,
                 std::string("ibv_get_device_list failed: ") + std::strerror(err));
  }
  std::vector<std::string> names;
  for (int i = 0; i < num; ++i) names.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return names;
}

std::string RdmaProviders() {
#ifdef RDMA_STATIC_PROVIDERS
#define MC_STR2(...) #__VA_ARGS__
#define MC_STR(...) MC_STR2(__VA_ARGS__)
  return MC_STR(RDMA_STATIC_PROVIDERS) " (linked in)";
#else
  return "loaded at run time by the shared libibverbs";
#endif
}

std::string RdmaCmEventName(int event) {
  return rdma_event_str(static_cast<rdma_cm_event_type>(event));
}

}  // namespace mc::transfer
