"""The Python client's zero-copy calls over RDMA (run by guest_suite.py in the
guest): register_buffer, put_from and batch_get_into on a registered buffer,
with protocol rdma and shm off, bytes checked. Prints OK on success.
With a third argument, the host:port of a `mooncake client`, the same calls
run as its dummy client from a buffer of the shared pool (the standalone
client moves the bytes)."""
import ctypes
import sys

from mooncake.store import MooncakeDistributedStore

master, devices = sys.argv[1], sys.argv[2]
dummy = sys.argv[3] if len(sys.argv) > 3 else None
store = MooncakeDistributedStore()
chunk, n = 256 << 10, 8
if dummy:
    rc = store.setup_dummy(chunk * n, 16 << 20, dummy)
else:
    rc = store.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                      "global_segment_size": 0, "local_buffer_size": "16mb",
                      "protocol": "rdma", "device_name": devices,
                      "master_server_address": master, "shm": "false", "rpc_timeout": "20s"})
assert rc == 0, f"setup failed: {rc}"
if dummy:
    base = store.alloc_from_mem_pool(chunk * n)
    kv = (ctypes.c_ubyte * (chunk * n)).from_address(base)
else:
    kv = (ctypes.c_ubyte * (chunk * n))()
    base = ctypes.addressof(kv)
assert store.register_buffer(base, chunk * n) == 0
for i in range(0, chunk * n, 997):
    kv[i] = (i // 997) % 251 + 1
keys = [f"py-rdma-{'dummy-' if dummy else ''}{i}" for i in range(n)]
for i, k in enumerate(keys):
    assert store.put_from(k, base + i * chunk, chunk) == 0, k
ctypes.memset(base, 0, chunk * n)
got = store.batch_get_into(keys, [base + i * chunk for i in range(n)], [chunk] * n)
assert got == [chunk] * n, got
assert all(kv[i] == (i // 997) % 251 + 1 for i in range(0, chunk * n, 997)), "bytes differ"
assert store.get_into(keys[0], base, chunk) == chunk
store.unregister_buffer(base)
store.close()
print("OK")
