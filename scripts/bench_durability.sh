#!/usr/bin/env bash
# What durability costs the master, end to end through the real binary
# (issue 5, point 5): put throughput with --data-dir against --data-dir none,
# the state file's bytes per object, and the time from starting the master
# to it serving (/health answers; the load happens before) with OBJECTS
# objects in the file. benchmarks/durability_bench measures the same
# in-process.
#
#   scripts/bench_durability.sh [RUNS=3] [OBJECTS=1000000]
#
# Puts, for each kind in PUTS (default "metadata-only data data-tcp"):
#   metadata-only: `mooncake bench --metadata-only --op put`, one PutStart
#     plus one PutEnd per key and no bytes moved: the master's worst case,
#     where the journal's cost is all there is;
#   data: `mooncake bench --op put` with 4 KiB values written into the
#     store's segment (the same-host path), which is what clients do;
#   data-tcp: the same over TCP (--no-shm), the reference's own put
#     configuration (FIELD.md: one host, TCP, 4 KiB values, batch 32);
# KEY_NAMES (counter, the default, or hashed: see mooncake-bench(1)
# --key-names), with CLIENTS connections (default "8 64":
# group commit shares each fsync among the clients waiting, so its worth
# shows with many), batch 1 and 32, DURATION each, a fresh master and store
# per run; the median of RUNS runs. Every process it starts is stopped by
# its pid.
#
# The state file lives under TMPDIR (default /tmp). TMPDIR=/dev/shm puts it on
# tmpfs, where fdatasync costs nothing: not durable, but it separates what the
# journal costs in CPU (SQLite, the writer thread, held replies) from what the
# disk's flush costs.
#
# Each durable case runs once per --fsync mode in FSYNC (default "always
# everysec"; see mooncake-master(1) DURABILITY), each shown as a share of
# the --data-dir none rate.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${MOONCAKE_BIN:-$here/build/src/cli/mooncake}
RUNS=${1:-3}
OBJECTS=${2:-1000000}
DURATION=${DURATION:-3s}
NAME=bench_durability
# shellcheck source=scripts/bench_lib.sh
. "$here/scripts/bench_lib.sh"

# The master first: a store that stops cleanly unmounts, which drops its objects.
stop_all() { kill "$master"; wait "$master" 2>/dev/null || true; kill "$store"; wait "$store" 2>/dev/null || true; }

echo "# mooncake master: the cost of --data-dir, through the real binary"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) (shared: other work runs beside it)"
CLIENTS=${CLIENTS:-8 64}
# What one durable commit costs at least on this disk, now: the median of
# 200 fdatasync calls after a 4 KiB overwrite (the host's disk can change
# this tenfold from one hour to the next on a shared VM).
sync_us() {
  python3 - "$work/sync-probe" <<'PY'
import os, statistics, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
block = b"x" * 4096
os.pwrite(fd, block * 64, 0); os.fsync(fd)
times = []
for i in range(200):
    t = time.perf_counter(); os.pwrite(fd, block, (i % 64) * 4096); os.fdatasync(fd)
    times.append(time.perf_counter() - t)
os.close(fd); os.unlink(sys.argv[1])
print(f"{statistics.median(times) * 1e6:.0f}")
PY
}
echo "fdatasync of a 4 KiB overwrite: median $(sync_us) us (before the puts)"
PUTS=${PUTS:-metadata-only data data-tcp}
FSYNC=${FSYNC:-always everysec}
for f in $FSYNC; do
  case $f in always|everysec) ;; *) echo "$NAME: FSYNC: unknown mode '$f' (always or everysec)" >&2; exit 2 ;; esac
done
echo "disk: $(df -T "$work" | awk 'NR==2 {print $2}') under $work; puts: bench --op put --value-size 4kb," \
  "--threads (clients) $CLIENTS, --key-names ${KEY_NAMES:-counter}, --duration $DURATION, median of $RUNS runs"
for kind in $PUTS; do
case $kind in
  metadata-only) flags=(--metadata-only) ;;
  data) flags=() ;;
  data-tcp) flags=(--no-shm) ;;
  *) echo "$NAME: PUTS: unknown kind '$kind' (metadata-only, data or data-tcp)" >&2; exit 2 ;;
esac
echo
echo "## puts: $kind"
header=$(printf "%-8s %-6s %14s" clients batch "none puts/s")
for f in $FSYNC; do header+=$(printf " %16s %7s" "$f puts/s" ratio); done
echo "$header    p99 us (none/$(tr ' ' / <<<"$FSYNC"))"
for clients in $CLIENTS; do
for batch in 1 32; do
  declare -A all=() p99=()
  for r in $(seq "$RUNS"); do
    for mode in none $FSYNC; do
      dir=none; fsync=()
      [ "$mode" != none ] && { dir="$work/state"; rm -rf "$dir"; fsync=(--fsync "$mode"); }
      start_master "$dir" "${fsync[@]}"; start_store
      "$BIN" bench --master "127.0.0.1:$port" "${flags[@]}" --op put --value-size 4kb \
        --key-names "${KEY_NAMES:-counter}" \
        --threads "$clients" --batch "$batch" --duration "$DURATION" --keys 16000000 \
        --json "$work/run.json" >/dev/null
      read -r ops lat < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(round(r["ops_per_s"]), round(r["latency_us"]["p99"]))' "$work/run.json")
      all[$mode]+="$ops "; p99[$mode]+="$lat "
      stop_all
    done
  done
  n=$(median <<<"${all[none]}")
  line=$(printf "%-8s %-6s %14s" "$clients" "$batch" "$n"); lats=$(median <<<"${p99[none]}"); runs="none: ${all[none]}"
  for f in $FSYNC; do
    d=$(median <<<"${all[$f]}")
    line+=$(printf " %16s %6s%%" "$d" "$(python3 -c "print(f'{100*$d/$n:.1f}')")")
    lats+="/$(median <<<"${p99[$f]}")"; runs+="; $f: ${all[$f]}"
  done
  echo "$line    $lats   ($runs)"
  unset all p99
done
done
done

echo "fdatasync of a 4 KiB overwrite: median $(sync_us) us (after the puts)"
echo
dir="$work/state"; rm -rf "$dir"
start_master "$dir"; start_store
"$BIN" bench --master "127.0.0.1:$port" --metadata-only --op put --value-size 4kb \
  --threads 2 --batch 128 --ops "$OBJECTS" --keys "$OBJECTS" --json "$work/fill.json" >/dev/null
keys=$(curl -fs "http://127.0.0.1:$mport/metrics" | awk '/^master_key_count / {print $2}')
stop_all  # SIGTERM: the journal commits what is queued and checkpoints the WAL
bytes=$(cat "$dir"/master.db* | wc -c)
echo "file: $keys objects, $bytes bytes (master.db and any -wal/-shm) = $(python3 -c "print(f'{$bytes/max($keys,1):.1f}')") bytes/object"
times=""
for r in $(seq "$RUNS"); do
  start_master "$dir"
  times+="$master_up_s "
  kill "$master"; wait "$master" 2>/dev/null || true
done
echo "start to serving (exec to /health answering, state loaded) with $keys objects:" \
  "median $(median <<<"$times") s (runs: $times)"
