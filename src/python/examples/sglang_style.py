#!/usr/bin/env python3
"""How SGLang's HiCache mooncake backend uses mooncake.store.

Start a cluster first (README quick start), then:
  MOONCAKE_MASTER=127.0.0.1:50051 MOONCAKE_GLOBAL_SEGMENT_SIZE=512mb \
    python3 sglang_style.py
SGLang configures through MOONCAKE_* variables, warms up with one put/get,
registers its host KV pool and moves pages as batches of *_k / *_v keys.
"""
import ctypes
import os

from mooncake.store import MooncakeDistributedStore

store = MooncakeDistributedStore()
rc = store.setup("127.0.0.1",
                 os.environ.get("MOONCAKE_TE_META_DATA_SERVER", "http://127.0.0.1:8080/metadata"),
                 os.environ.get("MOONCAKE_GLOBAL_SEGMENT_SIZE", "512mb"), "16mb",
                 os.environ.get("MOONCAKE_PROTOCOL", "tcp"), os.environ.get("MOONCAKE_DEVICE", ""),
                 os.environ.get("MOONCAKE_MASTER", "127.0.0.1:50051"))
assert rc == 0, f"setup failed: {rc}"

warm = "sglang_warmup_key"                    # the warm-up SGLang does
if store.is_exist(warm) != 1:
    store.put(warm, b"x" * 4096)
assert store.get(warm) == b"x" * 4096

page, pages = 4096, 32
pool = (ctypes.c_ubyte * (page * pages * 2))()  # host KV pool: K and V pages
base = ctypes.addressof(pool)
store.register_buffer(base, page * pages * 2)
for i in range(0, page * pages * 2, 512):
    pool[i] = (i // 512) % 256

hashes = [f"{h:016x}" for h in range(pages)]
keys = [f"{h}_0_k" for h in hashes] + [f"{h}_0_v" for h in hashes]
ptrs = [base + i * page for i in range(len(keys))]
exist = store.batch_is_exist(keys)            # 1 / 0 / negative per key
todo = [i for i, e in enumerate(exist) if e != 1]
res = store.batch_put_from([keys[i] for i in todo], [ptrs[i] for i in todo], [page] * len(todo))
assert all(r == 0 for r in res), res

ctypes.memset(base, 0, page * pages * 2)
got = store.batch_get_into(keys, ptrs, [page] * len(keys))
assert got == [page] * len(keys), got
assert all(pool[i] == (i // 512) % 256 for i in range(0, page * pages * 2, 512))
print("sglang-style: wrote and read", len(keys), "pages")
store.remove_all()
store.close()
