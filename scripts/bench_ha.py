#!/usr/bin/env python3
"""Benchmark of master high availability (issue 32, point 7), on loopback.

  MOONCAKE_BIN=build/src/cli/mooncake python3 scripts/bench_ha.py \
      [--cycles 20] [--ttl 2] [--seconds 5] [--threads 8] [--size-rounds 12]

Prints its setup, then
  1. small-object put throughput (mooncake bench --op put, 4 KiB values):
     a single master with its SQLite journal (fsync everysec, the default)
     beside an HA group (three-member etcd, two masters), same machine, same
     run;
  2. failover time: kill -9 of the leader to the first successful put (a
     fresh `mooncake put` in a loop, through etcd://), over --cycles cycles,
     p50 and p99;
  3. etcd's database size over a long put run on a small pool, where
     eviction removes as fast as puts add (a steady put/remove load on the
     log), sampled after each round: with snapshots trimming the log and
     compacting etcd's history it levels off.
Every process is started here on 127.0.0.1 and stopped by its pid.
"""
import argparse
import json
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from harness import free_port, run, start, stop, tempdir, wait_http, wait_until  # noqa: E402
from ha_cluster import Etcd, HaGroup  # noqa: E402
from cluster import Cluster  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--cycles", type=int, default=20)
ap.add_argument("--ttl", type=int, default=2)
ap.add_argument("--seconds", type=int, default=5)
ap.add_argument("--threads", type=int, default=8)
ap.add_argument("--size-rounds", type=int, default=12)
ap.add_argument("--snapshot-every", type=int, default=1000)
ap.add_argument("--parts", default="throughput,failover,size",
                help="which parts to run, comma separated")
args = ap.parse_args()
parts = set(args.parts.split(","))

print(f"bench_ha: {os.cpu_count()} cpus; etcd 3 members on loopback; HA lease {args.ttl} s; "
      f"puts of 4 KiB by {args.threads} threads for {args.seconds} s; {args.cycles} failover "
      f"cycles; snapshot every {args.snapshot_every} entries")
sys.stdout.flush()


def bench_put(env, seconds, label):
    out = os.path.join(tempdir("mc-bench-ha-"), "put.json")
    r = run(["bench", "--op", "put", "--value-size", "4kb", "--threads", str(args.threads),
             "--duration", f"{seconds}s", "--keys", "100000", "--key-names", "hashed",
             "--json", out], env=env, timeout=seconds + 120)
    if r.returncode != 0:
        print(f"{label}: bench failed: {r.stderr.decode()[-500:]}")
        return 0.0, 0.0, 0.0
    res = json.load(open(out))["results"][0]
    return res["ops_per_s"], res["latency_us"]["p50"], res["latency_us"]["p99"]


# ---- 1. throughput: single durable master vs HA ----
s_ops = s_p50 = s_p99 = 0.0
if "throughput" in parts:
    single = Cluster(stores=1, segment="512mb", data_dir=tempdir("mc-bench-ha-single-"))
    s_ops, s_p50, s_p99 = bench_put(single.env, args.seconds, "single")
    single.stop()

etcd = Etcd(members=3)
group = HaGroup(etcd, masters=2, ttl=args.ttl, extra=["--ha-snapshot-every",
                                                        str(args.snapshot_every)])
if "throughput" in parts or "failover" in parts:
    group.add_store("512mb")
    wait_until(lambda: len(group.segments()) == 1, 20)
if "throughput" in parts:
    h_ops, h_p50, h_p99 = bench_put(group.env, args.seconds, "ha")
    print("\nput 4 KiB          ops/s    p50 us    p99 us")
    print(f"single durable {s_ops:9.0f} {s_p50:9.0f} {s_p99:9.0f}")
    print(f"HA (etcd)      {h_ops:9.0f} {h_p50:9.0f} {h_p99:9.0f}")
    print(f"HA / single: {h_ops / s_ops:.2f}" if s_ops else "HA / single: n/a")
    sys.stdout.flush()

# ---- 2. failover time ----
times = []
for cycle in range(args.cycles if "failover" in parts else 0):
    leader = group.leader(30)
    if leader is None:
        print(f"cycle {cycle}: no leader")
        break
    t0 = time.monotonic()
    stop(group.procs[leader], signal.SIGKILL)
    n = 0
    while True:
        n += 1
        r = run(["put", f"failover-{cycle}-{n}", "-"], input=b"x", env=group.env, timeout=60)
        if r.returncode == 0:
            break
        if time.monotonic() - t0 > 60:
            break
    took = time.monotonic() - t0
    times.append(took)
    print(f"cycle {cycle}: {took:.3f} s")
    sys.stdout.flush()
    group.start_master(leader)
    wait_until(lambda: group.role(leader) == "standby", 20)
if times:
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    print(f"\nfailover (kill -9 to first put), {len(times)} cycles, lease {args.ttl} s: "
          f"p50 {statistics.median(times):.3f} s, p99 {p99:.3f} s, max {times[-1]:.3f} s")
sys.stdout.flush()

# ---- 3. etcd size over a long put run with eviction ----
print("\netcd database size during a steady put/evict load (64 MiB pool, 4 KiB values)")
small = group.add_store("64mb")
print("round  puts/s   etcd db bytes   in use bytes   keys in the pool")
for rnd in range(args.size_rounds if "size" in parts else 0):
    ops, _, _ = bench_put(group.env, args.seconds, "size")
    leader = group.leader(10)
    keys = group.admin(leader, "/metrics")[1].decode() if leader is not None else ""
    keys = next((l.split()[1] for l in keys.splitlines() if l.startswith("master_key_count ")),
                "?")
    size, in_use = etcd.db_size()
    print(f"{rnd:5d} {ops:8.0f} {size:15d} {in_use:14d}   {keys}")
    sys.stdout.flush()

for p in group.procs + group.stores:
    if p is not None:
        stop(p)
etcd.stop()
