"""mooncake bench: usage errors, the JSON shape of a short run against a real
cluster (both transfer paths), --metadata-only, --blackhole, a tiny trace
replay with a hit ratio known by hand, and --compare against a local
redis-server. Runs are --ops bounded, so the whole test takes seconds; no
figure is asserted, only that work was done and reported."""
import json
import re
import os
import shutil
import subprocess

import harness
from cluster import Cluster
from harness import check, finish, free_port, run, stop, tempdir, wait_port

tmp = tempdir("mooncake-bench-")
QUANTILES = ["p50", "p90", "p99", "p999"]


def bench(args, env=None, timeout=60):
    out = os.path.join(tmp, "out.json")
    if os.path.exists(out):
        os.remove(out)
    r = run(["bench", "--json", out] + args, env=env, timeout=timeout)
    doc = None
    if r.returncode == 0 and os.path.exists(out):
        doc = json.load(open(out))
    return r, doc


def shape_ok(doc, ops):
    """Every result row has the fields of the issue, and non-zero ops."""
    if not doc or set(doc) < {"setup", "results"} or len(doc["results"]) != len(ops):
        return False
    for row, op in zip(doc["results"], ops):
        if row["op"] != op or row["target"] not in ("mooncake", "redis"):
            return False
        if not all(k in row for k in ("value_size", "ops", "ops_per_s", "bytes_per_s", "latency_us")):
            return False
        lat = row["latency_us"]
        if sorted(lat) != sorted(QUANTILES) or not lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"]:
            return False
        if row["ops"] <= 0 or row["ops_per_s"] <= 0:
            return False
    return True


# ---- usage errors: exit 2, one line naming the flag --------------------------
for args, name in [(["--op", "frobnicate"], "frobnicate"), (["--threads", "0"], "--threads"),
                   (["--duration", "1s", "--ops", "5"], "--ops"),
                   (["--compare", "http://127.0.0.1:1"], "redis://"),
                   (["--metadata-only", "--blackhole"], "--blackhole"),
                   (["--value-size", "12xb"], "--value-size"), (["--distribution", "pareto"], "distribution"),
                   (["--key-names", "random"], "--key-names")]:
    r = run(["bench"] + args)
    err = r.stderr.decode().strip()
    check(r.returncode == 2 and len(err.splitlines()) == 1 and name in err,
          f"bench {' '.join(args)}: exit 2, one line naming {name} ({r.returncode}: {err})")
r = run(["bench", "--master", f"127.0.0.1:{free_port()}", "--rpc-retries", "0", "--ops", "10"])
check(r.returncode == 4, f"bench without a master exits 4 ({r.returncode}: {r.stderr.decode().strip()})")

# ---- blackhole: no cluster; writes dropped, reads miss -----------------------
r, doc = bench(["--blackhole", "--op", "put,get,exists", "--ops", "5000", "--batch", "8", "--threads", "2"])
check(shape_ok(doc, ["put", "get", "exists"]), "blackhole run writes the JSON shape with non-zero ops")
if doc:
    check(doc["setup"]["mode"] == "blackhole", "setup names the blackhole mode")
    check([x["ops"] for x in doc["results"]] == [5000] * 3, "--ops 5000 runs exactly 5000 keys per op")
    check(doc["results"][0]["hits"] == 5000 and doc["results"][1]["hits"] == 0
          and doc["results"][2]["hits"] == 0, "blackhole stores every write and finds nothing")
check(b"\r" not in r.stdout, "no progress line when stdout is not a terminal")
check(r.stdout.decode().find("mode:") < r.stdout.decode().find("p99"), "setup is printed before the table")

c = Cluster(stores=1, segment="128mb")
try:
    # ---- a short run on each transfer path -----------------------------------
    for extra, path in [([], "same-host"), (["--no-shm"], "tcp")]:
        ops = ["put", "get", "exists", "mixed"]
        r, doc = bench(["--op", ",".join(ops), "--value-size", "64kb", "--ops", "200", "--threads", "2",
                        "--batch", "4"] + extra, env=c.env)
        check(r.returncode == 0, f"bench {extra} exits 0 ({r.stderr.decode().strip()[-300:]})")
        check(shape_ok(doc, ops), f"bench {extra}: JSON of the specified shape, non-zero ops")
        if doc:
            check(doc["setup"].get("transfer_path") == path, f"setup names transfer path {path}")
            get = doc["results"][1]
            check(get["hits"] == get["ops"] == 200 and get["errors"] == 0,
                  f"get finds every key put before it ({get['hits']}/{get['ops']})")
            check(get["bytes_per_s"] > 0 and doc["results"][0]["value_size"] == 65536,
                  "get moved bytes of the value size")

    # ---- many TCP clients starting at once --------------------------------------
    # 64 clients, each striping its batch over 8 connections to the store, all
    # connecting in the same instant: 512 connects in a burst. None may be
    # dropped: a dropped SYN is sent again only after 1 s, long enough for a
    # put's write grant to run out, and the put then fails.
    r, doc = bench(["--op", "put", "--no-shm", "--value-size", "4kb", "--threads", "64",
                    "--batch", "32", "--ops", "8192"], env=c.env, timeout=120)
    if check(shape_ok(doc, ["put"]), f"64 TCP clients at once: a report ({r.stderr.decode()[-300:]})"):
        put = doc["results"][0]
        check(put["ops"] == 8192 and put["errors"] == 0,
              f"64 TCP clients at once: all 8192 puts succeed ({put['errors']} errors)")

    # ---- the master alone -----------------------------------------------------
    r, doc = bench(["--metadata-only", "--op", "put,get,exists", "--ops", "600", "--batch", "16",
                    "--threads", "2", "--value-size", "4kb"], env=c.env)
    check(shape_ok(doc, ["put", "get", "exists"]), "--metadata-only run writes the JSON shape")
    if doc:
        check(doc["setup"]["mode"] == "metadata-only", "setup names the metadata-only mode")
        check(all(x["bytes_per_s"] == 0 and x["hits"] == 600 for x in doc["results"]),
              "metadata-only moves no bytes and every key is found")
    r, doc = bench(["--metadata-only", "--op", "put,get", "--ops", "300", "--batch", "16",
                    "--value-size", "4kb", "--key-names", "hashed"], env=c.env)
    if check(shape_ok(doc, ["put", "get"]), "--key-names hashed: JSON of the specified shape"):
        check(doc["setup"].get("key_names") == "hashed", "setup names the hashed key names")
        check(all(x["hits"] == 300 for x in doc["results"]), "hashed names: every key put is found")
        names = run(["ls"], env=c.env).stdout.decode().split()
        hashed = [n for n in names if re.fullmatch(r"bench-[0-9a-f]{8}-[0-9a-f]{16}", n)]
        check(len(hashed) == 300, f"the pool holds 300 keys named by 16 hex digits ({len(hashed)})")

    # ---- a tiny trace with a hit ratio known by hand ---------------------------
    trace = os.path.join(tmp, "t.jsonl")
    with open(trace, "w") as f:
        for ts, ids in [(0, [1, 2, 3]), (5, [1, 2, 3, 4]), (9, [1, 5])]:
            f.write(json.dumps({"timestamp": ts, "input_length": 1, "output_length": 1,
                                "hash_ids": ids}) + "\n")
    r, doc = bench(["--trace", trace, "--block-size", "4kb", "--speedup", "10"], env=c.env)
    t = (doc or {}).get("trace", {})
    check(all(k in t for k in ("hit_ratio", "lru_hit_ratio", "requests", "blocks")),
          f"trace replay writes the trace fields ({r.stderr.decode().strip()[-200:]})")
    if t:
        check(t["requests"] == 3 and t["blocks"] == 9, "trace: 3 requests, 9 blocks")
        check(abs(t["hit_ratio"] - 4 / 9) < 1e-6, f"trace: prefix hit ratio 4/9 ({t['hit_ratio']})")
        check(abs(t["lru_hit_ratio"] - 4 / 9) < 1e-6, "trace: exact LRU with room for all also 4/9")
        check(t["capacity_blocks"] == 128 * 1024 // 4, "trace: capacity is pool bytes / block size")
        check(abs(t.get("belady_hit_ratio", -1) - 4 / 9) < 1e-6,
              "trace: Belady with room for all also 4/9")
        check(t.get("gap_closed") == 0, "trace: no gap between LRU and Belady, none closed")
        names = [p.get("name") for p in t.get("policies", [])]
        check(names == ["adaptive", "probation", "lru"],
              f"trace: every policy the master can run is replayed offline ({names})")
        check(all(abs(p["hit_ratio"] - 4 / 9) < 1e-6 and p["victims"] == 0
                  for p in t.get("policies", [])),
              "trace: with room for all, every policy hits 4/9 and evicts nothing")
        check("Belady" in r.stdout.decode() and "ns/eviction" in r.stdout.decode(),
              "trace: the printed summary shows Belady and the cost per eviction")

    # ---- side by side with a local redis-server -------------------------------
    redis_bin = shutil.which("redis-server")
    if check(redis_bin is not None, "redis-server is installed (scripts/setup.sh installs it)"):
        port = free_port()
        redis = subprocess.Popen([redis_bin, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        harness._procs.append(redis)
        try:
            check(wait_port(port), "redis-server listens")
            r, doc = bench(["--op", "put,get", "--value-size", "16kb", "--ops", "300", "--batch", "8",
                            "--compare", f"redis://127.0.0.1:{port}"], env=c.env)
            check(shape_ok(doc, ["put", "put", "get", "get"]), "--compare: JSON of the specified shape")
            if doc:
                targets = [x["target"] for x in doc["results"]]
                check(targets == ["mooncake", "redis"] * 2, f"rows side by side: {targets}")
                check(all(x["mooncake_ratio"] > 0 for x in doc["results"] if x["target"] == "redis"),
                      "redis rows carry the mooncake/redis ratio")
                check(doc["results"][3]["hits"] == 300, "redis get finds every key set before it")
            check(b"redis" in r.stdout and b"x\n" in r.stdout, "the table shows redis rows and ratios")
        finally:
            stop(redis)
finally:
    c.stop()
finish()
