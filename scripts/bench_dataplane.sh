#!/usr/bin/env bash
# Issues 4 (point 8) and 21 (point 3): put/get speed of one client over TCP
# and the same-host path, beside this machine's loopback TCP ceiling and
# memcpy bandwidth measured in the same run. Starts a real master and store
# on 127.0.0.1 (free ports), runs build/benchmarks/transfer_bench
# against them, and stops both by pid. Arguments go to transfer_bench
# (reps=N streams=N ...); the build must exist (ninja -C build).
# MC_BENCH_SEGMENT sets the store's segment size (default 1gb).
# MC_BENCH_DATA_DIR: the master's data dir; "journal" (default) gives it one
# in the work directory with the default fsync (everysec), as a deployment
# runs, so a put pays PutEnd's journal commit; "none" runs it memory-only.
# HUGEPAGES: "auto" (default) reserves 2 MiB huge pages for the store's and
# the bench's own segments in /proc/sys/vm/nr_hugepages when run as root (as
# README, Huge pages, asks of a deployment) and puts the old value back at
# exit; "off" leaves the host as it is (4 KiB pages unless some are free).
# Run it on a quiet machine: every figure is a median of `reps` runs, and the
# percentages compare each run with a loopback (TCP) or memcpy (same-host)
# sample taken just before it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/build/src/cli/mooncake"
bench="$here/build/benchmarks/transfer_bench"
segment=${MC_BENCH_SEGMENT:-1gb}
data_dir=${MC_BENCH_DATA_DIR:-journal}
hugepages=${HUGEPAGES:-auto}
case $hugepages in
  auto|off) ;;
  *) echo "bench_dataplane: HUGEPAGES must be auto or off, not '$hugepages'" >&2; exit 2 ;;
esac
for f in "$bin" "$bench"; do
  [[ -x $f ]] || { echo "bench_dataplane: $f missing; run: ninja -C build" >&2; exit 2; }
done

NAME=bench_dataplane
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # work dir, pids stopped on exit, free_port
hugepages_before=""
if [ "$hugepages" = auto ]; then
  # The store's segment, transfer_bench's own 512 MiB one, and a few for
  # rounding; a segment that finds too few falls back to 4 KiB pages.
  seg_bytes=$(python3 -c "
import re, sys
m = re.fullmatch(r'([0-9]+)\s*([kmgt]?i?b?)', sys.argv[1].strip().lower())
print(int(m.group(1)) * 1024 ** ' kmgt'.index((m.group(2) or ' ')[0]))" "$segment")
  want=$(( (seg_bytes + (512 << 20)) / (2 << 20) + 8 ))
  have=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${have:-0}" -lt "$want" ] && [ -w /proc/sys/vm/nr_hugepages ]; then
    hugepages_before=$(cat /proc/sys/vm/nr_hugepages)
    echo $(( hugepages_before + want - have )) >/proc/sys/vm/nr_hugepages || true
  fi
fi
restore_hugepages() {
  if [ -n "$hugepages_before" ]; then
    echo "$hugepages_before" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
  fi
}
trap 'cleanup; restore_hugepages' EXIT
if [ "$data_dir" = journal ]; then
  data_dir=$work/master-data
  mkdir -p "$data_dir"
fi

rpc=$(free_port); admin=$(free_port); meta=$(free_port)
export MOONCAKE_MASTER="127.0.0.1:$rpc"
export MOONCAKE_TE_META_DATA_SERVER="http://127.0.0.1:$meta/metadata"

logdir=$work

"$bin" master --port "$rpc" --metrics-port "$admin" --rpc-address 127.0.0.1 \
  --enable-http-metadata-server --http-metadata-server-host 127.0.0.1 \
  --http-metadata-server-port "$meta" --data-dir "$data_dir" >"$logdir/master.log" 2>&1 &
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
pages=$(grep -o ', [a-z-]* pages) mounted' "$logdir/store.log" | tail -n1 | cut -d' ' -f2)
free_huge=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
echo "bench_dataplane: master 127.0.0.1:$rpc (data dir: ${MC_BENCH_DATA_DIR:-journal})," \
  "one store with a $segment segment (${pages:-unknown} pages), huge pages free $free_huge," \
  "$(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" master="$MOONCAKE_MASTER" "$@"
