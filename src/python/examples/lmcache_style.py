#!/usr/bin/env python3
"""How LMCache's MooncakestoreConnector uses mooncake.store.

Start a cluster first (README quick start), then:
  MOONCAKE_CONFIG_PATH=src/python/examples/mooncake.json python3 lmcache_style.py
The engine reads mooncake.json, sets up with seven positional arguments,
registers its KV buffer once and moves chunks with put_from / batch_get_into,
keeping its own chunks on its own segment (preferred_segment).
"""
import ctypes
import json
import os

from mooncake.store import MooncakeDistributedStore, ReplicateConfig

cfg = json.load(open(os.environ.get("MOONCAKE_CONFIG_PATH", "mooncake.json")))
store = MooncakeDistributedStore()
rc = store.setup(cfg["local_hostname"], cfg["metadata_server"], cfg["global_segment_size"],
                 cfg["local_buffer_size"], cfg["protocol"], cfg.get("device_name", ""),
                 cfg["master_server_address"])
assert rc == 0, f"setup failed: {rc}"

chunk, n = 256 << 10, 8                       # 8 KV chunks of 256 KiB
kv = (ctypes.c_ubyte * (chunk * n))()         # the engine's KV buffer
base = ctypes.addressof(kv)
assert store.register_buffer(base, chunk * n) == 0
for i in range(chunk * n):
    kv[i] = i % 251

local = ReplicateConfig()
local.preferred_segment = store.get_hostname()  # keep our chunks on our segment
keys = [f"lmcache@demo@{i}" for i in range(n)]
for i, k in enumerate(keys):
    if store.is_exist(k) != 1:
        assert store.put_from(k, base + i * chunk, chunk, local) == 0

ctypes.memset(base, 0, chunk * n)             # "evicted" from GPU: read them back
got = store.batch_get_into(keys, [base + i * chunk for i in range(n)], [chunk] * n)
assert got == [chunk] * n, got
assert all(kv[i] == i % 251 for i in range(0, chunk * n, 4099))
print("lmcache-style: stored and read back", n, "chunks of", chunk, "bytes")
print("buffers without a copy:", [len(b) for b in store.batch_get_buffer(keys[:2])])
store.batch_remove(keys)
store.unregister_buffer(base)
store.close()
