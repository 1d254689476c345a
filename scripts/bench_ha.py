#!/usr/bin/env python3
"""Benchmark of master high availability (issue 32, point 7), on loopback.

  MOONCAKE_BIN=build/src/cli/mooncake python3 scripts/bench_ha.py \
      [--cycles 20] [--ttl 2] [--seconds 5] [--threads 16,64,256] [--batch 1] [--size-rounds 12] \
      [--entries-in-flight 1,4] [--before-bin OLD/mooncake] [--repeat 2] \
      [--variant 'NAME=MASTER FLAGS ENV=V etcd:ETCD-FLAG etcd:ENV=V' ...] \
      [--parts throughput,failover,size]

Prints its setup, then
  1. small-object put throughput (mooncake bench --op put, 4 KiB values) for
     each --threads count (the curve: group commit should hold as writers
     grow): a single master with its SQLite journal, fsync everysec (the
     default) and fsync always, beside an HA group (three-member etcd, two
     masters; etcd 3.4 fsyncs its WAL on every commit, on each member, and
     has no switch to stop it) for each --entries-in-flight, same machine,
     same run, the load beside each figure, each run on a full pool (--fill:
     puts that evict, the steady state); with --before-bin, the HA groups
     again with that binary (masters, store and bench), so a change is
     measured against the old build in one run; with --repeat N every
     configuration N times, every other round in reverse order, and the
     median printed (a drifting load weighs on all alike); with --variant,
     more HA groups of the new build with other master flags or
     environment, or on an etcd of their own started with other settings;
     then, per group and thread
     count, where the HA commit time goes: the leader's queue wait and etcd
     txn time (its /metrics; per entry, the median and 99th percentile of
     the etcd txn and of the wait from its first change queued to its
     release, as the bounds of its histograms' buckets; the entry's bytes
     as encoded and as etcd got them, deflated by default), etcd's WAL fsync and backend commit times (the
     members' /metrics: the mean, and the slowest as a bucket bound), entries/s and how many entries were cut at each
     pipeline depth, and the CPU etcd, the leader, the standby, the store and
     the bench client spent (per second, per log entry, per put; the single
     master's per put too);
  2. failover time: kill -9 of the leader to the first successful put (a
     fresh `mooncake put` in a loop, through etcd://), over --cycles cycles,
     p50 and p99;
  3. etcd's database size over a long put run on a small pool (64 MiB, a
     group on a fresh etcd of its own), where
     eviction removes as fast as puts add (a steady put/remove load on the
     log), sampled after each round: with snapshots trimming the log and
     compacting etcd's history it levels off.
Each pool is backed by 2 MiB huge pages, reserved here when run as root
(--hugepages auto), as the README asks of benchmarks: with 4 KiB pages each
bench client faults the whole segment in during its timed run, about 10 us a
page on a VM, which is no part of what a put costs once a client is warm
(the single master's puts/s rose by about a quarter with huge pages, the HA
group's by under a tenth: 2 cores, 16 writers of 32 keys, 2026-11-28).
Every process is started here on 127.0.0.1 and stopped by its pid.
"""
import argparse
import atexit
import json
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from harness import free_port, http, run, start, stop, tempdir, wait_http, wait_until  # noqa: E402
from ha_cluster import Etcd, HaGroup  # noqa: E402
from cluster import Cluster  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--cycles", type=int, default=20)
ap.add_argument("--ttl", type=int, default=2)
ap.add_argument("--seconds", type=int, default=5)
ap.add_argument("--threads", default="16",
                help="writer threads of the throughput runs, comma separated (the curve); "
                     "the size run uses the first")
ap.add_argument("--batch", type=int, default=1,
                help="keys per put call of the throughput runs (engines put a request's blocks "
                     "with one batch_put_from; 1: single-key puts)")
ap.add_argument("--size-rounds", type=int, default=12)
ap.add_argument("--fill", type=float, default=1.25,
                help="before each timed throughput run, put this many times the objects the "
                     "pool holds (untimed), so that the run starts with the pool full and every "
                     "put evicts, as in a steady state; 0: start each run on an empty pool")
ap.add_argument("--snapshot-every", type=int, default=1000)
ap.add_argument("--entries-in-flight", default="1,4",
                help="HA log entries in flight ([ha] entries_in_flight) to measure throughput "
                     "with, comma separated; failover and size use the last")
ap.add_argument("--throughput-ttl", type=int, default=5,
                help="HA lease of the throughput groups (the default's 5 s: at hundreds of writers "
                     "on a loaded host a 2 s lease runs out and the bench measures failovers)")
ap.add_argument("--repeat", type=int, default=1,
                help="throughput runs of every configuration, every other one in reverse order")
ap.add_argument("--before-bin", default="",
                help="a mooncake binary of the old build: its HA groups are measured too")
ap.add_argument("--variant", action="append", default=[],
                help="LABEL=ARGS: one more HA group of the new build, its masters started with "
                     "ARGS (master flags; NAME=VALUE words are put in their environment; words "
                     "starting etcd: go to an etcd of the group's own, as its flags or "
                     "environment, etcd:members=N its member count, default 3), e.g. "
                     "'deep=--ha-entries-in-flight 8 etcd:GOMAXPROCS=1'; "
                     "repeatable")
ap.add_argument("--etcd-leader", type=int, default=-1,
                help="make this etcd member (0-2; the masters list member 0 first) etcd's raft "
                     "leader before the runs (default: as elected, printed)")
ap.add_argument("--hugepages", choices=["auto", "off"], default="auto",
                help="auto: when run as root, reserve enough 2 MiB huge pages for one throughput "
                     "pool in /proc/sys/vm/nr_hugepages (as a deployment would, see "
                     "mooncake-store(1)) and put the old value back at exit; off: leave the "
                     "system as it is (stores then fall back to 4 KiB pages, and each bench "
                     "client faults the segment in page by page during its timed run)")
ap.add_argument("--parts", default="throughput,failover,size",
                help="which parts to run, comma separated")
args = ap.parse_args()
parts = set(args.parts.split(","))
thread_counts = [int(t) for t in args.threads.split(",")]

POOL_BYTES = 512 << 20  # each throughput cluster's one store
POOL = f"{POOL_BYTES >> 20}mb"
POOL_OBJECTS = POOL_BYTES // 4096  # of the 4 KiB values the puts write


def reserve_hugepages():
    """Reserves 2 MiB pages for one throughput pool (plus a few for
    rounding) if fewer are free; returns (free pages, pages wanted). The old
    reservation is put back at exit."""
    def free():
        for line in open("/proc/meminfo"):
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
        return 0
    want = POOL_BYTES // (2 << 20) + 8
    have = free()
    if args.hugepages == "auto" and have < want and os.access("/proc/sys/vm/nr_hugepages", os.W_OK):
        path = "/proc/sys/vm/nr_hugepages"
        before = int(open(path).read())
        try:
            with open(path, "w") as f:
                f.write(str(before + want - have))
        except OSError:
            pass

        def restore():
            with open(path, "w") as f:
                f.write(str(before))
        atexit.register(restore)
    return free(), want


HUGE_FREE, HUGE_WANT = reserve_hugepages()
print(f"bench_ha: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; etcd 3 members on loopback; HA lease {args.throughput_ttl} s "
      f"(throughput), {args.ttl} s (failover, size); "
      f"puts of 4 KiB by {args.threads} threads, {args.batch} keys a call, for {args.seconds} s; {args.cycles} failover "
      f"cycles; snapshot every {args.snapshot_every} entries; "
      + f"huge pages free: {HUGE_FREE} of 2 MiB (a pool needs {HUGE_WANT}; --hugepages {args.hugepages}); "
      + (f"each throughput run starts on a full pool ({args.fill:g}x its {POOL_OBJECTS} objects put "
         f"first, untimed)" if args.fill > 0 else "each throughput run starts on an empty pool"))
sys.stdout.flush()


def fill_pool(env, threads):
    """Puts --fill times the pool's objects (4 KiB values), untimed: a pool
    that is not full yet takes puts without evicting, and the first seconds
    of a run on an empty pool measure a cheaper load than the one that
    lasts (on the HA log, every eviction is one more record)."""
    if args.fill <= 0:
        return
    r, _ = run_put(env, threads, ["--ops", str(int(POOL_OBJECTS * args.fill))], 600)
    if r.returncode != 0:
        print(f"filling the pool failed: {r.stderr.decode()[-500:]}")


def run_put(env, threads, how_long, timeout):
    """`mooncake bench --op put` of 4 KiB values, hashed key names, for
    `how_long` (its --duration or --ops words); the result and its JSON path."""
    out = os.path.join(tempdir("mc-bench-ha-"), "put.json")
    r = run(["bench", "--op", "put", "--value-size", "4kb", "--threads", str(threads),
             "--batch", str(args.batch), "--key-names", "hashed"] + how_long + ["--json", out],
            env=env, timeout=timeout)
    return r, out


def bench_put(env, seconds, label, threads=None):
    threads = threads or thread_counts[0]
    r, out = run_put(env, threads, ["--duration", f"{seconds}s", "--keys", "100000"], seconds + 120)
    if r.returncode != 0:
        print(f"{label}: bench failed: {r.stderr.decode()[-500:]}")
        return 0.0, 0.0, 0.0
    res = json.load(open(out))["results"][0]
    if res.get("errors"):
        print(f"{label}: {res['errors']} puts failed")
    return res["ops_per_s"], res["latency_us"]["p50"], res["latency_us"]["p99"]


def load():
    return f"load {os.getloadavg()[0]:.1f}"


def prom(text, names):
    """Sums of the Prometheus samples named in `names` (labels ignored,
    unless a name carries them: then that sample alone)."""
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        full = line.rsplit(None, 1)[0]
        name = full.split("{")[0]
        for n in (full, name) if full != name else (name,):
            if n in out:
                out[n] += float(line.split()[-1])
                break
    return out


ETCD_METRICS = ["etcd_disk_wal_fsync_duration_seconds_sum",
                "etcd_disk_wal_fsync_duration_seconds_count",
                "etcd_disk_backend_commit_duration_seconds_sum",
                "etcd_disk_backend_commit_duration_seconds_count",
                "etcd_server_proposals_committed_total"]
# etcd's own disk histograms (exponential buckets from 1 ms).
ETCD_BOUNDS = ["0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256",
               "0.512", "1.024", "2.048", "4.096", "8.192", "+Inf"]
ETCD_HISTS = ["etcd_disk_wal_fsync_duration_seconds", "etcd_disk_backend_commit_duration_seconds"]
ETCD_METRICS += [f'{h}_bucket{{le="{b}"}}' for h in ETCD_HISTS for b in ETCD_BOUNDS]
HA_METRICS = ["master_ha_log_entries_total", "master_ha_log_records_total",
              "master_ha_commit_seconds_total", "master_ha_queue_wait_seconds_total",
              "master_ha_encode_seconds_total", "master_ha_entries_in_flight_max",
              "master_ha_compress_seconds_total", "master_ha_log_plain_bytes_total",
              "master_ha_log_bytes_total"]
# The leader's latency histograms (masterd::SecondsHistogram's bounds).
LATENCY_BOUNDS = ["0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1",
                  "2", "5", "+Inf"]
LATENCY_HISTS = ["master_ha_commit_latency_seconds", "master_ha_durable_latency_seconds"]
HA_METRICS += [f'{h}_bucket{{le="{b}"}}' for h in LATENCY_HISTS for b in LATENCY_BOUNDS]
MAX_IN_FLIGHT = 64  # kMaxHaEntriesInFlight
CUTS = [f'master_ha_entries_cut_total{{in_flight="{n}"}}' for n in range(1, MAX_IN_FLIGHT + 1)]


def cpu_seconds(procs):
    """User plus system CPU seconds the live processes `procs` used so far."""
    total = 0.0
    for p in procs:
        try:
            fields = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, AttributeError, IndexError):
            pass
    return total


def etcd_metrics(etcd):
    """Per member, the etcd metrics above."""
    out = []
    for port in etcd.client_ports:
        try:
            out.append(prom(http("GET", f"http://127.0.0.1:{port}/metrics", timeout=5)[1].decode(),
                            ETCD_METRICS))
        except OSError:
            out.append(dict.fromkeys(ETCD_METRICS, 0.0))
    return out


def ha_metrics(group):
    leader = group.leader(10)
    return prom(group.admin(leader, "/metrics")[1].decode(), HA_METRICS + CUTS) \
        if leader is not None else dict.fromkeys(HA_METRICS + CUTS, 0.0)


def children_cpu():
    """CPU seconds of this script's finished children (the bench runs)."""
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bucket_quantile(d, hist, q, bounds=LATENCY_BOUNDS):
    """The upper bound of the bucket holding quantile q (1: the largest
    observation) of histogram `hist` in the deltas `d` ("-" when empty)."""
    total = d[f'{hist}_bucket{{le="+Inf"}}']
    if total <= 0:
        return "-"
    for b in bounds:
        if d[f'{hist}_bucket{{le="{b}"}}'] >= q * total:
            return f"above {float(bounds[-2]):g} s" if b == "+Inf" else f"<= {float(b) * 1000:g} ms"
    return "-"


def where_the_time_goes(ha0, ha1, etcd0, etcd1, cpu, puts):
    """cpu: CPU seconds of (etcd members, leader, standbys, stores, bench client)."""
    d = {k: ha1[k] - ha0[k] for k in HA_METRICS + CUTS}
    entries = max(d["master_ha_log_entries_total"], 1)
    cuts = [d[c] for c in CUTS]
    while cuts and cuts[-1] == 0:
        cuts.pop()
    print(f"  HA leader: {d['master_ha_log_entries_total'] / args.seconds:.0f} entries/s, "
          f"{puts / args.seconds:.0f} puts/s; entries cut with n in flight (n=1..): "
          f"{' '.join(f'{c:.0f}' for c in cuts) or '-'}; CPU seconds per second: etcd "
          f"{cpu[0] / args.seconds:.2f}, leader {cpu[1] / args.seconds:.2f}, standby "
          f"{cpu[2] / args.seconds:.2f}, store {cpu[3] / args.seconds:.2f}, bench client "
          f"{cpu[4] / args.seconds:.2f}")
    print(f"  HA leader: {d['master_ha_log_entries_total']:.0f} entries, "
          f"{d['master_ha_log_records_total'] / entries:.1f} records/entry, "
          f"etcd txn {d['master_ha_commit_seconds_total'] * 1000 / entries:.2f} ms/entry, "
          f"queue wait {d['master_ha_queue_wait_seconds_total'] * 1000 / entries:.2f} ms/entry, "
          f"encode {d['master_ha_encode_seconds_total'] * 1e6 / entries:.0f} us/entry, "
          f"{d['master_ha_log_plain_bytes_total'] / entries:.0f} bytes/entry as encoded, "
          f"{d['master_ha_log_bytes_total'] / entries:.0f} to etcd "
          f"(deflating {d['master_ha_compress_seconds_total'] * 1e6 / entries:.0f} us/entry), "
          f"most entries in flight {ha1['master_ha_entries_in_flight_max']:.0f}; "
          f"CPU per entry: etcd (all members) {cpu[0] * 1000 / entries:.2f} ms, "
          f"leader {cpu[1] * 1000 / entries:.2f} ms; CPU per put: etcd "
          f"{cpu[0] * 1e6 / max(puts, 1):.0f} us, leader {cpu[1] * 1e6 / max(puts, 1):.0f} us")
    print("  HA leader, per entry (bucket bounds of its histograms): etcd txn p50 "
          f"{bucket_quantile(d, LATENCY_HISTS[0], 0.5)}, p99 {bucket_quantile(d, LATENCY_HISTS[0], 0.99)}; "
          f"first change queued to released p50 {bucket_quantile(d, LATENCY_HISTS[1], 0.5)}, "
          f"p99 {bucket_quantile(d, LATENCY_HISTS[1], 0.99)}")
    for i, (a, b) in enumerate(zip(etcd0, etcd1)):
        n = {k: b[k] - a[k] for k in ETCD_METRICS}
        fs = max(n["etcd_disk_wal_fsync_duration_seconds_count"], 1)
        bc = max(n["etcd_disk_backend_commit_duration_seconds_count"], 1)
        print(f"  etcd member {i}: {n['etcd_disk_wal_fsync_duration_seconds_count']:.0f} WAL fsyncs "
              f"of {n['etcd_disk_wal_fsync_duration_seconds_sum'] * 1000 / fs:.2f} ms, "
              f"{n['etcd_disk_backend_commit_duration_seconds_count']:.0f} backend commits of "
              f"{n['etcd_disk_backend_commit_duration_seconds_sum'] * 1000 / bc:.2f} ms, "
              f"{n['etcd_server_proposals_committed_total']:.0f} proposals committed; WAL fsync "
              f"p99 {bucket_quantile(n, ETCD_HISTS[0], 0.99, ETCD_BOUNDS)}, slowest "
              f"{bucket_quantile(n, ETCD_HISTS[0], 1, ETCD_BOUNDS)}; slowest backend commit "
              f"{bucket_quantile(n, ETCD_HISTS[1], 1, ETCD_BOUNDS)}")


def use_bin(path):
    """Makes start() and run() use the mooncake binary `path` (the e2e
    harness reads its BIN at each call)."""
    import harness
    harness.BIN = path


# ---- 1. throughput: single durable master (fsync everysec and always) vs HA ----
etcd = Etcd(members=3)
if args.etcd_leader >= 0 and not etcd.move_leader(args.etcd_leader):
    sys.exit(f"bench_ha: etcd member {args.etcd_leader} did not become etcd's raft leader")
print(f"etcd's raft leader: member {etcd.raft_leader()} (the masters list member 0 first)")
sys.stdout.flush()
depths = [int(d) for d in args.entries_in_flight.split(",")]


def split_words(words):
    """NAME=VALUE environment words and the flags among `words`."""
    def is_env(w):
        return "=" in w and not w.startswith("-")
    return dict(w.split("=", 1) for w in words if is_env(w)), [w for w in words if not is_env(w)]


GROUPS_STARTED = [0]


def new_group(depth, cluster, variant=(), on=None):
    """An HA group on etcd `on` (the shared one by default) with `depth`
    entries in flight, its masters started with the master flags and
    NAME=VALUE environment words of `variant`. Each group gets a cluster
    name of its own: a repeat under the same name would take over the last
    round's log, whose objects (on a store now gone) its leader then
    removes, record by record, while the bench runs."""
    GROUPS_STARTED[0] += 1
    cluster = f"{cluster}-{GROUPS_STARTED[0]}"
    env, flags = split_words(variant)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        g = HaGroup(on or etcd, masters=2, ttl=args.throughput_ttl, cluster=cluster,
                    extra=([] if "--ha-snapshot-every" in flags
                           else ["--ha-snapshot-every", str(args.snapshot_every)]) +
                    ([] if "--ha-entries-in-flight" in flags
                     else ["--ha-entries-in-flight", str(depth)]) + flags)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    g.add_store(POOL)
    wait_until(lambda: len(g.segments()) == 1, 20)
    return g


def stop_group(g):
    for p in g.procs + g.stores:
        if p is not None:
            stop(p)


def single_row(mode):
    single = Cluster(stores=1, segment=POOL, data_dir=tempdir("mc-bench-ha-single-"),
                     extra_master=["--fsync", mode])
    out = {}
    for t in thread_counts:
        fill_pool(single.env, t)
        cpu0 = (cpu_seconds([single.master]), cpu_seconds(single.stores), children_cpu())
        out[t] = bench_put(single.env, args.seconds, "single", t) + (load(),)
        cpu = [b - a for a, b in zip(cpu0, (cpu_seconds([single.master]),
                                            cpu_seconds(single.stores), children_cpu()))]
        puts = max(out[t][0] * args.seconds, 1)
        print(f"\nsingle, fsync {mode}, {t} threads ({out[t][0]:.0f} puts/s, p50 "
              f"{out[t][1] / 1000:.1f} ms, p99 {out[t][2] / 1000:.1f} ms, {out[t][3]}): CPU "
              f"seconds per second: master {cpu[0] / args.seconds:.2f}, store "
              f"{cpu[1] / args.seconds:.2f}, bench client {cpu[2] / args.seconds:.2f}; per put: "
              f"master {cpu[0] * 1e6 / puts:.0f} us")
        sys.stdout.flush()
    single.stop()
    return out


def ha_row(depth, label, cluster, variant=()):
    """A row of HA groups; `variant`'s words that start with etcd: are the
    flags and environment of an etcd of its own (GOMAXPROCS=1,
    --backend-batch-interval=1s), started for this row and stopped after."""
    own = [w[len("etcd:"):] for w in variant if w.startswith("etcd:")]
    members = [int(w.split("=", 1)[1]) for w in own if w.startswith("members=")]
    own = [w for w in own if not w.startswith("members=")]
    on = etcd
    if own or members:
        env, flags = split_words(own)
        on = Etcd(members=members[-1] if members else 3, extra=flags, env=env)
    g = new_group(depth, cluster, [w for w in variant if not w.startswith("etcd:")], on)
    out = ha_rows(g, on, label)
    stop_group(g)
    if on is not etcd:
        on.stop()
    return out


def ha_rows(g, etcd, label):
    """Per thread count, the HA group `g`'s throughput on `etcd` and where its
    time went."""
    leader = g.procs[g.leader(10)]
    standbys = [p for p in g.procs if p is not None and p is not leader]

    def cpu():
        return (cpu_seconds(etcd.procs), cpu_seconds([leader]), cpu_seconds(standbys),
                cpu_seconds(g.stores), children_cpu())
    out = {}
    for t in thread_counts:
        fill_pool(g.env, t)
        ha0, etcd0 = ha_metrics(g), etcd_metrics(etcd)
        cpu0 = cpu()
        ops, p50, p99 = bench_put(g.env, args.seconds, "ha", t)
        out[t] = (ops, p50, p99, load())
        cpu1 = cpu()
        ha1, etcd1 = ha_metrics(g), etcd_metrics(etcd)
        print(f"\n{label}, {t} threads ({ops:.0f} puts/s, p50 {p50 / 1000:.1f} ms, "
              f"p99 {p99 / 1000:.1f} ms, {load()}): where the time goes")
        where_the_time_goes(ha0, ha1, etcd0, etcd1, tuple(b - a for a, b in zip(cpu0, cpu1)),
                            ops * args.seconds)
        sys.stdout.flush()
    return out


def print_table(results):
    """results: [(label, [{threads: (ops, p50, p99, load)} per repeat])]."""
    def mid(runs, t):  # the median: one run disturbed by the shared host weighs less
        return statistics.median(r[t][0] for r in runs)
    print(f"\nput 4 KiB, ops/s per writer threads (median of {args.repeat}: each run's ops/s and "
          f"load in brackets)")
    print(f"{'':26s}" + "".join(f"{t:>30d}" for t in thread_counts))
    for label, runs in results:
        cells = []
        for t in thread_counts:
            each = "/".join(f"{r[t][0]:.0f} L{r[t][3].split()[-1]}" for r in runs)
            cells.append(f"{mid(runs, t):>7.0f} ({each})")
        print(f"{label:26s}" + "".join(f"{c:>30s}" for c in cells))
    singles = [(label, runs) for label, runs in results if label.startswith("single")]
    for label, runs in results:
        if label.startswith("single"):
            continue
        for slabel, sruns in singles:
            print(f"{label} / {slabel}: " + ", ".join(
                f"{mid(runs, t) / mid(sruns, t):.2f} ({t} threads)" if mid(sruns, t) else "-"
                for t in thread_counts))
    sys.stdout.flush()


if "throughput" in parts:
    import harness
    builds = [("", harness.BIN)]
    if args.before_bin:
        builds.append(("before, ", args.before_bin))
    configs = [(f"single, fsync {mode}", lambda mode=mode: single_row(mode))
               for mode in ("everysec", "always")]
    for depth in depths:
        for tag, binary in builds:
            label = f"HA, {tag}{depth} in flight"
            configs.append((label, lambda depth=depth, label=label, tag=tag, binary=binary: (
                use_bin(binary), ha_row(depth, label, f"bench-{depth}-{len(tag)}"))[1]))
    for n, spec in enumerate(args.variant):
        name, _, words = spec.partition("=")
        label = f"HA, {name}"
        configs.append((label, lambda label=label, words=words.split(), n=n: ha_row(
            depths[-1], label, f"bench-variant-{n}", words)))
    results = {label: [] for label, _ in configs}
    # Repeats run the configurations in reverse order every other time, so
    # a load that drifts over the run weighs on all of them alike.
    for rep in range(args.repeat):
        for label, run_config in (configs if rep % 2 == 0 else configs[::-1]):
            use_bin(builds[0][1])
            results[label].append(run_config())
    use_bin(builds[0][1])
    print_table([(label, results[label]) for label, _ in configs])

group = HaGroup(etcd, masters=2, ttl=args.ttl,
                extra=["--ha-snapshot-every", str(args.snapshot_every),
                       "--ha-entries-in-flight", str(depths[-1])])
if "failover" in parts:
    group.add_store("512mb")
    wait_until(lambda: len(group.segments()) == 1, 20)

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
    print(f"cycle {cycle}: {took:.3f} s   {load()}")
    sys.stdout.flush()
    group.start_master(leader)
    wait_until(lambda: group.role(leader) == "standby", 20)
if times:
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    print(f"\nfailover (kill -9 to first put), {len(times)} cycles, lease {args.ttl} s: "
          f"p50 {statistics.median(times):.3f} s, p99 {p99:.3f} s, max {times[-1]:.3f} s")
sys.stdout.flush()

stop_group(group)

# ---- 3. etcd size over a long put run with eviction ----
# On an etcd and a group of their own: the shared etcd still holds the
# throughput groups' logs and snapshots (each under its own cluster name),
# and the failover group's 512 MiB store would make the pool 576 MiB.
if "size" in parts:
    etcd.stop()
    etcd = Etcd(members=3)
    group = HaGroup(etcd, masters=2, ttl=args.ttl,
                    extra=["--ha-snapshot-every", str(args.snapshot_every),
                           "--ha-entries-in-flight", str(depths[-1])])
    print("\netcd database size during a steady put/evict load (64 MiB pool, 4 KiB values; "
          "a fresh etcd)")
    group.add_store("64mb")
    wait_until(lambda: len(group.segments()) == 1, 20)
    print("round  puts/s   etcd db bytes   in use bytes   keys in the pool")
    for rnd in range(args.size_rounds):
        ops, _, _ = bench_put(group.env, args.seconds, "size")
        leader = group.leader(10)
        keys = group.admin(leader, "/metrics")[1].decode() if leader is not None else ""
        keys = next((l.split()[1] for l in keys.splitlines()
                     if l.startswith("master_key_count ")), "?")
        size, in_use = etcd.db_size()
        print(f"{rnd:5d} {ops:8.0f} {size:15d} {in_use:14d}   {keys:>8}   {load()}")
        sys.stdout.flush()
    stop_group(group)
etcd.stop()
