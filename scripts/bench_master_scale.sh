#!/usr/bin/env bash
# The master at scale (issue 21, point 4), through the real binary: its
# resident memory per object and its start-up time with OBJECTS objects of
# KEY_BYTES-byte keys, one replica, in its durable journal.
#
#   [VALUE_BYTES=1024] [BATCH=256] [THREADS=4] scripts/bench_master_scale.sh [OBJECTS=10000000]
#
# 1. A fresh master with --data-dir (the SQLite journal, default fsync) and
#    one store; `mooncake bench --metadata-only --op put --batch BATCH
#    --threads THREADS --ops OBJECTS --key-names hashed --key-bytes KEY_BYTES
#    --value-size VALUE_BYTES` (a before/after comparison keeps both)
#    fills it (no bytes move; each put is a PutStart and a PutEnd; the
#    store's segment is sized to hold every value, and it refuses a segment
#    larger than the host's free memory, even untouched: 10M objects of
#    1 KiB fit in 13 GB, 50M need VALUE_BYTES=128 or so on a 24 GiB host).
#    Prints the fill's keys/s and the master's VmRSS
#    growth divided by OBJECTS.
# 2. Stops the master (SIGTERM; then the store), starts it again on the same directory and
#    prints the seconds from exec to its /health answering (which it does
#    only once the journal is loaded and RPC serves), and its VmRSS then,
#    divided by OBJECTS.
# 3. HUGEPAGES=auto (the default; "no" skips it), as root: grows the
#    hugetlb pool by what the index needs and restarts once more with
#    --hugepages ([master] hugepages), side by side with step 2; the pool is
#    restored on exit. Memory figures add the master's HugetlbPages, which
#    VmRSS leaves out.
# MASTER_BIN runs the master from another binary (a before/after comparison
# with the same bench). KEEP_JOURNAL=DIR moves the data directory there at
# the end instead of removing it; JOURNAL=DIR skips step 1 and restarts
# from that kept directory instead (its OBJECTS must be given; RESTARTS=N
# restarts N times, alternating with MASTER_BIN2 when that is set; a given
# journal is left where it is). Every process it starts is stopped by its
# pid; the data directory lives in the work directory (TMPDIR) and is removed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${MOONCAKE_BIN:-$here/build/src/cli/mooncake}
OBJECTS=${1:-10000000}
KEY_BYTES=${KEY_BYTES:-40}
VALUE_BYTES=${VALUE_BYTES:-1024}
BATCH=${BATCH:-256}
THREADS=${THREADS:-4}
NAME=bench_master_scale
MASTER_START_POLLS=${MASTER_START_POLLS:-100000}  # a journal of 50M objects loads for minutes
# shellcheck source=scripts/bench_lib.sh
. "$here/scripts/bench_lib.sh"
BENCH_BIN=$BIN
BIN=${MASTER_BIN:-$BIN}  # start_master runs $BIN
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
huge_kib() { awk '/^HugetlbPages:/ {print $2}' "/proc/$1/status"; }  # not in VmRSS
per_object() { python3 -c "print(f'{($1) * 1024 / $OBJECTS:.1f}')"; }
data="$work/data"

echo "# mooncake master at scale: memory per object and start-up, through the real binary"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "uptime: $(uptime)"
if [ -z "${JOURNAL:-}" ]; then
  echo "master: $("$BIN" version | head -1), --data-dir (durable journal); $OBJECTS objects," \
    "keys of $KEY_BYTES bytes (hashed names), values of $VALUE_BYTES bytes, one replica;" \
    "fill in batches of $BATCH from $THREADS threads"
else
  echo "master: $("$BIN" version | head -1), --data-dir $JOURNAL (a kept journal of $OBJECTS objects)"
fi
echo

if [ -z "${JOURNAL:-}" ]; then
  start_master "$data"
  OBJECTS_ALL=$OBJECTS
  OBJECTS=$(( (OBJECTS * VALUE_BYTES + 4095) / 4096 ))  # start_store sizes it for 4 KiB values
  start_store
  OBJECTS=$OBJECTS_ALL
  before=$(rss_kib "$master")
  "$BENCH_BIN" bench --master "127.0.0.1:$port" --metadata-only --op put --value-size "$VALUE_BYTES" \
    --batch "$BATCH" --threads "$THREADS" --ops "$OBJECTS" --key-names hashed --key-bytes "$KEY_BYTES" \
    --json "$work/fill.json" >/dev/null
  after=$(rss_kib "$master")
  keys=$(curl -fs "http://127.0.0.1:$mport/metrics" | awk '/^master_key_count / {print $2}')
  fill=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(round(r["ops_per_s"]), r["errors"])' "$work/fill.json")
  echo "fill: ${fill% *} keys/s (errors ${fill#* }), master_key_count $keys"
  echo "memory: master VmRSS ${before} KiB -> ${after} KiB after $OBJECTS puts:" \
    "$(per_object "$after - $before") B/object"

  # The master first: a store that stops first unmounts its segment, and the
  # master would drop (and unjournal) every object on it.
  t0=$EPOCHREALTIME
  kill "$master"
  wait "$master" 2>/dev/null || true
  stop_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
  kill "$store"
  wait "$store" 2>/dev/null || true
  echo "stop: the master exited ${stop_s} s after SIGTERM"
  echo "journal: $(du -sh "$data" | cut -f1) in $data"
else
  data=$JOURNAL
  echo "journal: $(du -sh "$data" | cut -f1) in $data (given; not filled here)"
fi
# A restart on ordinary pages (the default), then, with HUGEPAGES=auto
# (the default) as root, one with --hugepages: the pool grown by what the
# index needs (restored after), each measured from exec to /health.
restart() {
  echo "uptime: $(uptime)"
  start_master "$data" "$@"
  local up=$master_up_s rss keys loaded huge
  rss=$(rss_kib "$master")
  huge=$(huge_kib "$master")
  keys=$(curl -fs "http://127.0.0.1:$mport/metrics" | awk '/^master_key_count / {print $2}')
  loaded=$(grep -o 'state loaded from .*' "$work/master.log" | tail -1 || true)
  ups["$BIN${1:+ $1}"]+="$up "
  echo "restart${1:+ $1}${MASTER_BIN2:+ ($BIN)}: serving (/health) ${up} s after exec with master_key_count $keys;" \
    "VmRSS ${rss} KiB + hugetlb ${huge} KiB: $(per_object "$rss + $huge") B/object"
  [ -z "$loaded" ] || echo "  master log: $loaded"
  kill "$master"
  wait "$master" 2>/dev/null || true
}
declare -A ups  # "binary flags" -> the seconds to serving of each restart
# RESTARTS rounds, each the binary under test then (when set) MASTER_BIN2.
restarts() {
  local first=$BIN
  for _ in $(seq "${RESTARTS:-1}"); do
    BIN=$first restart "$@"
    [ -z "${MASTER_BIN2:-}" ] || BIN=$MASTER_BIN2 restart "$@"
  done
  BIN=$first
}
restarts
hugepages_before=""
restore_hugepages() {
  [ -z "$hugepages_before" ] || echo "$hugepages_before" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
}
trap 'cleanup; restore_hugepages' EXIT
if [ "${HUGEPAGES:-auto}" = auto ] && [ -w /proc/sys/vm/nr_hugepages ]; then
  # About 100 bytes of node a 40-byte key, in 2 MiB pages, and some spare.
  want=$(( OBJECTS * (KEY_BYTES + 60) / (2 << 20) + 16 ))
  have=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${have:-0}" -lt "$want" ]; then
    hugepages_before=$(cat /proc/sys/vm/nr_hugepages)
    echo $(( hugepages_before + want - have )) >/proc/sys/vm/nr_hugepages || true
  fi
  echo "huge pages: $(awk '/^HugePages_Free/ {print $2}' /proc/meminfo) of 2 MiB free" \
    "(asked for $want)"
  restarts --hugepages
fi
if [ "${RESTARTS:-1}" -gt 1 ]; then
  for k in "${!ups[@]}"; do
    echo "median of ${RESTARTS} restarts, $k: $(echo "${ups[$k]}" | median) s (each: ${ups[$k]% })"
  done
fi
if [ -n "${KEEP_JOURNAL:-}" ] && [ -z "${JOURNAL:-}" ]; then  # for more restarts (JOURNAL=DIR)
  rm -rf "$KEEP_JOURNAL"
  mv "$data" "$KEEP_JOURNAL"
  echo "journal kept in $KEEP_JOURNAL"
fi
