#!/usr/bin/env bash
# Issue 33 point 1 (gap A): remove latency and put/upsert rates of two builds
# side by side, e.g. main before and a branch after retiring removed objects
# on the stores. Starts a memory-only master and one store per build on
# 127.0.0.1 (free ports) and alternates scripts/bench_remove.py runs between
# them; prints each run and the medians. Stops everything by pid.
#   scripts/bench_remove.sh BUILD_A BUILD_B [reps=5] [keys=2000]
# BUILD_x: a build directory holding src/cli/mooncake and src/python.
# Env PYMOD: one python module directory for both (the client side does not
# change the master's work; default each build's own src/python).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
a=$(cd "$1" && pwd); b=$(cd "$2" && pwd)
reps=${3:-5}
keys=${4:-2000}
python=${PYTHON:-/usr/bin/python3}
NAME=bench_remove
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # work dir, pids stopped on exit, free_port

declare -A master meta
for build in "$a" "$b"; do
  rpc=$(free_port); admin=$(free_port); mport=$(free_port)
  tag=$(basename "$(dirname "$build")")-$(basename "$build")
  "$build/src/cli/mooncake" master --port "$rpc" --metrics-port "$admin" --rpc-address 127.0.0.1 \
    --enable-http-metadata-server --http-metadata-server-host 127.0.0.1 \
    --http-metadata-server-port "$mport" --data-dir none --log-level warn \
    >"$work/master-$tag.log" 2>&1 &
  pids+=($!)
  MOONCAKE_MASTER="127.0.0.1:$rpc" "$build/src/cli/mooncake" store --segment 256mb \
    >"$work/store-$tag.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1200); do
    grep -q "segment prefaulted" "$work/store-$tag.log" 2>/dev/null && break
    sleep 0.1
  done
  master[$build]="127.0.0.1:$rpc"
  meta[$build]="http://127.0.0.1:$mport/metadata"
done
echo "bench_remove: $keys keys of 4 KiB, $reps runs per build, $(nproc) cpus," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$reps"); do
  for build in "$a" "$b"; do
    out=$(PYTHONPATH="${PYMOD:-$build/src/python}" "$python" "$here/scripts/bench_remove.py" \
      --master "${master[$build]}" --meta "${meta[$build]}" --keys "$keys" --tag "r$rep")
    echo "$build $out" | tee -a "$work/runs"
  done
done
"$python" - "$work/runs" "$a" "$b" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    build, js = line.split(" ", 1)
    runs.setdefault(build, []).append(json.loads(js))
print(f"medians (load {open('/proc/loadavg').read().split()[0]}):")
for build in sys.argv[2:]:
    r = runs[build]
    med = {k: statistics.median(x[k] for x in r) for k in r[0]}
    print(f"  {build}: remove p50 {med['remove_p50_us']:.0f} us, p99 {med['remove_p99_us']:.0f} us,"
          f" batch put {med['put_keys_s']:,.0f} keys/s, batch upsert {med['upsert_keys_s']:,.0f} keys/s")
PY
