"""RDMA direct reads (run by guest_suite.py in the guest): a client with
protocol rdma that got keys once reads them again straight from the stores,
one-sided, with the master's get RPC count unchanged; then a race of a
writer that removes and re-puts keys (new versions) against a reader that
keeps getting them, where every read returns some whole version of its own
key, never other bytes. Prints a JSON line of figures, then OK.
Arguments: master, devices, the master's metrics URL, race seconds."""
import ctypes
import json
import random
import re
import sys
import threading
import time
import urllib.request

from mooncake.store import MooncakeDistributedStore

master, devices, metrics = sys.argv[1], sys.argv[2], sys.argv[3]
race_s = float(sys.argv[4]) if len(sys.argv) > 4 else 8.0
seed = int(sys.argv[5]) if len(sys.argv) > 5 else random.randrange(1 << 30)
print(f"direct_child seed {seed}", flush=True)
rng = random.Random(seed)


def get_rpcs():
    body = urllib.request.urlopen(metrics + "/metrics", timeout=20).read().decode()
    n = 0
    for op in ("get_replica_list", "batch_get_replica_list"):
        m = re.search(rf"^master_{op}_requests_total (\S+)$", body, re.M)
        n += int(float(m.group(1)))
    return n


def client():
    s = MooncakeDistributedStore()
    rc = s.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                  "global_segment_size": 0, "local_buffer_size": "16mb",
                  "protocol": "rdma", "device_name": devices,
                  "master_server_address": master, "shm": "false", "rpc_timeout": "20s",
                  "direct_read_ttl": "120s"})
    assert rc == 0, f"setup failed: {rc}"
    return s


def registered(s, n):
    buf = (ctypes.c_ubyte * n)()
    base = ctypes.addressof(buf)
    assert s.register_buffer(base, n) == 0
    return buf, base


def version_bytes(key_index, version, size):
    """A version's bytes: a header naming key and version, then a pattern of both."""
    head = f"{key_index:08d}:{version:08d}|".encode()
    body = bytes(((key_index * 31 + version * 7 + i) % 251) for i in range(256))
    out = (head + body * (size // len(body) + 1))[:size]
    return out


# 1. Repeated gets of keys read once through the master skip the master.
SIZE, KEYS = 4096, 16
w = client()
wbuf, wbase = registered(w, SIZE * KEYS)
for k in range(KEYS):
    ctypes.memmove(wbase + k * SIZE, version_bytes(k, 0, SIZE), SIZE)
    assert w.put_from(f"direct-{k}", wbase + k * SIZE, SIZE) == 0
r = client()
rbuf, rbase = registered(r, SIZE * KEYS)
for k in range(KEYS):  # learnt through the master (a lease, a seal)
    assert r.get_into(f"direct-{k}", rbase + k * SIZE, SIZE) == SIZE
before = get_rpcs()
rounds = 3
t0 = time.monotonic()
for _ in range(rounds):
    ctypes.memset(rbase, 0, SIZE * KEYS)
    for k in range(KEYS):
        assert r.get_into(f"direct-{k}", rbase + k * SIZE, SIZE) == SIZE
        assert bytes(rbuf[k * SIZE:(k + 1) * SIZE]) == version_bytes(k, 0, SIZE), k
direct_s = time.monotonic() - t0
after = get_rpcs()
figures = {"direct_gets": rounds * KEYS, "master_get_rpcs_during": after - before,
           "direct_get_ms": round(1000 * direct_s / (rounds * KEYS), 2)}

# 2. The race: remove and re-put (new versions, same size, so the master may
#    reuse the space) while the reader keeps reading; every read must be a
#    whole version of its own key.
RKEYS, RSIZE = 4, 16384
rw, rwbase = registered(w, RSIZE)
rr, rrbase = registered(r, RSIZE)
for k in range(RKEYS):
    ctypes.memmove(rwbase, version_bytes(100 + k, 0, RSIZE), RSIZE)
    assert w.put_from(f"race-{k}", rwbase, RSIZE) == 0
stop = threading.Event()
stats = {"puts": 0, "removes": 0, "reads": 0, "misses": 0, "bad": []}


def writer():
    version = 1
    while not stop.is_set():
        k = rng.randrange(RKEYS)
        if w.remove(f"race-{k}", True) == 0:  # forced: leased or not
            stats["removes"] += 1
        ctypes.memmove(rwbase, version_bytes(100 + k, version, RSIZE), RSIZE)
        if w.put_from(f"race-{k}", rwbase, RSIZE) == 0:
            stats["puts"] += 1
        version += 1


def valid(k, data):
    head = data[:18].decode(errors="replace")
    m = re.match(r"(\d{8}):(\d{8})\|", head)
    return bool(m) and int(m.group(1)) == 100 + k and \
        data == version_bytes(100 + k, int(m.group(2)), RSIZE)


t = threading.Thread(target=writer)
t.start()
end = time.monotonic() + race_s
while time.monotonic() < end:
    k = rng.randrange(RKEYS)
    ctypes.memset(rrbase, 0, RSIZE)
    n = r.get_into(f"race-{k}", rrbase, RSIZE)
    if n != RSIZE:
        stats["misses"] += 1
        continue
    stats["reads"] += 1
    data = bytes(rr)
    if not valid(k, data):
        stats["bad"].append((k, data[:18].decode(errors="replace")))
stop.set()
t.join()
figures.update({k: (v if k != "bad" else len(v)) for k, v in stats.items()})
print(json.dumps(figures), flush=True)
assert figures["master_get_rpcs_during"] == 0, figures
assert not stats["bad"], stats["bad"][:5]
assert stats["reads"] > 0 and stats["puts"] > 0 and stats["removes"] > 0, figures
r.close()
w.close()
print("OK")
