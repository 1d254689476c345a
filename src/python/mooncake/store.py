"""mooncake.store: the mooncake client for inference engines.

A drop-in for the reference Mooncake Store's Python module: LMCache,
SGLang HiCache and vLLM do ``from mooncake.store import
MooncakeDistributedStore, ReplicateConfig`` and run unchanged. The API and
its return conventions are listed in mooncake-python(3).
"""
from mooncake._store import (  # noqa: F401
    BufferHandle, Descriptor, DiskDescriptor, MemoryDescriptor, MooncakeDistributedStore,
    ObjectDataType, ReplicaDescriptor, ReplicaStatus, ReplicateConfig, SoftPinAction,
    bind_to_numa_node, get_alloc_func_addr, get_free_func_addr)
# The tensor methods (put_tensor, get_tensor_into, ...) are Python over the
# byte methods (mooncake/tensor_methods.py); torch is imported when one is
# first called, so this import works without it.
from mooncake import tensor_methods as _tensor_methods
from mooncake.tensor_parallel import ParallelAxis, ReadTarget, TensorParallelism  # noqa: F401

_tensor_methods.attach(MooncakeDistributedStore)
_tensor_metadata_size = _tensor_methods._tensor_metadata_size
_serialize_tensor = _tensor_methods._serialize_tensor
_deserialize_tensor = _tensor_methods._deserialize_tensor

__all__ = ["BufferHandle", "Descriptor", "DiskDescriptor", "MemoryDescriptor",
           "MooncakeDistributedStore", "ObjectDataType", "ReplicaDescriptor", "ReplicaStatus",
           "ReplicateConfig", "SoftPinAction", "bind_to_numa_node", "get_alloc_func_addr",
           "get_free_func_addr"]

# Copy/move tasks (query_task), with the enums' values at module level as
# the reference exports them.
# Dummy clients of `mooncake client` (mooncake-client(1)).
from mooncake._store import MooncakeHostMemAllocator  # noqa: E402

__all__ += ["MooncakeHostMemAllocator"]

from mooncake._store import (  # noqa: E402
    FAILED, PENDING, PROCESSING, REPLICA_COPY, REPLICA_MOVE, SUCCESS, QueryTaskResponse,
    TaskStatus, TaskType)

__all__ += ["QueryTaskResponse", "TaskStatus", "TaskType", "REPLICA_COPY", "REPLICA_MOVE",
            "PENDING", "PROCESSING", "SUCCESS", "FAILED", "ParallelAxis", "ReadTarget",
            "TensorParallelism"]
