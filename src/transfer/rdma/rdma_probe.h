// Discovery of RDMA devices through libibverbs. In the static binary the
// providers (mlx5, efa, ...) are linked in, since a static program cannot
// dlopen them. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace mc::transfer {

// Names of the RDMA devices on this host; empty if there are none.
// NOT_SUPPORTED when the kernel has no RDMA support at all (ENOSYS).
Result<std::vector<std::string>> ListRdmaDevices();

// The verbs providers linked into this binary ("mlx5,efa,..."), or
// "loaded at run time" when libibverbs is a shared library.
std::string RdmaProviders();

// Name of an rdma_cm event, to show librdmacm is linked and usable.
std::string RdmaCmEventName(int event);

}  // namespace mc::transfer
