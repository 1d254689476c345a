#!/bin/bash
# bench_rdma.sh: `mooncake bench --protocol rdma` beside perftest's
# ib_write_bw / ib_read_bw, in one soft-RoCE guest run (../shared/tools/
# rdma_vm.sh), for 1 MiB and 4 MiB objects; prints each figure and the
# ratio mooncake / perftest (put vs ib_write_bw, get vs ib_read_bw).
# Usage: scripts/bench_rdma.sh [ITERATIONS [BATCH]]   (from the source root;
# defaults 40 and 4). BATCH keys per call, as an engine's batch_put_from /
# batch_get_into moves a request's KV blocks: their transfers share one
# master round trip and are in flight together, as perftest keeps its queue
# full; BATCH 1 measures one object at a time.
# Then mooncake.engine.TransferEngine 4 MiB write/read beside the bench's
# put/get on the same device (scripts/bench_engine.py --transports rdma).
# Absolute figures under TCG emulation are tiny; the ratio is what counts.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-40}
batch=${2:-4}
if [ -z "${RDMAVM_IBDEV:-}" ]; then
  vm="$src/../shared/tools/rdma_vm.sh"
  [ -x "$vm" ] || { echo "bench_rdma: $vm is absent" >&2; exit 1; }
  cd "$src"
  export RDMAVM_TIMEOUT=${RDMAVM_TIMEOUT:-900}
  cmd="bash scripts/bench_rdma.sh $n $batch"
  # Nested KVM hangs on some hosts: hide /dev/kvm so the tool uses TCG (see
  # tests/rdma/run_guest.sh); MC_RDMA_VM_KVM=1 keeps KVM.
  if [ -e /dev/kvm ] && [ "${MC_RDMA_VM_KVM:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
    exec unshare -m bash -c 'e=$(mktemp); mount --bind "$e" /dev/kvm && mount -o remount,bind,ro /dev/kvm; exec "$0" "$1"' "$vm" "$cmd"
  fi
  exec "$vm" "$cmd"
fi

# Inside the guest.
B=${MOONCAKE_BIN:-$src/build/src/cli/mooncake}
dev=$RDMAVM_IBDEV gi=$RDMAVM_GID_INDEX
perf() {  # perf ib_write_bw BYTES -> MB/s (perftest's BW average)
  "$1" -d "$dev" -x "$gi" -s "$2" -n "$n" -F >/dev/null 2>&1 &
  local srv=$!
  # The server must listen (perftest's port 18515) before the client runs:
  # on a loaded host a fixed second was sometimes not enough (0 MB/s).
  for _ in $(seq 100); do ss -ltn 2>/dev/null | grep -q ':18515 ' && break; sleep 0.1; done
  "$1" -d "$dev" -x "$gi" -s "$2" -n "$n" -F "$RDMAVM_ADDR" 2>/dev/null |
    awk '$1 == '"$2"' { print $4 }'
  wait "$srv"
}
"$B" master --port 50051 --metrics-port 9003 --data-dir none --rpc-address 127.0.0.1 \
  >/tmp/master.log 2>&1 &
sleep 1
"$B" store --master 127.0.0.1:50051 --segment 384mb --protocol rdma --device "$dev" \
  >/tmp/store.log 2>&1 &
for i in $(seq 100); do grep -q "mounted" /tmp/store.log && break; sleep 0.5; done
echo "store: $(grep -o 'mounted.*' /tmp/store.log | head -1)"
for mib in 1 4; do
  bytes=$((mib << 20))
  w=$(perf ib_write_bw $bytes); r=$(perf ib_read_bw $bytes)
  out=$("$B" bench --master 127.0.0.1:50051 --protocol rdma --device "$dev" --shm=false \
        --value-size ${mib}mb --op put,get --ops "$n" --keys "$n" --batch "$batch" \
        --json /tmp/bench.json 2>&1)
  echo "$out" | grep -E "^(transfer_path|batch):" | head -2
  python3 - "$mib" "$w" "$r" /tmp/bench.json <<'PY'
import json, sys
mib, w, r, path = sys.argv[1], float(sys.argv[2] or 0), float(sys.argv[3] or 0), sys.argv[4]
res = json.load(open(path))
ops = {o.get("op"): o for o in res.get("results", res.get("ops", []))} if isinstance(res, dict) else {}
def mbps(op):
    o = ops.get(op, {})
    for k in ("throughput_mb_s", "mb_per_s", "bytes_per_s"):
        if k in o:
            return o[k] / (1e6 if k == "bytes_per_s" else 1)
    return float("nan")
put, get = mbps("put"), mbps("get")
print(f"{mib} MiB  put {put:8.1f} MB/s  ib_write_bw {w:8.1f} MB/s  ratio {put / w if w else float('nan'):.2f}")
print(f"{mib} MiB  get {get:8.1f} MB/s  ib_read_bw  {r:8.1f} MB/s  ratio {get / r if r else float('nan'):.2f}")
PY
done

# mooncake.engine.TransferEngine over rdma beside mooncake bench's 4 MiB
# put/get on the same device (issue 30, point 6): medians of TE_REPS runs of
# TE_SECONDS each, alternating sides.
echo "TransferEngine vs mooncake bench, rdma on $dev:"
PYTHONPATH="$(dirname "$(dirname "$B")")/python" python3 "$src/scripts/bench_engine.py" \
  --bin "$B" --master 127.0.0.1:50051 --transports rdma --device "$dev" \
  --reps "${TE_REPS:-3}" --duration "${TE_SECONDS:-2}" --peer-mib 64
