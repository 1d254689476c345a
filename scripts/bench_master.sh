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
work=$(mktemp -d /tmp/mooncake-bench-master.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# A fresh master and store for each measurement, so earlier runs' keys
# neither fill the pool (eviction would join in) nor inflate the memory.
start_cluster() {
  port=$(free_port); mport=$(free_port)
  "$BIN" master --port "$port" --metrics-port "$mport" --data-dir "$DATA_DIR" \
    --log-level warn >"$work/master.log" 2>&1 &
  master=$!; pids+=("$master")
  # Room for OBJECTS 4 KiB objects; a memfd segment costs nothing until
  # touched, and metadata-only puts never touch it.
  local seg_bytes=$(( (OBJECTS * 4096 * 5 / 4) + (1 << 30) ))
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$mport/health" >/dev/null && break; sleep 0.05; done
  "$BIN" store --master "127.0.0.1:$port" --segment "$seg_bytes" --port 0 \
    --metadata-server none --log-level warn >"$work/store.log" 2>&1 &
  store=$!; pids+=("$store")
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$mport/get_all_segments" | grep -q . && return 0
    sleep 0.05
  done
  echo "bench_master: the store did not mount; logs in $work" >&2; exit 1
}
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
      med=$(tr ' ' '\n' <<<"${all[$op]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
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
