#!/usr/bin/env bash
# The standard benchmark suite of mooncake (issues 6 and 21): starts a fresh
# local cluster (master + one store, loopback, free ports) and a local
# redis-server for every run, runs the standard workloads with
# `mooncake bench --json`, the data plane against this machine's ceilings
# (scripts/bench_dataplane.sh) and the master at scale
# (scripts/bench_master_scale.sh), and writes markdown (medians of RUNS
# runs) with the machine described. Every process it starts is stopped by
# its pid, also on error or Ctrl-C.
#
#   scripts/bench_suite.sh [OUT.md]          (default: bench-results.md)
#   scripts/bench_suite.sh --readme          regenerate README.md's
#                                            performance section in place
#
# The 4 KiB batch-32 workloads run the master in each durability mode beside
# the Redis persistence it compares with: `--fsync always` and `--fsync
# everysec` (the default) against Redis `--appendonly yes --appendfsync
# everysec`, and `--data-dir none` against Redis without persistence; the
# table names both in every row.
#
# Environment: MOONCAKE_BIN (default build/src/cli/mooncake), RUNS (3),
# DURATION per operation (3s), THREADS of the 4 KiB workloads (2),
# TRACE (../shared/traces/synthetic_trace.jsonl),
# BLOCK_SIZE of the trace replay (64kb), SEGMENT of the store (2gb),
# TRACE_LEASE: the master's read lease during trace replays (100ms; a lease
# blocks eviction, and the default 10 s would leave a small pool nothing to
# evict at replay speed, judging leases instead of the eviction policy),
# HUGEPAGES: "auto" (default) reserves enough 2 MiB huge pages for the
# segment in /proc/sys/vm/nr_hugepages when run as root, as a deployment
# would (mooncake-store(1), HUGE PAGES), and puts the old value back at exit;
# "off" leaves the system as it is. The 4 MiB workloads also run once more
# on a store with --no-hugepages, so both figures are in the table.
# TRACE_RUNS: replays per pool size and watermark (default RUNS; fresh random
# key names each time, so the eviction policy's hash sample differs).
# SCALE_OBJECTS: objects for the master at scale (default 10000000; 0 skips).
# ONLY: a comma-separated subset of the parts to run: workloads, dataplane,
# scale, trace (default all of them; ONLY=trace runs the trace replays alone,
# for eviction policy work), and gets: the 4 KiB batch-32 runs of the default
# durable master (--fsync everysec) beside Redis (AOF everysec), same-host
# and over TCP, GET_RUNS times (default 5; issue 33's goals) -- workloads
# runs them too, RUNS times. For every run the master's get RPCs
# (GetReplicaList and BatchGetReplicaList, from its /metrics before and after
# the bench) are counted per client get call, so reads served in one round
# trip (direct reads, mooncake-client(1)) show as fewer than 1.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
readme=""
if [ "${1:-}" = --readme ]; then
  readme=$here/README.md
  out=$(mktemp /tmp/mooncake-bench-suite-out.XXXXXX.md)
else
  out=${1:-bench-results.md}
fi
bin=${MOONCAKE_BIN:-$here/build/src/cli/mooncake}
runs=${RUNS:-3}
get_runs=${GET_RUNS:-5}
duration=${DURATION:-3s}
trace=${TRACE:-$here/../shared/traces/synthetic_trace.jsonl}
block_size=${BLOCK_SIZE:-64kb}
segment=${SEGMENT:-2gb}
trace_lease=${TRACE_LEASE:-100ms}
trace_runs=${TRACE_RUNS:-$runs}
threads=${THREADS:-2}
scale_objects=${SCALE_OBJECTS:-10000000}
only=${ONLY:-workloads,dataplane,scale,trace}
for part in ${only//,/ }; do
  case $part in workloads|dataplane|scale|trace|gets) ;;
    *) echo "bench_suite: ONLY takes workloads, dataplane, scale, trace and gets, not '$part'" >&2; exit 2 ;;
  esac
done
runs_part() { [[ ,$only, == *,$1,* ]]; }
hugepages=${HUGEPAGES:-auto}
case $hugepages in auto|off) ;; *) echo "bench_suite: HUGEPAGES must be auto or off, not '$hugepages'" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/mooncake-bench-suite.XXXXXX)
pids=()

[ -x "$bin" ] || { echo "bench_suite: no binary at $bin (build first)" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "bench_suite: redis-server not installed (scripts/setup.sh)" >&2; exit 2; }

stop_all() {
  local p
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    # Bounded wait, then SIGKILL: a stuck process must not hang the suite.
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  pids=()
}
hugepages_before=""
restore_hugepages() {
  [ -n "$hugepages_before" ] && echo "$hugepages_before" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
}
trap 'stop_all; restore_hugepages' EXIT INT TERM

# shellcheck source=scripts/free_port.sh
. "$(dirname "${BASH_SOURCE[0]}")/free_port.sh"

wait_for() {  # wait_for WHAT COMMAND...: up to 20 s
  local what=$1; shift
  for _ in $(seq 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "bench_suite: $what did not come up (logs in $work)" >&2
  exit 1
}

bytes_of() {  # "64kb" -> 65536, as mooncake reads sizes (powers of 1024)
  python3 -c "
import re, sys
m = re.fullmatch(r'([0-9]+)\s*([kmgt]?i?b?)', sys.argv[1].strip().lower())
print(int(m.group(1)) * 1024 ** ' kmgt'.index((m.group(2) or ' ')[0]))" "$1"
}

# start_cluster SEGMENT [MASTER-FLAGS...]: master with its metadata server,
# one store (with $store_flags), redis. Sets store_pages to the kind of pages
# the store's segment got. $persistence picks both sides' durability:
#   none:     master --data-dir none,  Redis without persistence;
#   always:   master --fsync always,   Redis --appendonly yes --appendfsync everysec;
#   everysec: master --fsync everysec, the same Redis;
# each durable run in a fresh directory under the work directory.
store_flags=()
persistence=none
fresh_dirs=0
start_cluster() {
  local rpc meta master_persist redis_persist
  rpc=$(free_port); metrics=$(free_port); meta=$(free_port); redis_port=$(free_port)
  export MOONCAKE_MASTER=127.0.0.1:$rpc
  export MOONCAKE_TE_META_DATA_SERVER=http://127.0.0.1:$meta/metadata
  fresh_dirs=$((fresh_dirs + 1))
  case $persistence in
    none)
      master_persist=(--data-dir none)
      redis_persist=(--save "" --appendonly no) ;;
    always|everysec)
      mkdir -p "$work/state.$fresh_dirs" "$work/redis.$fresh_dirs"
      master_persist=(--data-dir "$work/state.$fresh_dirs" --fsync "$persistence")
      redis_persist=(--save "" --appendonly yes --appendfsync everysec --dir "$work/redis.$fresh_dirs") ;;
  esac
  "$bin" master --port "$rpc" --metrics-port "$metrics" --rpc-address 127.0.0.1 \
    --enable-http-metadata-server --http-metadata-server-host 127.0.0.1 \
    --http-metadata-server-port "$meta" "${master_persist[@]}" "${@:2}" >>"$work/master.log" 2>&1 &
  pids+=($!)
  wait_for master curl -sf "http://127.0.0.1:$metrics/health"
  local prefaulted
  prefaulted=$(grep -c "segment prefaulted" "$work/store.log" 2>/dev/null || true)
  "$bin" store --segment "$1" "${store_flags[@]}" >>"$work/store.log" 2>&1 &
  pids+=($!)
  wait_for store bash -c "curl -sf http://127.0.0.1:$metrics/get_all_segments | grep -q ."
  # Steady state: the store has faulted its segment in (store.prefault).
  wait_for "store prefault" bash -c \
    "[ \$(grep -c 'segment prefaulted' '$work/store.log') -gt ${prefaulted:-0} ]"
  # Its "store ready" line came before, so the last one is this store's.
  store_pages=$(grep -o ', [a-z-]* pages) mounted' "$work/store.log" | tail -n1 | cut -d' ' -f2)
  redis-server --port "$redis_port" --bind 127.0.0.1 "${redis_persist[@]}" \
    >>"$work/redis.log" 2>&1 &
  pids+=($!)
  wait_for redis-server redis-cli -p "$redis_port" ping
}

# The master's get RPCs so far (GetReplicaList + BatchGetReplicaList).
master_get_rpcs() {
  curl -sf "http://127.0.0.1:$metrics/metrics" | awk '
    /^master_(batch_)?get_replica_list_requests_total / {n += $2} END {print n + 0}'
}

# run_case NAME COMPARE BENCH-ARGS...: RUNS fresh clusters (and redis), one
# JSON each (and NAME.I.rpcs: the master's get RPCs during the bench);
# COMPARE=redis adds --compare against that run's redis. A first
# unmeasured put pass writes the pool twice over, so the figures are those of
# a warm pool in steady state (full, evicting), not of first page faults.
run_case() {
  local name=$1 compare=$2; shift 2
  local extra=()
  local rpcs_before
  for i in $(seq "${case_runs:-$runs}"); do
    start_cluster "$segment"
    "$bin" bench --op put --value-size 4mb --ops "$warm_ops" >/dev/null
    [ "$compare" = redis ] && extra=(--compare "redis://127.0.0.1:$redis_port")
    echo "== $name (run $i/${case_runs:-$runs}): mooncake bench $* ${extra[*]}" >&2
    rpcs_before=$(master_get_rpcs)
    "$bin" bench "$@" "${extra[@]}" --json "$work/$name.$i.json" >>"$work/bench.log"
    echo $(( $(master_get_rpcs) - rpcs_before )) >"$work/$name.$i.rpcs"
    echo "$store_pages" >"$work/$name.$i.pages"
    echo "$persistence" >"$work/$name.$i.persistence"
    stop_all
  done
}

segment_bytes=$(bytes_of "$segment")
if [ "$hugepages" = auto ]; then
  # Pages for the segment, and a few for rounding; the store falls back to
  # 4 KiB pages by itself if the kernel could not reserve them all.
  want=$(( (segment_bytes + (2 << 20) - 1) / (2 << 20) + 8 ))
  have=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${have:-0}" -lt "$want" ] && [ -w /proc/sys/vm/nr_hugepages ]; then
    hugepages_before=$(cat /proc/sys/vm/nr_hugepages)
    echo $(( hugepages_before + want - have )) >/proc/sys/vm/nr_hugepages || true
  fi
  echo "bench_suite: huge pages free: $(awk '/^HugePages_Free/ {print $2}' /proc/meminfo) of 2 MiB (segment needs $want)" >&2
fi

warm_ops=$(( 2 * segment_bytes / (4 << 20) ))
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

small=(--op put,get --value-size 4kb --batch 32 --threads "$threads" --duration "$duration")
if runs_part gets && ! runs_part workloads; then
  persistence=everysec
  case_runs=$get_runs
  runs=$get_runs  # what the report says each figure is the median of
  run_case put_get_4k_b32_everysec redis "${small[@]}"
  run_case put_get_4k_b32_tcp_everysec redis "${small[@]}" --no-shm
  case_runs=""
  persistence=none
fi
if runs_part workloads; then
run_case put_get_4m_same_host redis --op put,get --value-size 4mb --duration "$duration"
run_case put_get_4m_tcp redis --op put,get --value-size 4mb --duration "$duration" --no-shm
# Small objects: the master in each durability mode against the Redis
# persistence it compares with, on both paths.
for persistence in everysec always none; do
  run_case "put_get_4k_b32_$persistence" redis "${small[@]}"
  run_case "put_get_4k_b32_tcp_$persistence" redis "${small[@]}" --no-shm
done
persistence=none
store_flags=(--no-hugepages)
run_case put_get_4m_same_host_small redis --op put,get --value-size 4mb --duration "$duration"
run_case put_get_4m_tcp_small redis --op put,get --value-size 4mb --duration "$duration" --no-shm
store_flags=()
for t in 1 8; do
  for b in 1 32; do
    run_case "metadata_t${t}_b${b}" none --metadata-only --op put,get --value-size 4kb \
      --threads "$t" --batch "$b" --duration "$duration"
  done
done
fi

# The data plane against the loopback TCP ceiling and memcpy, and the master
# at scale: their own scripts, each with its own cluster; their output goes
# into the report as printed.
if runs_part dataplane; then
  echo "== scripts/bench_dataplane.sh reps=$runs" >&2
  MOONCAKE_BIN=$bin bash "$here/scripts/bench_dataplane.sh" "reps=$runs" >"$work/dataplane.txt" 2>&1 ||
    echo "bench_suite: bench_dataplane.sh failed (its output is in the report)" >&2
fi
if runs_part scale && [ "$scale_objects" -gt 0 ]; then
  echo "== scripts/bench_master_scale.sh $scale_objects" >&2
  MOONCAKE_BIN=$bin bash "$here/scripts/bench_master_scale.sh" "$scale_objects" >"$work/scale.txt" 2>&1 ||
    echo "bench_suite: bench_master_scale.sh failed (its output is in the report)" >&2
fi

# Trace replay: pools of 2048..16384 blocks, one fresh cluster each.
block_bytes=$(bytes_of "$block_size")
# Each pool runs twice: with the master's default eviction high watermark
# (0.90: background eviction keeps a tenth of the pool free so puts rarely
# wait) and with 1.0 (evict only when a put needs room), which gives the
# policy the whole pool, the capacity the exact-LRU figure is computed for.
for i in $(seq "$trace_runs"); do
runs_part trace || break
for blocks in 2048 4096 8192 16384; do
  for wm in 0.9 1.0; do
    start_cluster "$((blocks * block_bytes))" --default-kv-lease-ttl "$trace_lease" \
      --eviction-high-watermark-ratio "$wm"
    echo "== trace at $blocks blocks, high watermark $wm (run $i/$trace_runs)" >&2
    "$bin" bench --trace "$trace" --block-size "$block_size" \
      --json "$work/trace_${blocks}_wm$wm.$i.json" >>"$work/bench.log"
    stop_all
  done
done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 "$here/scripts/bench_table.py" "$work" "$runs" "$duration" "$started" "$load_start" \
  "$load_end" "$trace" "$block_size" "$trace_lease" "$trace_runs" "$threads" >"$out"
# The gets of issue 33 on the terminal too (they are in the report).
sed -n '/^Gets of the default durable master/,/^| TCP/p' "$out" >&2 || true
if [ -n "$readme" ]; then
  # The generated part sits between two marker lines; the prose around it
  # is kept.
  python3 - "$readme" "$out" <<'PY'
import sys
readme, part = sys.argv[1], open(sys.argv[2]).read()
begin, end = "<!-- bench_suite.sh: begin -->", "<!-- bench_suite.sh: end -->"
text = open(readme).read()
if begin not in text or end not in text:
    sys.exit(f"bench_suite: {readme} has no {begin} ... {end} markers")
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
open(readme, "w").write(head + begin + "\n" + part.rstrip("\n") + "\n" + end + tail)
PY
  rm -f "$out"
  echo "bench_suite: regenerated the performance section of $readme (raw JSON and logs in $work)" >&2
else
  echo "bench_suite: wrote $out (raw JSON and logs in $work)" >&2
fi
