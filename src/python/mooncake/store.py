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

__all__ = ["BufferHandle", "Descriptor", "DiskDescriptor", "MemoryDescriptor",
           "MooncakeDistributedStore", "ObjectDataType", "ReplicaDescriptor", "ReplicaStatus",
           "ReplicateConfig", "SoftPinAction", "bind_to_numa_node", "get_alloc_func_addr",
           "get_free_func_addr"]

# Copy/move tasks (query_task), with the enums' values at module level as
# the reference exports them.
from mooncake._store import (  # noqa: E402
    FAILED, PENDING, PROCESSING, REPLICA_COPY, REPLICA_MOVE, SUCCESS, QueryTaskResponse,
    TaskStatus, TaskType)

__all__ += ["QueryTaskResponse", "TaskStatus", "TaskType", "REPLICA_COPY", "REPLICA_MOVE",
            "PENDING", "PROCESSING", "SUCCESS", "FAILED"]
