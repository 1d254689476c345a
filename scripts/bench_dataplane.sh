#!/usr/bin/env bash
# Issue 4, point 8: put/get speed of one client over TCP and the same-host
# path, beside this machine's loopback TCP ceiling and memcpy bandwidth
# measured in the same run. Starts a real master and store on 127.0.0.1
# (free ports, memory-only master), runs build/src/client/transfer_bench
# against them, and stops both by pid. Arguments go to transfer_bench
# (reps=N streams=N ...); the build must exist (ninja -C build).
# MC_BENCH_SEGMENT sets the store's segment size (default 1gb).
# Run it on a quiet machine: every figure is a median of `reps` runs, and the
# percentages compare each run with a loopback sample taken just before it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/build/src/cli/mooncake"
bench="$here/build/src/client/transfer_bench"
segment=${MC_BENCH_SEGMENT:-1gb}
for f in "$bin" "$bench"; do
  [[ -x $f ]] || { echo "bench_dataplane: $f missing; run: ninja -C build" >&2; exit 2; }
done

NAME=bench_dataplane
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # work dir, pids stopped on exit, free_port
rpc=$(free_port); admin=$(free_port); meta=$(free_port)
export MOONCAKE_MASTER="127.0.0.1:$rpc"
export MOONCAKE_TE_META_DATA_SERVER="http://127.0.0.1:$meta/metadata"

logdir=$work

"$bin" master --port "$rpc" --metrics-port "$admin" --rpc-address 127.0.0.1 \
  --enable-http-metadata-server --http-metadata-server-host 127.0.0.1 \
  --http-metadata-server-port "$meta" --data-dir none >"$logdir/master.log" 2>&1 &
pids+=($!)
"$bin" store --segment "$segment" >"$logdir/store.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
  grep -q "store ready" "$logdir/store.log" 2>/dev/null && break
  kill -0 "${pids[1]}" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q "store ready" "$logdir/store.log"; then
  echo "bench_dataplane: the store did not come up:" >&2
  tail -5 "$logdir/master.log" "$logdir/store.log" >&2
  exit 1
fi
# Measure a store in steady state: its segment faulted in (store.prefault).
for _ in $(seq 1200); do
  grep -q "segment prefaulted" "$logdir/store.log" && break
  sleep 0.1
done
echo "bench_dataplane: master 127.0.0.1:$rpc, one store with a $segment segment ($(grep -o '[a-z]* pages' "$logdir/store.log" | head -1)), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" master="$MOONCAKE_MASTER" "$@"
