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
