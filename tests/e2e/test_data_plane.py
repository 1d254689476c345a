"""Data plane integrity with real processes (issue 4, point 5).

Objects from 1 B to 64 MiB, 1 and 3 stores, 1 and 2 replicas, over TCP and
the same-host path: every get byte-identical. kill -9 of one of 3 stores
holding 2 replicas: everything still readable. kill -9 of the only holder:
not-found within the client TTL, never stale bytes, never a hang. 8 clients
putting one key at once: exactly one wins.
"""
import concurrent.futures as cf
import hashlib
import os
import random
import re
import signal
import sys
import time

from cluster import Cluster
from harness import check, finish, run, stop, wait_until

SEED = int(os.environ.get("MC_SEED", random.randrange(1 << 30)))
print(f"seed {SEED} (MC_SEED={SEED} replays)")
rng = random.Random(SEED)
OBJECTS = int(os.environ.get("MC_E2E_OBJECTS", "1000"))
print(f"{OBJECTS} objects (MC_E2E_OBJECTS)")


def sizes(n):
    """1 B and 64 MiB always; the rest log-uniform, so most are small."""
    out = [1, 64 << 20]
    while len(out) < n:
        out.append(int(2 ** rng.uniform(0, 24)))
    return out


def payload(key, size):
    # Deterministic bytes per key, cheap to regenerate for comparison.
    block = hashlib.sha256(key.encode()).digest() * 2048  # 64 KiB
    reps = size // len(block) + 1
    return (block * reps)[:size]


def put_get_all(cluster, label, n, replicas, extra):
    env = cluster.env
    keys = [f"{label}/obj{i}" for i in range(n)]
    szs = sizes(n)
    errors = []

    def one(i):
        key, data = keys[i], payload(keys[i], szs[i])
        r = run(["put", key, "-", "--replicas", str(replicas)] + extra, input=data, env=env)
        if r.returncode != 0:
            return f"put {key} ({szs[i]} B) exit {r.returncode}: {r.stderr.decode().strip()}"
        g = run(["get", key] + extra, env=env)
        if g.returncode != 0:
            return f"get {key} exit {g.returncode}: {g.stderr.decode().strip()}"
        if g.stdout != data:
            return f"get {key}: {len(g.stdout)} bytes differ from the {len(data)} put"
        return None

    with cf.ThreadPoolExecutor(4) as ex:
        for err in ex.map(one, range(n)):
            if err:
                errors.append(err)
    for e in errors[:5]:
        print("   ", e)
    check(not errors, f"{label}: {n} objects 1 B..64 MiB, {replicas} replica(s): all byte-identical")
    return keys, szs


configs = [
    # stores, replicas, client flags
    (1, 1, []),            # same-host path (default)
    (1, 1, ["--no-shm"]),  # TCP
    (3, 2, ["--no-shm"]),
    (3, 2, []),
    (3, 1, ["--no-shm"]),
]
per_config = max(10, OBJECTS // len(configs))
for stores, replicas, extra in configs:
    c = Cluster(stores=stores, segment="512mb")
    try:
        path = "tcp" if extra else "shm"
        put_get_all(c, f"s{stores}r{replicas}{path}", per_config, replicas, extra)
    finally:
        c.stop()

# kill -9 one of 3 stores while objects have 2 replicas: all still readable.
c = Cluster(stores=3, segment="256mb", extra_master=["--client-ttl", "2s"])
try:
    keys = [f"k9/{i}" for i in range(60)]
    for k in keys:
        run(["put", k, "-", "--replicas", "2"], input=payload(k, 100000), env=c.env)
    os.kill(c.stores[0].pid, signal.SIGKILL)
    c.stores[0].wait()
    bad = []
    for phase in ("right after kill", "after client ttl"):
        for k in keys:
            g = run(["get", k, "--no-shm"], env=c.env, timeout=30)
            if g.returncode != 0 or g.stdout != payload(k, 100000):
                bad.append(f"{phase}: {k}: exit {g.returncode} {g.stderr.decode().strip()}")
        time.sleep(3)
    for b in bad[:5]:
        print("   ", b)
    check(not bad, "kill -9 one of 3 stores holding 2 replicas: every object still readable")
finally:
    c.stop()

# kill -9 the only holder: not found within the client TTL, never stale bytes.
c = Cluster(stores=1, segment="128mb", extra_master=["--client-ttl", "2s"])
try:
    run(["put", "only", "-"], input=b"x" * 5000, env=c.env)
    os.kill(c.stores[0].pid, signal.SIGKILL)
    c.stores[0].wait()
    t0 = time.monotonic()
    outcome = None
    while time.monotonic() - t0 < 10:
        g = run(["get", "only"], env=c.env, timeout=15)
        if g.returncode == 0 and g.stdout != b"x" * 5000:
            outcome = "stale"
            break
        if g.returncode == 3:
            outcome = "not-found"
            break
        time.sleep(0.2)
    elapsed = time.monotonic() - t0
    check(outcome == "not-found", f"only holder killed: not-found after {elapsed:.1f}s (ttl 2s), no stale bytes")
    e = run(["exists", "only"], env=c.env)
    check(e.returncode == 1, "exists answers 1 for the lost object")
finally:
    c.stop()

# 8 clients putting one key at once: exactly one wins.
c = Cluster(stores=1, segment="128mb")
try:
    with cf.ThreadPoolExecutor(8) as ex:
        rs = list(ex.map(lambda i: run(["put", "race", "-"], input=bytes([i]) * 1000, env=c.env),
                         range(8)))
    wins = [i for i, r in enumerate(rs) if r.returncode == 0]
    exists_codes = sorted(r.returncode for r in rs if r.returncode != 0)
    check(len(wins) == 1, f"8 concurrent puts of one key: exactly one wins ({len(wins)})")
    check(all(code == 5 for code in exists_codes), f"the 7 losers exit 5 (exists): {exists_codes}")
    g = run(["get", "race"], env=c.env)
    check(len(wins) == 1 and g.stdout == bytes([wins[0]]) * 1000, "the winner's bytes are stored")
    r = run(["put", "race", "-"], input=b"again", env=c.env)
    check(r.returncode == 5 and b"OBJECT_ALREADY_EXISTS" in r.stderr,
          "a second put of an existing key fails with OBJECT_ALREADY_EXISTS")

    # A get releases its read lease when done (the lease is 10 s here): the
    # key can be removed at once. A lease nobody released still holds.
    for via in (["--no-shm"], []):
        key = "released" + "".join(via)
        check(run(["put", key, "-"], input=b"r" * 5000, env=c.env).returncode == 0, f"put {key}")
        g = run(["get", key] + via, env=c.env)
        check(g.returncode == 0 and g.stdout == b"r" * 5000, f"get {key} {via}")
        # The release is a notification the master handles on its own
        # connection: allow it a moment, far less than the lease.
        deadline = time.time() + 3
        while True:
            r = run(["rm", key], env=c.env)
            if r.returncode == 0 or time.time() > deadline:
                break
            time.sleep(0.1)
        check(r.returncode == 0, f"rm {key} right after a get {via}: {r.stderr.decode().strip()}")
    status, body = c.admin("/metrics")
    ended = re.search(rb"^master_leases_ended_by_release_total (\d+)", body, re.M)
    check(status == 200 and ended is not None and int(ended.group(1)) >= 2,
          f"/metrics counts the leases the two gets released: {ended and ended.group(0)}")
    # Each client reports what it moved, per path, when it closes (a
    # notification, so allow the master a moment): the winning race put,
    # two 5000-byte puts and the race get same-host, one get over TCP.
    def transfers():
        _, text = c.admin("/metrics")
        return {(m[0].decode(), m[1].decode()): int(m[2]) for m in re.findall(
            rb'^mooncake_transfer_bytes_total\{path="(\w+)",op="(\w+)"\} (\d+)$', text, re.M)}
    want = {("shm", "put"): 11000, ("shm", "get"): 6000, ("tcp", "get"): 5000,
            ("tcp", "put"): 0, ("rdma", "put"): 0, ("rdma", "get"): 0}
    got = wait_until(lambda: transfers() == want and transfers(), 5) or transfers()
    check(got == want, f"/metrics mooncake_transfer_bytes_total by path and op: {got}")
    check(run(["put", "held", "-"], input=b"h", env=c.env).returncode == 0, "put held")
    check(run(["get", "held", "--print-grants"], env=c.env).returncode == 0, "held: grants printed")
    r = run(["rm", "held"], env=c.env)
    check(r.returncode != 0 and b"OBJECT_HAS_LEASE" in r.stderr,
          f"rm of a key whose lease was not released is refused: {r.stderr.decode().strip()}")
finally:
    c.stop()
finish()
