#!/usr/bin/env bash
# Sets up everything and runs mooncake on defaults on this machine: a master
# (with its embedded metadata server) and one store, then a put/get round
# trip through the client. Stops what it started.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
# The binary and the Python module are all it runs; the tests and benchmarks
# (a third of the build) wait for scripts/test.sh.
SETUP_TARGETS=${SETUP_TARGETS-src/cli/mooncake} bash scripts/setup.sh
bin=build/src/cli/mooncake
"$bin" version

free_or_pick() {  # prints $1 if it is free, else a free port
  python3 -c 'import socket,sys
want = int(sys.argv[1])
s = socket.socket()
try:
    s.bind(("0.0.0.0", want))
except OSError:
    s = socket.socket(); s.bind(("0.0.0.0", 0)); want = s.getsockname()[1]
    print(f"quickstart: port {sys.argv[1]} is busy; using {want}", file=sys.stderr)
print(want)' "$1"
}
rpc=$(free_or_pick 50051)
admin=$(free_or_pick 9003)
meta=$(free_or_pick 8080)
export MOONCAKE_MASTER="127.0.0.1:$rpc"
export MOONCAKE_TE_META_DATA_SERVER="http://127.0.0.1:$meta/metadata"

logdir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$logdir"
}
trap cleanup EXIT

set -x
"$bin" master --port "$rpc" --metrics-port "$admin" --data-dir "$logdir/state" --enable-http-metadata-server \
  --http-metadata-server-port "$meta" >"$logdir/master.log" 2>&1 &
{ set +x; } 2>/dev/null
pids+=($!)
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$admin/health" >/dev/null 2>&1 && break
  sleep 0.1
done
set -x
"$bin" store --segment 1gb >"$logdir/store.log" 2>&1 &
{ set +x; } 2>/dev/null
pids+=($!)
for _ in $(seq 100); do
  [ -n "$(curl -fs "http://127.0.0.1:$admin/get_all_segments")" ] && break
  sleep 0.1
done
cat "$logdir/master.log" "$logdir/store.log"

set -x
echo "hello mooncake" | "$bin" put quickstart/greeting
value=$("$bin" get quickstart/greeting)
"$bin" ls -l
{ set +x; } 2>/dev/null
echo "$value"
[ "$value" = "hello mooncake" ] || { echo "quickstart: get returned '$value'" >&2; exit 1; }
curl -fs "http://127.0.0.1:$admin/metrics/summary"
echo "quickstart: put/get round trip through master + store OK; stopping them"
