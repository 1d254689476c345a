"""mooncake.store: the mooncake client for inference engines.

A drop-in for the reference Mooncake Store's Python module: LMCache,
SGLang HiCache and vLLM do ``from mooncake.store import
MooncakeDistributedStore, ReplicateConfig`` and run unchanged. The API and
its return conventions are listed in mooncake-python(3).
"""
from mooncake._store import BufferHandle, MooncakeDistributedStore, ReplicateConfig

__all__ = ["BufferHandle", "MooncakeDistributedStore", "ReplicateConfig"]
