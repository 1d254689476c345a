#!/usr/bin/env bash
# The master's own speed and memory, end to end through the real binary
# (issue 3, point 8): metadata operations per second for PutStart+PutEnd and
# GetReplicaList over RPC, on 1 and 8 connections, with and without batching,
# and the master's resident memory per object with 1M objects.
#
#   scripts/bench_master.sh [RUNS=3] [OBJECTS=1000000]
#
# Starts a fresh master (--data-dir none unless DATA_DIR is set) and one store
# on 127.0.0.1, drives them with `mooncake bench --metadata-only` (no bytes
# move; a put is one PutStart plus one PutEnd, a get one GetReplicaList), and
# prints the median of RUNS runs of each configuration. Memory: VmRSS of the
# master process read from /proc before and after OBJECTS puts, divided by
# OBJECTS. Every process it starts is stopped by its pid.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${MOONCAKE_BIN:-$here/build/src/cli/mooncake}
RUNS=${1:-3}
OBJECTS=${2:-1000000}
DURATION=${DURATION:-3s}
DATA_DIR=${DATA_DIR:-none}
NAME=bench_master
# shellcheck source=scripts/bench_lib.sh
. "$here/scripts/bench_lib.sh"
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# A fresh master and store for each measurement, so earlier runs' keys
# neither fill the pool (eviction would join in) nor inflate the memory.
start_cluster() { start_master "$DATA_DIR"; start_store; }
stop_cluster() {
  kill "$store" "$master"; wait "$store" "$master" 2>/dev/null || true
  [ "$DATA_DIR" = none ] || rm -rf "${DATA_DIR:?}"/*
}

echo "# mooncake master: metadata ops/s and memory per object, through the real binary"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "master: $("$BIN" version | head -1), --data-dir $DATA_DIR; bench: --metadata-only," \
  "--value-size 4kb, --duration $DURATION, median of $RUNS runs; ops = keys"
echo
printf "%-8s %-8s %-6s %14s   %s\n" threads batch op "median ops/s" "runs"
for threads in 1 8; do
  for batch in 1 32; do
    declare -A all=()
    for r in $(seq "$RUNS"); do
      start_cluster
      "$BIN" bench --master "127.0.0.1:$port" --metadata-only --op put,get --value-size 4kb \
        --threads "$threads" --batch "$batch" --duration "$DURATION" --keys 100000 \
        --json "$work/run.json" >/dev/null
      while read -r op v; do all[$op]+="$v "; done < <(python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["op"], round(r["ops_per_s"]))' "$work/run.json")
      stop_cluster
    done
    for op in put get; do
      med=$(median <<<"${all[$op]}")
      printf "%-8s %-8s %-6s %14s   %s\n" "$threads" "$batch" "$op" "$med" "${all[$op]}"
    done
    unset all
  done
done

echo
start_cluster
before=$(rss_kib "$master")
"$BIN" bench --master "127.0.0.1:$port" --metadata-only --op put --value-size 4kb \
  --threads 2 --batch 128 --ops "$OBJECTS" --json "$work/fill.json" >/dev/null
after=$(rss_kib "$master")
keys=$(curl -fs "http://127.0.0.1:$mport/metrics" | awk '/^master_key_count / {print $2}')
echo "memory: master VmRSS ${before} KiB -> ${after} KiB after $OBJECTS puts" \
  "(master_key_count $keys): $(python3 -c "print(f'{($after-$before)*1024/$OBJECTS:.1f}')") B/object"
stop_cluster
