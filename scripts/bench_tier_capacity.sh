#!/usr/bin/env bash
# The disk tier's capacity benchmark (issue 31): the trace replay
# (`mooncake bench --trace`) against memory of C blocks alone, then against
# C blocks of memory plus 4C of disk (master --enable-offload, store
# --ssd-offload-path), printing both hit ratios beside exact LRU of C and of
# 5C blocks (benchmarks/trace_sim).
#
#   scripts/bench_tier_capacity.sh [C_BLOCKS]      (default 2048)
# Environment: MOONCAKE_BIN (build/src/cli/mooncake), TRACE
# (../shared/traces/synthetic_trace.jsonl), BLOCK_SIZE (64kb), SSD_DIR (a
# temporary directory; put it on the disk to measure), SPEEDUP (0: as fast
# as possible).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOONCAKE_BIN:-$here/build/src/cli/mooncake}
sim=${TRACE_SIM:-$(dirname "$bin")/../../benchmarks/trace_sim}
trace=${TRACE:-$here/../shared/traces/synthetic_trace.jsonl}
block_size=${BLOCK_SIZE:-64kb}
blocks=${1:-2048}
work=$(mktemp -d /tmp/mooncake-tier-capacity.XXXXXX)
ssd=${SSD_DIR:-$work/ssd}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
bytes_of() { python3 -c "import sys,re; m=re.fullmatch(r'(\d+)([kmg]?b?)', sys.argv[1].lower()); print(int(m.group(1))*{'':1,'b':1,'kb':1<<10,'mb':1<<20,'gb':1<<30}[m.group(2)])" "$1"; }
block_bytes=$(bytes_of "$block_size")

# run NAME [master flags...] -- [store flags...]: one fresh cluster, one replay.
run() {
  local name=$1; shift
  local mflags=() sflags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do mflags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  sflags=("$@")
  local rpc metrics
  rpc=$(free_port); metrics=$(free_port)
  export MOONCAKE_MASTER=127.0.0.1:$rpc MOONCAKE_TE_META_DATA_SERVER=none
  "$bin" master --port "$rpc" --metrics-port "$metrics" --rpc-address 127.0.0.1 \
    --data-dir none "${mflags[@]}" >>"$work/master-$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$metrics/health" >/dev/null && break; sleep 0.1; done
  "$bin" store --segment "$((blocks * block_bytes))" --no-hugepages "${sflags[@]}" \
    >>"$work/store-$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$metrics/get_all_segments" | grep -q . && break; sleep 0.1
  done
  sleep 0.5  # the store's disk tier announces itself after mounting
  "$bin" bench --trace "$trace" --block-size "$block_size" --speedup "${SPEEDUP:-0}" \
    --json "$work/$name.json" >>"$work/bench-$name.log" 2>&1
  curl -sf "http://127.0.0.1:$metrics/metrics" | grep '^mooncake_tier_' >"$work/$name.tier" || true
  cleanup
  pids=()
}

echo "trace $trace, block $block_size, C = $blocks blocks ($((blocks * block_bytes)) bytes)"
echo "load before: $(uptime)"
run memory
run disk --enable-offload -- --ssd-offload-path "$ssd" --ssd-size "$((4 * blocks * block_bytes))"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
m = json.load(open(f"{w}/memory.json"))["trace"]
d = json.load(open(f"{w}/disk.json"))["trace"]
print(f"memory C alone:           hit ratio {m['hit_ratio']:.4f}   exact LRU of C: {m['lru_hit_ratio']:.4f}")
print(f"memory C + disk 4C:       hit ratio {d['hit_ratio']:.4f}")
tier = dict(l.split() for l in open(f"{w}/disk.tier") if l.strip())
n = lambda k: int(float(tier.get(k, "0")))
print(f"  offloaded {n('mooncake_tier_offloads_total')}, dropped without a disk copy "
      f"{n('mooncake_tier_dropped_total')}, puts held for offloads {n('mooncake_tier_held_puts_total')}, "
      f"disk evictions {n('mooncake_tier_disk_evictions_total')}")
PY
echo "load after: $(uptime)"
echo "exact LRU of C and 5C (trace_sim):"
"$sim" "$trace" "$blocks" "$((5 * blocks))" | sed -n '/capacity  exact_lru  *lru/,/^$/p'
echo "disk tier counters of the second run:"; cat "$work/disk.tier"
echo "logs in $work"
