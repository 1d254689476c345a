"""A dummy client in its own process (run as a script), for the tests of
`mooncake client` with several engine ranks.

  dummy_child.py SERVER_ADDRESS MODE PREFIX
MODE put: puts 10 keys PREFIX-i of 64 KiB (pattern of the key) through the
  pool, prints "ready", then waits for a line on stdin and exits.
MODE flood: prints "ready", then puts 4 MiB objects PREFIX-i with put_from
  from its pool until killed.
"""
import ctypes
import sys

from mooncake.store import MooncakeDistributedStore

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from conftest import pattern  # noqa: E402
from engine_child import flood  # noqa: E402


def main():
    server, mode, prefix = sys.argv[1:4]
    s = MooncakeDistributedStore()
    rc = s.setup_dummy(64 << 20, 16 << 20, server)
    if rc != 0:
        print(f"setup_dummy failed {rc}", flush=True)
        return 1
    if mode == "put":
        ptr = s.alloc_from_mem_pool(64 << 10)
        for i in range(10):
            k = f"{prefix}-{i}"
            ctypes.memmove(ptr, pattern(k, 64 << 10), 64 << 10)
            assert s.put_from(k, ptr, 64 << 10) == 0
        print("ready", flush=True)
        sys.stdin.readline()
        s.close()
        return 0
    size = 4 << 20
    ptr = s.alloc_from_mem_pool(size)
    print("ready", flush=True)
    flood(s, ptr, size, prefix)


if __name__ == "__main__":
    sys.exit(main())
