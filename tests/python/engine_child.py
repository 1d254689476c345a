"""An engine process for the multi-process tests (run as a script).

  engine_child.py MASTER META MODE PREFIX
MODE put: contributes a 64 MiB segment, puts 20 keys PREFIX-i of 100 KiB
  (pattern of the key) and prints "ready <segment>" then sleeps.
MODE flood: contributes a segment, prints "ready", then puts 4 MiB objects
  PREFIX-i with put_from until killed.
MODE exit: contributes a segment, puts PREFIX-0, prints "ready", waits for
  a line on stdin, then exits without calling close().
"""
import ctypes
import sys
import time

from mooncake.store import MooncakeDistributedStore, ReplicateConfig

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from conftest import pattern  # noqa: E402


def main():
    master, meta, mode, prefix = sys.argv[1:5]
    s = MooncakeDistributedStore()
    rc = s.setup("127.0.0.1", meta, 64 << 20, 16 << 20, "tcp", "", master)
    if rc != 0:
        print(f"setup failed {rc}", flush=True)
        return 1
    local = ReplicateConfig()
    local.preferred_segment = s.get_hostname()
    if mode == "put":
        for i in range(20):
            k = f"{prefix}-{i}"
            assert s.put(k, pattern(k, 100 << 10), local) == 0
        print(f"ready {s.get_hostname()}", flush=True)
        time.sleep(600)
    elif mode == "exit":
        assert s.put(f"{prefix}-0", b"on the engine", local) == 0
        print(f"ready {s.get_hostname()}", flush=True)
        sys.stdin.readline()
        return 0
    elif mode == "flood":
        size = 4 << 20
        buf = (ctypes.c_ubyte * size)()
        ptr = ctypes.addressof(buf)
        s.register_buffer(ptr, size)
        print(f"ready {s.get_hostname()}", flush=True)
        flood(s, ptr, size, prefix)
    return 0


def flood(s, ptr, size, prefix):
    """Puts objects PREFIX-0, PREFIX-1, ... of `size` bytes from ptr until killed."""
    i = 0
    while True:
        k = f"{prefix}-{i}"
        ctypes.memmove(ptr, pattern(k, size), size)
        s.put_from(k, ptr, size)
        i += 1


if __name__ == "__main__":
    sys.exit(main())
