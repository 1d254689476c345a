#!/usr/bin/env bash
# Issue 30, point 6: mooncake.engine.TransferEngine 4 MiB write/read beside
# `mooncake bench`'s 4 MiB put/get over the same transport: TCP on loopback,
# and the same-host paths (TransferEngine mapping the peer's managed buffer,
# the bench's client mapping the store's segment). Starts a memory-only master and one store on 127.0.0.1 (free
# ports) for the bench, runs scripts/bench_engine.py (which starts its own
# TransferEngine peer), stops everything by pid.
#   scripts/bench_engine.sh [reps=5] [duration_s=3]
# Env: BUILD (default build), MC_BENCH_SEGMENT (store segment, default 1gb),
# PYTHON (default /usr/bin/python3). Run it on a quiet machine: the table
# shows medians.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
BIN="$here/$build/src/cli/mooncake"
reps=${1:-5}
duration=${2:-3}
segment=${MC_BENCH_SEGMENT:-1gb}
python=${PYTHON:-/usr/bin/python3}
[[ -x $BIN ]] || { echo "bench_engine: $BIN missing; run: ninja -C $build" >&2; exit 2; }

NAME=bench_engine
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # work dir, pids stopped on exit, free_port
rpc=$(free_port); admin=$(free_port)

"$BIN" master --port "$rpc" --metrics-port "$admin" --rpc-address 127.0.0.1 \
  --data-dir none --log-level warn >"$work/master.log" 2>&1 &
pids+=($!)
MOONCAKE_MASTER="127.0.0.1:$rpc" "$BIN" store --segment "$segment" --metadata-server none \
  >"$work/store.log" 2>&1 &
pids+=($!)
for _ in $(seq 1200); do
  grep -q "segment prefaulted" "$work/store.log" 2>/dev/null && break
  kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/store.log" >&2; exit 1; }
  sleep 0.1
done

echo "bench_engine: master 127.0.0.1:$rpc, one store with a $segment segment," \
  "$(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $reps runs of ${duration}s per side"
PYTHONPATH="$here/$build/src/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$here/scripts/bench_engine.py" \
  --bin "$BIN" --master "127.0.0.1:$rpc" --reps "$reps" --duration "$duration"
