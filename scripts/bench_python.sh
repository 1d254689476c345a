#!/usr/bin/env bash
# Issue 19, point 9: mooncake.store from Python beside `mooncake bench` (same
# cluster, same path) and beside redis-py against a local Redis. Starts a
# memory-only master and one store on 127.0.0.1 (free ports) and a
# redis-server, runs scripts/bench_python.py, stops everything by pid.
#   scripts/bench_python.sh [reps=5] [duration_s=3]
# Env: BUILD (default build), MC_BENCH_SEGMENT (store segment, default 2gb),
# PYTHON (default /usr/bin/python3). The module comes from $BUILD/src/python.
# Reserve huge pages first for steady figures (README, Huge pages). Run it on
# a quiet machine: the table shows medians.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
BIN="$here/$build/src/cli/mooncake"
reps=${1:-5}
duration=${2:-3}
segment=${MC_BENCH_SEGMENT:-2gb}
python=${PYTHON:-/usr/bin/python3}
[[ -x $BIN ]] || { echo "bench_python: $BIN missing; run: ninja -C $build" >&2; exit 2; }

NAME=bench_python
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # work dir, pids stopped on exit, free_port
rpc=$(free_port); admin=$(free_port); meta=$(free_port); redis_port=$(free_port)

"$BIN" master --port "$rpc" --metrics-port "$admin" --rpc-address 127.0.0.1 \
  --enable-http-metadata-server --http-metadata-server-host 127.0.0.1 \
  --http-metadata-server-port "$meta" --data-dir none --log-level warn >"$work/master.log" 2>&1 &
pids+=($!)
MOONCAKE_MASTER="127.0.0.1:$rpc" "$BIN" store --segment "$segment" >"$work/store.log" 2>&1 &
pids+=($!)
for _ in $(seq 1200); do
  grep -q "segment prefaulted" "$work/store.log" 2>/dev/null && break
  kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/store.log" >&2; exit 1; }
  sleep 0.1
done
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

echo "bench_python: master 127.0.0.1:$rpc, one store with a $segment segment" \
  "($(grep -o '[a-z]* pages) mounted' "$work/store.log" | head -1 | cut -d')' -f1)), redis $(redis-server --version | grep -o 'v=[0-9.]*')," \
  "$(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $reps runs of ${duration}s per operation"
PYTHONPATH="$here/$build/src/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$here/scripts/bench_python.py" \
  --bin "$BIN" --master "127.0.0.1:$rpc" --meta "http://127.0.0.1:$meta/metadata" \
  --redis-port "$redis_port" --reps "$reps" --duration "$duration"
