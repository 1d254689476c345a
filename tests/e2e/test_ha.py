"""Master high availability on etcd (mooncake-master(1), HIGH AVAILABILITY).

A three-member etcd, two masters with --ha-etcd, two stores and a client
that finds the leader through etcd://, the stores publishing their
transfer-engine descriptors to etcd:// too. Checks: one leader, one standby
(/role, /leader, /ha_status, /metrics); kill -9 of the leader at random
moments (MC_SEED replays; MC_HA_CYCLES sets how many, 2 by default) loses no
acknowledged put and brings back no removed key, and the killed master comes
back as a standby; a standby killed and brought back follows the log again
(the leader acknowledging meanwhile); a plain list of masters also finds the
leader; an etcd member killed and restored changes nothing; with etcd down
entirely the leader stops acknowledging (and exits 75), and once etcd is back
a master leads again with every acknowledged put intact; a leader paused (SIGSTOP)
past its lease is replaced, and once resumed acknowledges nothing and exits;
a read grant of a dead leader's term is refused by the store once it has seen
the new leader's term (the fence of mooncake-master(1)); the log's txns go to
etcd's raft leader, not to the first member listed. Then the disk tier
under HA: two more masters with --enable-offload (their own HA cluster on the
same etcd) and a store with a disk tier; objects offloaded to its disk read
back byte for byte after kill -9 of the leader, and a disk-only key removed
before the failover stays removed.
"""
import base64
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

from dataport import DataPort, INVALID_READ, READ, grant_of
from harness import check, finish, run, stop, tempdir, wait_until
from ha_cluster import Etcd, HaGroup
from pool_checks import check_allocations

seed = int(os.environ.get("MC_SEED") or random.randrange(1 << 32))
cycles = int(os.environ.get("MC_HA_CYCLES", "2"))
print(f"test_ha: seed {seed} (replay with MC_SEED={seed}), {cycles} kill cycles")
rng = random.Random(seed)

etcd = Etcd(members=3)
# etcd's raft leader is not the first member of the list the masters get:
# their log's calls must go to it, not to the first (a follower would
# forward every txn to it).
etcd_leader = 2
moved = etcd.move_leader(etcd_leader)
txns_before = [etcd.grpc_calls(i, "Txn") for i in range(3)]
# Read grants outlive the failover, so that the store's refusal of the old
# term's is the fence's, not expiry's. A snapshot every 4 entries: kills land
# while one is being written (on the leader's snapshot thread), and standbys
# take over from a snapshot and the log after it, not from the log alone.
group = HaGroup(etcd, masters=2, ttl=2,
                extra=["--default-kv-lease-ttl", "30s", "--ha-snapshot-every", "4"])
acked = {}      # key -> bytes: every put that returned 0
removed = set()


def put(key, env=None):
    value = os.urandom(rng.randrange(1, 64 << 10))
    r = run(["put", key, "-"], input=value, env=env or group.env, timeout=60)
    if r.returncode == 0:
        acked[key] = value
        removed.discard(key)
    return r


def verify(what):
    bad = []
    for key, value in acked.items():
        g = run(["get", key], env=group.env, timeout=60)
        if g.returncode != 0 or g.stdout != value:
            bad.append(key)
    check(not bad, f"{what}: all {len(acked)} acknowledged puts read back byte for byte"
                   + (f" (bad: {bad[:5]})" if bad else ""))
    back = [k for k in removed if run(["exists", k], env=group.env).returncode == 0]
    check(not back, f"{what}: none of {len(removed)} removed keys returned ({back[:5]})")
    leader = group.leader()

    class Admin:
        def admin(self, path):
            return group.admin(leader, path)
    check_allocations(Admin(), what)


def payload(key, n=1 << 20):
    return (key.encode() * (n // len(key) + 1))[:n]


tier_group = []


def tier_failover():
    """Disk replicas live in the HA log: after kill -9 of the leader the new
    one re-adopts what the store's disk holds, and nothing removed returns."""
    start_s = time.monotonic()
    tg = HaGroup(etcd, masters=2, ttl=2, cluster="ha-tier",
                 extra=["--enable-offload", "--eviction-high-watermark-ratio", "0.5"])
    tier_group.append(tg)
    ssd = tempdir("mooncake-ha-ssd-")
    store = tg.add_store("16mb", ["--ssd-offload-path", ssd, "--ssd-size", "64mb",
                                  "--no-hugepages", "--no-prefault"])
    check(wait_until(lambda: "announced" in open(store.log_path).read(), 20),
          "the store with a disk tier announced it to the HA leader")
    leader = tg.leader()
    keys = [f"t{i:02d}" for i in range(12)]  # 12 MiB in 16 MiB at watermark 0.5
    for k in keys:
        r = run(["put", k, "-"], input=payload(k), env=tg.env, timeout=30)
        check(r.returncode == 0, f"put {k} to the HA leader with a disk tier: {r.stderr[-300:]!r}")

    def on_disk():
        return [k for k in keys if b'"tier":"disk"' in tg.admin(leader, f"/query_key?key={k}")[1]]
    check(wait_until(lambda: len(on_disk()) >= 3, 20),
          f"objects past the watermark were offloaded to the store's disk ({on_disk()})")
    disk = on_disk()
    gone = disk.pop()
    check(run(["rm", gone], env=tg.env).returncode == 0, f"rm of the disk-only key {gone}")
    stop(tg.procs[leader], signal.SIGKILL)
    t0 = time.monotonic()
    new = tg.leader()
    check(new is not None and new != leader, f"master {new} took over the disk tier's group")

    def served():
        return all((g := run(["get", k], env=tg.env, timeout=30)).returncode == 0
                   and g.stdout == payload(k) for k in disk)
    check(wait_until(served, 20), f"after kill -9 of the leader the {len(disk)} disk-only "
          f"objects read back byte for byte ({time.monotonic() - t0:.1f} s)")
    check(run(["exists", gone], env=tg.env).returncode != 0 and
          run(["get", gone], env=tg.env, timeout=30).returncode != 0,
          "the disk-only key removed before the failover stays removed")
    readopted = re.search(rb"^mooncake_tier_readopted_total (\d+)", tg.admin(new, "/metrics")[1],
                          re.M)
    check(readopted is not None and int(readopted.group(1)) >= len(disk),
          f"the new leader re-adopted the store's disk objects from the log's records "
          f"({readopted.group(1) if readopted else None})")
    print(f"test_ha: the disk tier's failover took {time.monotonic() - start_s:.1f} s")


try:
    first = group.leader()
    check(first is not None, "one of the two masters leads")
    other = 1 - first
    check(wait_until(lambda: group.role(other) == "standby", 10), "the other is a standby")
    named = f"127.0.0.1:{group.rpc_ports[first]}".encode()
    wait_until(lambda: named in group.admin(other, "/leader")[1], 5)
    status, body = group.admin(other, "/leader")
    check(status == 200 and named in body and b'"present":true' in body,
          f"the standby's /leader names the leader: {body!r}")
    status, metrics = group.admin(first, "/metrics")
    check(b"master_ha_is_leader 1" in metrics, "the leader's /metrics says it leads")
    check(b"HA: leader term" in group.admin(first, "/metrics/summary")[1],
          "the summary line shows the HA role and term")

    for _ in range(2):
        group.add_store()
    check(wait_until(lambda: len(group.segments()) == 2, 20), "two stores mounted through etcd://")
    def published_descriptors():
        return [seg for seg in group.segments()
                if b'"kvs"' in etcd.post(0, "/v3/kv/range", json.dumps(
                    {"key": base64.b64encode(f"mooncake/ram/{seg}".encode()).decode()}).encode())[1]]
    # A store publishes its descriptor after it mounted: give it a moment.
    wait_until(lambda: len(published_descriptors()) == 2, 10)
    published = published_descriptors()
    check(len(published) == 2, "with metadata_server etcd:// both stores published their "
          f"descriptors under the reference's keys mooncake/ram/<segment> ({published})")

    for i in range(20):
        check(put(f"k{i}").returncode == 0, f"put k{i}") if i < 2 else put(f"k{i}")
    check(len(acked) == 20, f"20 puts acknowledged before any failure ({len(acked)})")
    txns = [etcd.grpc_calls(i, "Txn") - txns_before[i] for i in range(3)]
    check(moved and txns[etcd_leader] >= 20 and txns[0] < txns[etcd_leader] / 2,
          f"the log's txns go to etcd's raft leader (member {etcd_leader}, moved there: "
          f"{moved}), not to the first member listed: txns answered by each member {txns}")
    metrics = group.admin(first, "/metrics")[1].decode()
    hist = re.search(r"^master_ha_durable_latency_seconds_count (\d+)$", metrics, re.M)
    entries = re.search(r"^master_ha_log_entries_total (\d+)$", metrics, re.M)
    check(hist and entries and int(hist.group(1)) == int(entries.group(1)) > 0 and
          f'master_ha_commit_latency_seconds_bucket{{le="+Inf"}} {entries.group(1)}\n' in metrics,
          "the leader's /metrics has a histogram of commit and of durable latency, an "
          f"observation per log entry ({hist and hist.group(1)} of {entries and entries.group(1)})")
    plain = re.search(r"^master_ha_log_plain_bytes_total (\d+)$", metrics, re.M)
    shipped = re.search(r"^master_ha_log_bytes_total (\d+)$", metrics, re.M)
    check(plain and shipped and 0 < int(shipped.group(1)) <= int(plain.group(1)),
          "the leader counts the log's bytes as encoded and as etcd got them (deflated where "
          f"smaller): {shipped and shipped.group(1)} of {plain and plain.group(1)}")
    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=metrics.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        check(r.returncode == 0, f"promtool check metrics finds the HA leader's /metrics clean "
              f"{r.stdout.decode()[:400]}")
    for k in ["k3", "k4"]:
        if run(["rm", k], env=group.env).returncode == 0:
            acked.pop(k, None)
            removed.add(k)
    verify("before any failover")
    g = run(["get", "k0", "--print-grants"], env=group.env)
    old_buf = json.loads(g.stdout)["replicas"][0][0]
    old_port = DataPort(old_buf["endpoint"])
    st, body = old_port.request(READ, old_buf["offset"], old_buf["size"], grant_of(old_buf))
    check(st == 0 and body == acked["k0"] and old_buf["term"] > 0,
          f"a read grant carries the leader's term ({old_buf['term']}) and reads")

    snapshots = 0  # published by the leaders killed below, before their kill
    for cycle in range(cycles):
        leader = group.leader()
        m = re.search(rb"^master_ha_snapshots_total (\d+)", group.admin(leader, "/metrics")[1],
                      re.M)
        snapshots += int(m.group(1)) if m else 0
        # Puts in flight while the leader dies at a random moment.
        writer = [run(["put", f"c{cycle}-{j}", "-"], input=b"x" * 100, env=group.env)
                  for j in range(rng.randrange(0, 3))]
        for j, r in enumerate(writer):
            if r.returncode == 0:
                acked[f"c{cycle}-{j}"] = b"x" * 100
        time.sleep(rng.uniform(0, group.ttl / 2))
        t0 = time.monotonic()
        stop(group.procs[leader], signal.SIGKILL)
        r = put(f"after-{cycle}")
        took = time.monotonic() - t0
        check(r.returncode == 0, f"cycle {cycle}: a put after kill -9 of the leader succeeds "
                                 f"({took:.2f} s, lease {group.ttl} s): {r.stderr[-300:]!r}")
        new = group.leader()
        check(new is not None and new != leader, f"cycle {cycle}: master {new} took over")
        verify(f"cycle {cycle}")
        if cycle == 0:
            last = [None]

            def old_term_refused():
                last[0] = old_port.request(READ, old_buf["offset"], old_buf["size"],
                                           grant_of(old_buf))
                return last[0][0] == INVALID_READ and b"term" in last[0][1]
            check(wait_until(old_term_refused, 10),
                  f"the store refuses the dead leader's read grant by its term: {last[0]!r}")
        group.start_master(leader)
        check(wait_until(lambda: group.role(leader) == "standby", 10),
              f"cycle {cycle}: the killed master is back as a standby")

    if cycles:
        check(snapshots > 0, f"the killed leaders had published snapshots ({snapshots}), so "
                             "standbys took over from a snapshot and the log after it")

    # A standby killed and brought back: the leader keeps acknowledging
    # without it, and the restarted standby follows the log again. It is the
    # master that takes over from the paused leader below, and the verify()
    # after that reads back the puts made while it was down.
    leader = group.leader()
    standby = next(i for i in range(len(group.procs)) if i != leader)
    stop(group.procs[standby], signal.SIGKILL)
    down = [put(f"standby-down-{j}").returncode for j in range(5)]
    check(down == [0] * 5, f"puts with the standby killed are acknowledged ({down})")
    group.start_master(standby)
    check(wait_until(lambda: group.role(standby) == "standby", 10),
          "the killed standby is back as a standby")
    check(group.leader() == leader, "the leader kept leading while its standby was down")

    # A leader paused past its lease (a stall, or cut off as a partition
    # would leave it): another master takes over, and once it runs again the
    # old one acknowledges nothing and exits 75.
    old = group.leader()
    pinned = dict(group.env, MOONCAKE_MASTER=f"127.0.0.1:{group.rpc_ports[old]}")
    os.kill(group.procs[old].pid, signal.SIGSTOP)
    try:
        check(put("while-paused").returncode == 0, "a put while the leader is paused succeeds "
                                                   "on the master that took over")
        new = group.leader()
        check(new is not None and new != old, f"master {new} leads while {old} is paused")
    finally:
        os.kill(group.procs[old].pid, signal.SIGCONT)
    r = run(["put", "to-the-deposed", "-", "--rpc-retries", "1"], input=b"stale", env=pinned)
    check(r.returncode != 0, f"the resumed old leader acknowledges no put: rc {r.returncode}")
    code = group.procs[old].wait(timeout=30)
    check(code == 75, f"the resumed old leader exits 75: exit {code}")
    check(run(["exists", "to-the-deposed"], env=group.env).returncode != 0,
          "nothing sent to the deposed leader landed")
    group.start_master(old)
    verify("after a paused leader resumed")

    r = run(["get", "k0"], env=group.list_env)
    check(r.returncode == 0 and r.stdout == acked["k0"],
          "a plain list of masters finds the leader (standbys keep their RPC port closed)")

    etcd.kill_member(0)
    check(put("one-member-down").returncode == 0, "a put succeeds with one etcd member killed")
    etcd.start_member(0)
    check(wait_until(lambda: etcd.healthy(0), 20, poll=0.2), "the killed member is back")

    leader = group.leader()
    for i in range(3):
        etcd.kill_member(i)
    t0 = time.monotonic()
    # A short RPC budget: the client resends the dropped PutEnd to whichever
    # master leads until it runs out, and none will while etcd is down.
    r = run(["put", "etcd-down", "-", "--rpc-timeout", "2s", "--rpc-retries", "2"],
            input=b"never", env=group.list_env, timeout=60)
    check(r.returncode != 0, f"with etcd down a put is not acknowledged: rc {r.returncode}")
    code = group.procs[leader].wait(timeout=30)
    check(code == 75, f"the leader stops and exits 75 within {time.monotonic() - t0:.1f} s "
                      f"(lease {group.ttl} s): exit {code}")
    for i in range(3):
        etcd.start_member(i)
    check(wait_until(etcd.healthy, 30, poll=0.2), "etcd is back")
    group.start_master(leader)
    check(group.leader(30) is not None, "a master leads again once etcd is back")
    check(run(["exists", "etcd-down"], env=group.env).returncode != 0,
          "the put refused while etcd was down is not there")
    verify("after etcd was down")
    for p in group.procs + group.stores:
        if p is not None:
            stop(p)
    tier_failover()
finally:
    for p in group.procs + group.stores + (tier_group[0].procs + tier_group[0].stores
                                           if tier_group else []):
        if p is not None:
            stop(p)
    etcd.stop()
finish()
