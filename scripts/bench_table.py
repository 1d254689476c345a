#!/usr/bin/env python3
"""Markdown table of a bench_suite.sh run: the machine, then medians of the
runs' `mooncake bench --json` files per workload. Called by bench_suite.sh:

  bench_table.py WORKDIR RUNS DURATION STARTED LOAD_START LOAD_END TRACE BLOCK_SIZE LEASE
                 TRACE_RUNS THREADS

It also copies the printed reports of bench_dataplane.sh and
bench_master_scale.sh (dataplane.txt and scale.txt in WORKDIR) when the
suite ran them.
"""
import glob
import json
import os
import platform
import statistics
import sys

work, runs, duration, started, load_start, load_end, trace, block_size, lease, trace_runs, threads = \
    sys.argv[1:12]


def machine():
    model = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kb = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
    return (f"{model}, {os.cpu_count()} cores, {mem_kb / 1024 / 1024:.1f} GiB RAM, "
            f"Linux {platform.release()}; load average (1/5/15 min) {load_start} at the start, "
            f"{load_end} at the end; {started}")


def load(name):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, f"{name}.*.json")))]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def row_of(doc, target, op):
    return next((r for r in doc["results"] if r["target"] == target and r["op"] == op), None)


def fig(docs, target, op, f):
    return med([f(r) for r in (row_of(d, target, op) for d in docs) if r])


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


hit_pct = lambda r: 100.0 * r["hits"] / r["ops"] if r["ops"] else 0.0
keys_per_s = lambda r: r["hits"] / r["seconds"] if r["seconds"] else 0.0

print("## Performance\n")
print(f"Measured by `scripts/bench_suite.sh` on: {machine()}.\n")
def workload_tables():
    print(f"Each figure is the median of {runs} runs of {duration} per operation, every run on a fresh "
          "local cluster (master + one store on 127.0.0.1) and a fresh local redis-server, after an "
          "unmeasured put pass that writes the pool twice over; the pool is full and evicting while measured. "
          "Ops count keys (a batch of 32 is 32 ops); latency is per call. `ratio` is mooncake over Redis "
          "in keys stored or found per second. The store backs its segment with huge pages when the "
          "system has them reserved (the suite reserves them when run as root, see mooncake-store(1)); "
          "the page kind each store got is beside the transfer path.\n")
    print("| workload | persistence: mooncake / redis | op | mooncake keys/s | mooncake GB/s | p50 us "
          "| p99 us | hit % | redis keys/s | redis GB/s | redis p50 us | redis p99 us | ratio |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    persistence = {"none": "--data-dir none / none",
                   "everysec": "--fsync everysec / AOF everysec",
                   "always": "--fsync always / AOF everysec"}
    small = f"4 KiB, batch 32, {threads} threads"
    cases = [("put_get_4m_same_host", "4 MiB, same-host"), ("put_get_4m_tcp", "4 MiB, TCP (--no-shm)")]
    for mode in ("everysec", "always", "none"):
        cases += [(f"put_get_4k_b32_{mode}", small),
                  (f"put_get_4k_b32_tcp_{mode}", small + ", TCP (--no-shm)")]
    cases += [("put_get_4m_same_host_small", "4 MiB, same-host, store --no-hugepages"),
              ("put_get_4m_tcp_small", "4 MiB, TCP (--no-shm), store --no-hugepages")]
    for name, label in cases:
        docs = load(name)
        if not docs:
            continue
        path = docs[0]["setup"].get("transfer_path", "?")
        pages = sorted({open(f).read().strip() or "?"
                        for f in glob.glob(os.path.join(work, f"{name}.*.pages"))})
        if pages:
            path += "; " + "/".join(pages) + " pages"
        modes = sorted({open(f).read().strip()
                        for f in glob.glob(os.path.join(work, f"{name}.*.persistence"))})
        persist = "/".join(persistence.get(m, m) for m in modes) or "?"
        for op in ("put", "get"):
            cells = [f"{label} ({path})", persist, op]
            for target in ("mooncake", "redis"):
                cells += [fmt(fig(docs, target, op, keys_per_s), ",.0f"),
                          fmt(fig(docs, target, op, lambda r: r["bytes_per_s"] / 1e9), ".2f"),
                          fmt(fig(docs, target, op, lambda r: r["latency_us"]["p50"]), ".0f"),
                          fmt(fig(docs, target, op, lambda r: r["latency_us"]["p99"]), ".0f")]
                if target == "mooncake":
                    cells.append(fmt(fig(docs, target, op, hit_pct), ".1f"))
            cells.append(fmt(fig(docs, "redis", op, lambda r: r.get("mooncake_ratio")), ".2f") + "x")
            print("| " + " | ".join(cells) + " |")

    print("\nMaster alone (`--metadata-only`, 4 KiB allocations): put is PutStart + PutEnd per key, "
          "get is GetReplicaList; `--threads N` is N connections.\n")
    print("| connections | batch | put keys/s | put p50 us | put p99 us | get keys/s | get p50 us | get p99 us |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in (1, 8):
        for b in (1, 32):
            docs = load(f"metadata_t{t}_b{b}")
            if not docs:
                continue
            cells = [str(t), str(b)]
            for op in ("put", "get"):
                cells += [fmt(fig(docs, "mooncake", op, lambda r: r["ops_per_s"]), ",.0f"),
                          fmt(fig(docs, "mooncake", op, lambda r: r["latency_us"]["p50"]), ".0f"),
                          fmt(fig(docs, "mooncake", op, lambda r: r["latency_us"]["p99"]), ".0f")]
            print("| " + " | ".join(cells) + " |")


BATCH = 32  # the suite's small workloads


def gets_table():
    """Issue 33's goals: gets of the default durable master against Redis on
    both paths, puts too, and the master's get RPCs per client get call."""
    rows = [("put_get_4k_b32_everysec", "same-host", 1.2),
            ("put_get_4k_b32_tcp_everysec", "TCP (--no-shm)", 1.0)]
    if not any(load(name) for name, _, _ in rows):
        return
    print("Gets of the default durable master (`--fsync everysec`) beside Redis (AOF everysec), "
          f"4 KiB values, batch {BATCH}, {threads} threads: medians of each case's runs, every run "
          "side by side on a fresh cluster and redis; each run's ratio in brackets. Master get RPCs "
          "per get call: GetReplicaList + BatchGetReplicaList requests the master counted during "
          "the run over the client's get calls (a batch is one call); below 1 the rest were "
          "direct reads in one round trip.\n")
    print("| path | get ratio (goal) | put ratio (goal 1.0x) | mooncake get keys/s | redis get keys/s "
          "| master get RPCs per get call | runs |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for name, label, goal in rows:
        docs = load(name)
        if not docs:
            continue
        ratios = {op: [r.get("mooncake_ratio") for r in (row_of(d, "redis", op) for d in docs) if r]
                  for op in ("get", "put")}
        per_call = []
        for i, d in enumerate(docs, 1):
            rpcs = os.path.join(work, f"{name}.{i}.rpcs")
            row = row_of(d, "mooncake", "get")
            if os.path.exists(rpcs) and row and row["ops"]:
                per_call.append(int(open(rpcs).read()) / (row["ops"] / BATCH))
        runs_of = lambda v: ", ".join(f"{x:.2f}" for x in v if x is not None)
        print(f"| {label} | {fmt(med(ratios['get']), '.2f')}x ({goal}x) [{runs_of(ratios['get'])}] "
              f"| {fmt(med(ratios['put']), '.2f')}x [{runs_of(ratios['put'])}] "
              f"| {fmt(fig(docs, 'mooncake', 'get', keys_per_s), ',.0f')} "
              f"| {fmt(fig(docs, 'redis', 'get', keys_per_s), ',.0f')} "
              f"| {fmt(med(per_call), '.3f')} [{runs_of(per_call)}] | {len(docs)} |")
    print()


if glob.glob(os.path.join(work, "put_get_*.json")) or glob.glob(os.path.join(work, "metadata_*.json")):
    gets_table()
    workload_tables()
else:
    print("The workloads did not run (ONLY left them out).")


def printed(file, title):
    path = os.path.join(work, file)
    if not os.path.exists(path):
        return
    print(f"\n{title}\n")
    print("```")
    print(open(path).read().rstrip("\n"))
    print("```")


printed("dataplane.txt", f"Data plane: `scripts/bench_dataplane.sh reps={runs}` (4 MiB and 64 MiB "
        "objects, one client, beside the loopback TCP ceiling and memcpy measured in the same run; "
        "medians of its runs), as it printed:")
printed("scale.txt", "The master at scale: `scripts/bench_master_scale.sh` (resident memory per "
        "object and start-up to serving from the durable journal), as it printed:")
if not glob.glob(os.path.join(work, "trace_*.json")):
    sys.exit(0)

print(f"\nTrace replay of `{os.path.basename(trace)}` with {block_size} blocks, {trace_runs} "
      f"run(s) per pool size and high watermark, each on a fresh cluster with fresh key names, "
      f"as fast as possible, the master's read lease set to {lease}: prefix hit ratio of the "
      "live cluster beside exact LRU of the same capacity (pool bytes / block size) on the same "
      "trace; the difference is the median run's, with the lowest and highest of all runs. "
      "With a high watermark of 1.0 the master evicts only when a put needs room. With the "
      "default 0.9 a background round every 100 ms frees the pool down to 90%, but only "
      "after a tick in which no put had to evict; a replay as fast as possible keeps puts "
      "evicting, so once the pool is full both watermarks leave the policy the capacity "
      "exact LRU is given. At a pace the rounds keep up with, the policy would work with "
      "about 90% of the pool against exact LRU's 100% (trace_sim --puts-per-tick models "
      "that).\n")
print("| pool blocks | high watermark | hit ratio | exact LRU | Belady | gap closed "
      "| difference (lowest, highest) | requests/s | GB moved | failed puts |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for blocks in (2048, 4096, 8192, 16384):
    for wm in ("0.9", "1.0"):
        found = [os.path.join(work, f"trace_{blocks}_wm{wm}.{i}.json")
                 for i in range(1, int(trace_runs) + 1)]
        docs = [json.load(open(f))["trace"] for f in found if os.path.exists(f)]
        if not docs:
            continue
        docs.sort(key=lambda t: t["hit_ratio"] - t["lru_hit_ratio"])
        t = docs[(len(docs) - 1) // 2]  # the median run (the lower one of an even count)
        diffs = [d["hit_ratio"] - d["lru_hit_ratio"] for d in docs]
        print(f"| {t['capacity_blocks']} | {wm} | {t['hit_ratio']:.4f} | {t['lru_hit_ratio']:.4f} | "
              f"{t.get('belady_hit_ratio', 0):.4f} | {100 * t.get('gap_closed', 0):.1f}% | "
              f"{diffs[(len(docs) - 1) // 2]:+.4f} ({diffs[0]:+.4f}, {diffs[-1]:+.4f}) | "
              f"{t['requests_per_s']:,.0f} | {t['bytes_moved'] / 1e9:.2f} | {t['failed_blocks']} |")

# The policies the master can run, replayed offline over the same trace
# (deterministic: any run's file has the same figures but the timings).
offline = []
for blocks in (2048, 4096, 8192, 16384):
    found = sorted(glob.glob(os.path.join(work, f"trace_{blocks}_wm1.0.*.json")))
    if found:
        offline.append(json.load(open(found[0]))["trace"])
if offline and offline[0].get("policies"):
    print("\nEach policy the master can run (`--eviction-policy`), replayed offline over the "
          "same trace at each pool size through the master's interface, as `mooncake bench "
          "--trace` prints it: hit ratio, share of the exact-LRU-to-Belady gap closed, and the "
          "cost of choosing victims.\n")
    print("| pool blocks | exact LRU | Belady | policy | hit ratio | gap closed | ns/eviction "
          "| steps/eviction |")
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for t in offline:
        for p in t["policies"]:
            print(f"| {t['capacity_blocks']} | {t['lru_hit_ratio']:.4f} | "
                  f"{t['belady_hit_ratio']:.4f} | {p['name']} | {p['hit_ratio']:.4f} | "
                  f"{100 * p['gap_closed']:.1f}% | {p['ns_per_eviction']:.0f} | "
                  f"{p['steps_per_eviction']:.2f} |")
