#!/usr/bin/env bash
# Two mooncake binaries side by side on this machine: for each of ROUNDS
# rounds, each binary in turn gets a fresh local cluster (a master with its
# default durable journal, one store, loopback, free ports) and runs the same
# `mooncake bench` workloads; the medians per binary and their ratio (B/A)
# are printed. For a change that should not move the figures (a refactor),
# build the old commit in another folder and compare:
#
#   scripts/bench_ab.sh OLD_BIN NEW_BIN
#
# Workloads: 4 KiB values in batches of 32 over 2 threads, and 4 MiB values
# on 1 thread, each put then get, same-host (shared memory) and TCP
# (--no-shm). Environment: ROUNDS (3), DURATION per operation (2s), SEGMENT
# of the store (2gb). Every process started is stopped by its pid on exit.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_BIN NEW_BIN" >&2; exit 2; }
bins=("$1" "$2")
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-2s}
SEGMENT=${SEGMENT:-2gb}
NAME=bench_ab
BIN=$1
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"

workloads=("4kb 32 2 --shm" "4kb 32 2 --no-shm" "4mb 1 1 --shm" "4mb 1 1 --no-shm")

run_one() {  # run_one BIN ROUND: every workload on a fresh cluster of BIN
  BIN=$1
  local dir="$work/data-$2-$RANDOM"
  mkdir -p "$dir"
  start_master "$dir"
  "$BIN" store --master "127.0.0.1:$port" --segment "$SEGMENT" --port 0 \
    --metadata-server none --log-level warn >>"$work/store.log" 2>&1 &
  store=$!; pids+=("$store")
  for _ in $(seq 200); do
    curl -fs "http://127.0.0.1:$mport/get_all_segments" | grep -q . && break
    sleep 0.05
  done
  local w
  for w in "${workloads[@]}"; do
    read -r size batch threads shm <<<"$w"
    "$BIN" bench --master "127.0.0.1:$port" --metadata-server none --op put,get \
      --value-size "$size" --batch "$batch" --threads "$threads" "$shm" \
      --duration "$DURATION" --keys 2000 --json "$work/r.json" --log-level warn >/dev/null
    python3 - "$work/r.json" "$BIN" "$w" >>"$work/results.tsv" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc.get("results", []):
    print(f"{sys.argv[2]}\t{sys.argv[3]}\t{r['op']}\t{r['ops_per_s']}\t{r['bytes_per_s'] / 1e9}")
PY
  done
  kill "$store" "$master"; wait "$store" "$master" 2>/dev/null || true
}

echo "bench_ab: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), rounds $ROUNDS, $DURATION per op"
echo "  A = ${bins[0]}"
echo "  B = ${bins[1]}"
for r in $(seq "$ROUNDS"); do
  for b in "${bins[@]}"; do run_one "$b" "$r"; done
done
python3 - "$work/results.tsv" "${bins[0]}" "${bins[1]}" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
a, b = sys.argv[2], sys.argv[3]
keys = []
for _, w, op, _, _ in rows:
    if (w, op) not in keys:
        keys.append((w, op))
print(f"{'workload':<22} {'op':<4} {'A median':>12} {'B median':>12} {'B/A':>6}  unit   (runs A | runs B)")
for w, op in keys:
    big = w.startswith("4mb")
    col = 4 if big else 3
    unit = "GB/s" if big else "ops/s"
    va = [float(r[col]) for r in rows if r[0] == a and r[1] == w and r[2] == op]
    vb = [float(r[col]) for r in rows if r[0] == b and r[1] == w and r[2] == op]
    ma, mb = statistics.median(va), statistics.median(vb)
    fmt = (lambda v: f"{v:.2f}") if big else (lambda v: f"{v:.0f}")
    print(f"{w:<22} {op:<4} {fmt(ma):>12} {fmt(mb):>12} {mb / ma:>6.2f}  {unit:<6} "
          f"({' '.join(fmt(v) for v in va)} | {' '.join(fmt(v) for v in vb)})")
PY
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
