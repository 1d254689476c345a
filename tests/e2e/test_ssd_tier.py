"""The stores' disk tier (issue 31), as far as this build has it: a store
started with --ssd-offload-path re-adopts the object files a previous run
left there (written here by the format of mooncake-store(1), DISK TIER),
deletes unfinished and torn ones, names the tier in its ready line and sums
it up at stop; a path it cannot use is a start-up error naming it. The
master refuses --promotion-on-hit without the disk tier (exit 2)."""
import os
import struct

from cluster import Cluster
from harness import check, finish, free_port, run, stop, tempdir, wait_until

BLOCK = 4096


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = _crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def pad(n):
    return (n + BLOCK - 1) // BLOCK * BLOCK


def object_file(key, data, generation):
    """The bytes of one version 1 object file."""
    k = key.encode()
    fixed = struct.pack("<IHHQQII", 0x4F53434D, 1, 0, len(data), generation, crc32c(data), len(k))
    header = fixed + struct.pack("<I", crc32c(k, crc32c(fixed))) + k
    return header.ljust(pad(len(header)), b"\0") + data.ljust(pad(len(data)), b"\0")


ssd = tempdir("mooncake-ssd-")
objects = os.path.join(ssd, "objects")
os.makedirs(objects)
good = object_file("kept/one", b"x" * 10000, 5)
with open(os.path.join(objects, "0000000000000005.mco"), "wb") as f:
    f.write(good)
with open(os.path.join(objects, "0000000000000006.tmp"), "wb") as f:  # killed mid-write
    f.write(good[:BLOCK])
flipped = bytearray(object_file("torn/two", b"y" * 100, 7))
flipped[20] ^= 1  # a header byte: the header checksum fails
with open(os.path.join(objects, "0000000000000007.mco"), "wb") as f:
    f.write(bytes(flipped))

c = Cluster(stores=0)
try:
    store = c.add_store(extra=["--ssd-offload-path", ssd, "--ssd-size", "64mb",
                               "--no-hugepages", "--no-prefault"])
    log = lambda: open(store.log_path).read()
    wait_until(lambda: "store ready" in log(), 15)
    check(f"disk tier {ssd}: 1 objects" in log(), "the store re-adopts the complete object file")
    check("2 unfinished or torn files deleted" in log(),
          "the unfinished and the torn file are deleted at start")
    check(sorted(os.listdir(objects)) == ["0000000000000005.mco"],
          f"only the complete file is left: {sorted(os.listdir(objects))}")
    check(f"disk tier {ssd} (" in log() and "1 objects" in log(),
          "the ready line names the disk tier")
    check(stop(store) == 0, "the store stops cleanly")
    check("disk tier: 1 objects" in log() and "0 checksum failures" in log(),
          "the store sums up its disk tier at stop")

    # A path the store cannot use is a start-up error naming it.
    blocker = os.path.join(ssd, "a-file")
    open(blocker, "w").close()
    r = run(["store", "--master", f"127.0.0.1:{c.rpc_port}", "--segment", "16mb",
             "--no-hugepages", "--ssd-offload-path", os.path.join(blocker, "sub"),
             "--ssd-size", "1mb", "--metadata-server", "none"], timeout=30)
    check(r.returncode != 0 and b"a-file/sub" in r.stderr,
          f"an unusable --ssd-offload-path fails the start naming it ({r.returncode})")
finally:
    c.stop()

# The master's side is test_ssd_offload.py; promotion needs the tier.
r = run(["master", "--promotion-on-hit", "--data-dir", "none", "--port", str(free_port())],
        timeout=30)
check(r.returncode == 2 and b"needs the disk tier" in r.stderr,
      f"master --promotion-on-hit alone: refused with exit 2 ({r.returncode})")
finish()
