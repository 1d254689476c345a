#!/usr/bin/env bash
# Sets up everything and runs mooncake on defaults on this machine: for now the
# metadata server, with a PUT and GET against it. Stops what it started.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/setup.sh
bin=build/src/cli/mooncake
"$bin" version

port_free() {
  python3 -c 'import socket,sys
s = socket.socket()
try:
    s.bind(("0.0.0.0", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
}
port=8080
if ! port_free "$port"; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])')
  echo "quickstart: port 8080 is busy; using $port instead"
fi

log=$(mktemp)
"$bin" metadata-server --port "$port" >"$log" 2>&1 &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -f "$log"
}
trap cleanup EXIT

url="http://127.0.0.1:$port"
for _ in $(seq 100); do
  curl -fs "$url/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "quickstart: metadata-server exited" >&2; exit 1; }
  sleep 0.1
done
cat "$log"

echo "+ curl -X PUT --data-binary 'hello mooncake' '$url/metadata?key=quickstart/greeting'"
curl -fsS -X PUT --data-binary 'hello mooncake' "$url/metadata?key=quickstart/greeting"
echo "+ curl '$url/metadata?key=quickstart/greeting'"
value=$(curl -fsS "$url/metadata?key=quickstart/greeting")
echo "$value"
[ "$value" = "hello mooncake" ] || { echo "quickstart: GET returned '$value'" >&2; exit 1; }

kill "$pid"
wait "$pid"
echo "quickstart: metadata server (pid $pid) stopped; all good"
