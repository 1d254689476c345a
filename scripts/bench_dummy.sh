#!/usr/bin/env bash
# Issue 30, point 6: a dummy client of `mooncake client` beside an embedded
# client on the same cluster: a memory-only master and one `mooncake client`
# (its segment is the pool) on 127.0.0.1, free ports; scripts/bench_dummy.py
# runs both clients alternately and prints medians side by side with the
# ratio (the goal is a dummy at 90% or more of embedded); every process is
# stopped by its pid.
#   scripts/bench_dummy.sh [reps=5] [duration_s=2]
# Env: BUILD (default build), MC_BENCH_SEGMENT (the client's segment, default
# 2gb), PYTHON (default /usr/bin/python3), HUGEPAGES: "auto" (default)
# reserves 2 MiB huge pages for the segment when run as root, as a deployment
# would (mooncake-store(1), HUGE PAGES), and puts the old count back at exit;
# "off" leaves the system as it is. Huge pages matter here: a process's
# first touch of each 4 KiB page of a segment it maps is a fault, and on
# shadow-paged VMs (ours: ~50 ms per 4 MiB, ~0.3 ms on huge pages) the dummy's
# own mapping, which only its direct reads touch, would pay it in the gets.
# Run it on a quiet machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
BIN="$here/$build/src/cli/mooncake"
reps=${1:-5}
duration=${2:-2}
segment=${MC_BENCH_SEGMENT:-2gb}
python=${PYTHON:-/usr/bin/python3}
[[ -x $BIN ]] || { echo "bench_dummy: $BIN missing; run: ninja -C $build" >&2; exit 2; }

NAME=bench_dummy
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # work dir, pids stopped on exit, free_port
rpc=$(free_port); admin=$(free_port); meta=$(free_port); cport=$(free_port)

hugepages_before=""
if [[ ${HUGEPAGES:-auto} == auto && -w /proc/sys/vm/nr_hugepages ]]; then
  seg_bytes=$(python3 -c "
import re, sys
m = re.fullmatch(r'([0-9]+)\s*([kmgt]?i?b?)', sys.argv[1].strip().lower())
print(int(m.group(1)) * 1024 ** ' kmgt'.index((m.group(2) or ' ')[0]))" "$segment")
  want=$(( (seg_bytes + (2 << 20) - 1) / (2 << 20) + 8 ))
  have=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
  if (( ${have:-0} < want )); then
    hugepages_before=$(cat /proc/sys/vm/nr_hugepages)
    echo $(( hugepages_before + want - have )) >/proc/sys/vm/nr_hugepages || true
  fi
fi
restore_hugepages() {
  [[ -n $hugepages_before ]] && echo "$hugepages_before" >/proc/sys/vm/nr_hugepages || true
}
trap 'cleanup; restore_hugepages' EXIT

"$BIN" master --port "$rpc" --metrics-port "$admin" --rpc-address 127.0.0.1 \
  --enable-http-metadata-server --http-metadata-server-host 127.0.0.1 \
  --http-metadata-server-port "$meta" --data-dir none --log-level warn >"$work/master.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do curl -fs "http://127.0.0.1:$admin/health" >/dev/null && break; sleep 0.05; done
"$BIN" client --master "127.0.0.1:$rpc" --metadata-server "http://127.0.0.1:$meta/metadata" \
  --port "$cport" --global-segment-size "$segment" >"$work/client.log" 2>&1 &
pids+=($!)
for _ in $(seq 1200); do
  grep -q "segment prefaulted" "$work/client.log" 2>/dev/null && break
  kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/client.log" >&2; exit 1; }
  sleep 0.1
done

echo "bench_dummy: master 127.0.0.1:$rpc, mooncake client @mooncake_client_$cport.sock with a" \
  "$segment segment ($(grep -o '[a-z]* pages) mounted' "$work/client.log" | head -1 | cut -d')' -f1))," \
  "$(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $reps runs of ${duration}s per workload and client"
PYTHONPATH="$here/$build/src/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$here/scripts/bench_dummy.py" \
  --master "127.0.0.1:$rpc" --meta "http://127.0.0.1:$meta/metadata" --client "127.0.0.1:$cport" \
  --reps "$reps" --duration "$duration" ${MC_BENCH_JSON:+--json "$MC_BENCH_JSON"}
