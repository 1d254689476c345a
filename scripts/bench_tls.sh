#!/usr/bin/env bash
# Issue 22, point 1: what TLS costs. Runs `mooncake bench` put/get over the
# TCP data path (--no-shm) against a master and one store on 127.0.0.1,
# first in plain TCP, then with TLS on every connection (certificates made
# here with the openssl command), for 4 MiB values one per call and 4 KiB
# values in batches of 32, and prints the two side by side: the median of
# REPS runs (default 3) of DURATION each (default 3s). Says whether kernel
# TLS was available (OpenSSL build and the kernel's `tls` module).
# Usage: scripts/bench_tls.sh [REPS] [DURATION]; the build must exist.
# Run it on a quiet machine: the figures move with other load.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN="$here/build/src/cli/mooncake"
reps=${1:-3}
duration=${2:-3s}
[[ -x $BIN ]] || { echo "bench_tls: $BIN missing; run: ninja -C build" >&2; exit 2; }
command -v openssl >/dev/null || { echo "bench_tls: needs the openssl command" >&2; exit 2; }
NAME=bench_tls
OBJECTS=0
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"  # $work, pids stopped on exit, free_port, median

# A CA and one certificate for 127.0.0.1, used by master, store and client.
(
  cd "$work"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null
  openssl req -x509 -new -key ca.key -subj "/CN=bench CA" -days 1 -out ca.pem 2>/dev/null
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out node.key 2>/dev/null
  openssl req -new -key node.key -subj "/CN=node" -out node.csr 2>/dev/null
  echo "subjectAltName=IP:127.0.0.1,DNS:localhost" >san.cnf
  openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
    -extfile san.cnf -out node.pem 2>/dev/null
)
tls_flags=(--tls-cert "$work/node.pem" --tls-key "$work/node.key" --tls-ca "$work/ca.pem")

# Kernel TLS: OpenSSL must be built with it, and the kernel must load `tls`.
if grep -qs "define OPENSSL_NO_KTLS" /usr/include/*/openssl/configuration.h \
    /usr/include/openssl/configuration.h; then
  ossl_ktls="OpenSSL built without kernel TLS"
else
  ossl_ktls="OpenSSL $(openssl version | cut -d' ' -f2) built with kernel TLS"
fi
kernel_ktls=$(python3 - <<'EOF'
import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname())
try:
    c.setsockopt(socket.SOL_TCP, 31, b"tls")  # TCP_ULP
    print("kernel tls module available")
except OSError as e:
    print(f"kernel has no tls module ({e.strerror})")
EOF
)
if [[ $ossl_ktls == *"built with"* && $kernel_ktls == *available* ]]; then
  ktls_used="kernel TLS offered (SSL_OP_ENABLE_KTLS is set; OpenSSL uses it where the cipher allows)"
else
  ktls_used="user-space TLS (no kernel TLS)"
fi

# up MODE: a master and a store, plain or with TLS; sets $port, $mport.
up() {
  local extra=()
  [[ $1 == tls ]] && extra=("${tls_flags[@]}")
  port=$(free_port); mport=$(free_port)
  "$BIN" master --port "$port" --metrics-port "$mport" --rpc-address 127.0.0.1 \
    --data-dir none --log-level warn "${extra[@]}" >>"$work/master-$1.log" 2>&1 &
  pids+=($!)
  "$BIN" store --master "127.0.0.1:$port" --segment 2gb --no-hugepages --metadata-server none \
    --log-level warn "${extra[@]}" >>"$work/store-$1.log" 2>&1 &
  pids+=($!)
  local scheme=http curl_tls=()
  [[ $1 == tls ]] && scheme=https && curl_tls=(--cacert "$work/ca.pem")
  for _ in $(seq 300); do
    curl -fs "${curl_tls[@]}" "$scheme://127.0.0.1:$mport/get_all_segments" | grep -q . && return 0
    sleep 0.1
  done
  echo "bench_tls: the $1 cluster did not come up; logs in $work" >&2; exit 1
}

# one MODE SIZE BATCH: REPS runs; prints "put_ops put_gbs get_ops get_gbs" medians.
one() {
  local mode=$1 size=$2 batch=$3 r
  local env=(MOONCAKE_MASTER="127.0.0.1:$port")
  [[ $mode == tls ]] && env+=(MOONCAKE_TLS_CA="$work/ca.pem")
  local po=() pg=() go=() gg=()
  for r in $(seq "$reps"); do
    env "${env[@]}" "$BIN" bench --op put,get --value-size "$size" --batch "$batch" \
      --duration "$duration" --keys 200 --no-shm --log-level warn \
      --json "$work/$mode-$size-$r.json" >/dev/null
    read -r a b c d < <(python3 -c '
import json, sys
r = {x["op"]: x for x in json.load(open(sys.argv[1]))["results"]}
print(r["put"]["ops_per_s"], r["put"]["bytes_per_s"] / 1e9, r["get"]["ops_per_s"], r["get"]["bytes_per_s"] / 1e9)
' "$work/$mode-$size-$r.json")
    po+=("$a"); pg+=("$b"); go+=("$c"); gg+=("$d")
  done
  echo "$(echo "${po[@]}" | median) $(echo "${pg[@]}" | median) $(echo "${go[@]}" | median) $(echo "${gg[@]}" | median)"
}

declare -A res
for mode in plain tls; do
  up "$mode"
  res[$mode-4mb]=$(one "$mode" 4mb 1)
  res[$mode-4kb]=$(one "$mode" 4kb 32)
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
done

echo "bench_tls: mooncake bench put then get over the TCP data path (--no-shm), 1 client thread,"
echo "  one store (2 GB memfd segment) and a memory-only master on 127.0.0.1; median of $reps runs"
echo "  of $duration; $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  TLS 1.3 ($(openssl version | cut -d' ' -f1-2)); $ossl_ktls; $kernel_ktls: $ktls_used"
printf '\n%-22s %-4s %14s %10s %14s %10s %9s\n' workload op "plain ops/s" "plain GB/s" "TLS ops/s" "TLS GB/s" "TLS/plain"
for w in 4mb 4kb; do
  label=$([[ $w == 4mb ]] && echo "4 MiB, 1 per call" || echo "4 KiB, batch of 32")
  read -r ppo ppg pgo pgg <<<"${res[plain-$w]}"
  read -r tpo tpg tgo tgg <<<"${res[tls-$w]}"
  awk -v l="$label" -v a="$ppo" -v b="$ppg" -v c="$tpo" -v d="$tpg" \
    'BEGIN {printf "%-22s %-4s %14.0f %10.3f %14.0f %10.3f %8.0f%%\n", l, "put", a, b, c, d, 100 * c / a}'
  awk -v l="$label" -v a="$pgo" -v b="$pgg" -v c="$tgo" -v d="$tgg" \
    'BEGIN {printf "%-22s %-4s %14.0f %10.3f %14.0f %10.3f %8.0f%%\n", l, "get", a, b, c, d, 100 * c / a}'
done
