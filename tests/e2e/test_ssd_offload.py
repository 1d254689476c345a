"""The master's side of the disk tier (issue 31): with --enable-offload,
objects past the memory watermark are written by their store to its disk
tier instead of being dropped, and read back byte for byte over TCP and the
same-host path; a second read within the window promotes (--promotion-on-hit);
a full disk drops its least recently used objects; a flipped byte on disk is
a failed get and a counted checksum failure, never wrong bytes; a store
killed with -9 mid-offload leaves nothing readable that is wrong; a store
restart, a master restart (the journal) and both bring the disk objects
back, and keys removed meanwhile stay removed. No polling: an idle store's
call for work is held by the master until work is queued (TierPoll). ls
shows each key's tier and lists keys that are on disk only."""
import glob
import json
import os
import re
import signal
import time

from cluster import Cluster
from harness import check, finish, stop, tempdir, wait_until, run

MB = 1 << 20
SEG = "32mb"
OBJ = 1 * MB
MASTER = ["--enable-offload", "--promotion-on-hit", "--eviction-high-watermark-ratio", "0.5"]


def payload(key, n=OBJ):
    seed = key.encode() * (n // max(1, len(key)) + 1)
    return bytes((b + i) % 251 for i, b in enumerate(seed[:4096])) * (n // 4096) + seed[: n % 4096]


def metric(c, name):
    status, body = c.admin("/metrics")
    m = re.search(rf"^{name} (\d+)$", body.decode(), re.M)
    return int(m.group(1)) if m else -1


def put(c, key):
    r = run(["put", key, "-"], input=payload(key), env=c.env)
    check(r.returncode == 0, f"put {key}: {r.stderr.decode()[-300:]}")


def get(c, key, via=()):
    return run(["get", key] + list(via), env=c.env, timeout=30)


def same(c, key, via=()):
    g = get(c, key, via)
    return g.returncode == 0 and g.stdout == payload(key)


def store_args(ssd, size="64mb"):
    return ["--ssd-offload-path", ssd, "--ssd-size", size, "--no-hugepages", "--no-prefault"]


data_dir = tempdir("mooncake-offload-master-")
ssd = tempdir("mooncake-offload-ssd-")
c = Cluster(stores=0, segment=SEG, extra_master=MASTER, data_dir=data_dir)
try:
    store = c.add_store(extra=store_args(ssd))
    wait_until(lambda: "announced" in open(store.log_path).read(), 10)
    keys = [f"k{i:02d}" for i in range(40)]
    for k in keys:
        put(c, k)
    check(wait_until(lambda: metric(c, "mooncake_tier_offloads_total") >= 10, 20),
          f"objects past the watermark were offloaded ({metric(c, 'mooncake_tier_offloads_total')})")
    check(metric(c, "mooncake_tier_disk_objects") > 0, "the master counts disk objects")
    on_disk = [k for k in keys if b'"tier":"disk"' in c.admin(f"/query_key?key={k}")[1]]
    check(len(on_disk) >= 10, f"/query_key shows disk-only objects ({len(on_disk)})")
    check(all(same(c, k, ["--no-shm"]) for k in on_disk[:4]),
          "disk-only objects read back byte for byte over TCP")
    check(all(same(c, k) for k in on_disk[4:8]),
          "disk-only objects read back byte for byte over the same-host path")
    check(metric(c, "mooncake_tier_stages_total") >= 8, "each read staged from disk")
    # Promotion: a second read from disk within the window keeps it in memory.
    hot = on_disk[9]
    before = metric(c, "mooncake_tier_promotions_total")
    check(same(c, hot), "first read of the hot key")
    wait_until(lambda: b'"tier":"disk"' in c.admin(f"/query_key?key={hot}")[1], 10)
    check(same(c, hot), "second read of the hot key")
    check(metric(c, "mooncake_tier_promotions_total") == before + 1,
          "a second read from disk within the window promotes")
    check(run(["ls"], env=c.env).returncode == 0, "ls still lists")
    check(metric(c, "mooncake_tier_dropped_total") == 0,
          "puts never outran the offloads: nothing left memory without a disk copy")

    # No polling: the store's call for work waits at the master until work is
    # queued, so an idle store asks about once per held call (2.5 s), where a
    # 20 ms poll asked 150 times in 3 s.
    polls = metric(c, "mooncake_tier_polls_total")
    time.sleep(3)
    idle = metric(c, "mooncake_tier_polls_total") - polls
    check(0 <= idle <= 4, f"an idle store's calls for work are held, not polled ({idle} in 3 s)")

    # ls shows each key's tier and lists keys on disk only; exists sees them.
    cold = on_disk[10:]
    lj = run(["ls", "k", "--json"], env=c.env)
    tiers = {o["key"]: o["tier"] for o in json.loads(lj.stdout)} if lj.returncode == 0 else {}
    check(sorted(tiers) == keys, f"ls lists every key, on disk or in memory ({len(tiers)})")
    check(cold and all(tiers.get(k) == "disk" for k in cold), "ls --json: disk-only keys are 'disk'")
    check(any(t == "memory" for t in tiers.values()), "ls --json: keys in memory are 'memory'")
    check(tiers.get(hot) == "both", f"ls --json: the promoted key is in both tiers ({tiers.get(hot)})")
    ll = run(["ls", "-l", cold[0]], env=c.env).stdout.decode().split()
    check(ll[-2:] == ["disk", cold[0]] and ll[1] == "0", f"ls -l shows tier and 0 replicas ({ll})")
    check(run(["exists", cold[0]], env=c.env).returncode == 0, "exists sees a disk-only key")

    # A removed disk-only key is gone, and stays gone across restarts.
    gone = on_disk[0]
    check(run(["rm", gone], env=c.env).returncode == 0, f"rm {gone}")
    check(get(c, gone).returncode != 0, "a removed disk-only key is not found")

    # Store restart: the disk objects are announced and re-adopted; a key
    # removed while the store was down is deleted from its disk.
    check(stop(store) == 0, "the store stops cleanly")
    down_removed = on_disk[1]
    check(run(["rm", down_removed], env=c.env).returncode == 0, "rm while the store is down")
    store = c.add_store(extra=store_args(ssd))
    check(wait_until(lambda: "announced" in open(store.log_path).read(), 15), "the store announces")
    check(same(c, on_disk[2], ["--no-shm"]), "after a store restart a disk object is served")
    check(get(c, down_removed).returncode != 0, "a key removed while the store was down stays removed")

    # Master restart: the journal brings the disk replicas back.
    stop(c.master)
    c.start_master()
    check(wait_until(lambda: same(c, on_disk[3], ["--no-shm"]), 20),
          "after a master restart a disk object is served again")
    check(get(c, gone).returncode != 0 and get(c, down_removed).returncode != 0,
          "removed keys stay removed after the master restart")

    # Both: stop the store, restart the master, start the store.
    stop(store)
    stop(c.master)
    c.start_master()
    store = c.add_store(extra=store_args(ssd))
    check(wait_until(lambda: same(c, on_disk[5]), 20), "after both restart a disk object is served")

    # A flipped byte on disk: the get fails, the replica is dropped and counted.
    victim = on_disk[6]
    files = [f for f in glob.glob(os.path.join(ssd, "objects", "*.mco"))
             if victim.encode() in open(f, "rb").read(8192)]
    check(len(files) == 1, f"the victim's file is found ({len(files)})")
    with open(files[0], "r+b") as f:
        f.seek(os.path.getsize(files[0]) - 100)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    g = get(c, victim)
    check(g.returncode != 0 and g.stdout != payload(victim), "a corrupted object is an error, not bytes")
    check(metric(c, "mooncake_tier_checksum_failures_total") == 1, "the checksum failure is counted")
    check(get(c, victim).returncode != 0, "the dropped replica is gone")
finally:
    c.stop()

# A full disk: the master drops its least recently used disk objects.
ssd2 = tempdir("mooncake-offload-full-")
c = Cluster(stores=0, segment=SEG, extra_master=MASTER)
try:
    store = c.add_store(extra=store_args(ssd2, "8mb"))
    wait_until(lambda: "announced" in open(store.log_path).read(), 10)
    keys = [f"f{i:02d}" for i in range(40)]
    for k in keys:
        put(c, k)
    check(wait_until(lambda: metric(c, "mooncake_tier_disk_evictions_total") > 0, 20),
          f"a full disk evicts ({metric(c, 'mooncake_tier_disk_evictions_total')})")
    check(metric(c, "mooncake_tier_disk_bytes") <= 8 * MB, "the disk stays within --ssd-size")
    reads = {k: get(c, k) for k in keys}
    readable = [k for k, g in reads.items() if g.returncode == 0]
    wrong = [k for k in readable if reads[k].stdout != payload(k)]
    check(len(readable) >= 8 and not wrong,
          f"the newest objects stay readable ({len(readable)}), none with wrong bytes ({wrong})")

    # kill -9 mid-offload: nothing readable is wrong after the restart.
    for i in range(12):
        put(c, f"x{i:02d}")
    os.kill(store.pid, signal.SIGKILL)
    store.wait()
    store = c.add_store(extra=store_args(ssd2, "8mb"))
    wait_until(lambda: "announced" in open(store.log_path).read(), 15)
    leftovers = glob.glob(os.path.join(ssd2, "objects", "*.tmp"))
    check(not leftovers, f"no unfinished file survives the restart ({leftovers})")
    wrong = [k for k in keys + [f"x{i:02d}" for i in range(12)]
             if (g := get(c, k)).returncode == 0 and g.stdout != payload(k)]
    check(not wrong, f"no key reads wrong bytes after kill -9 ({wrong})")
finally:
    c.stop()
finish()
