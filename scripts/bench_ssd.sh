#!/usr/bin/env bash
# The disk tier against fio on the same file system, side by side in one run:
# fio sequential write and read of 4 MiB blocks with O_DIRECT (psync, one job:
# queue depth 1, and io_uring at queue depth QD), then the tier's 4 MiB
# offload (write) and disk-read bandwidth (benchmarks/tier_bench: O_DIRECT,
# CRC-32C on every object, temporary file and rename) with 1 and QD threads.
# Prints MB/s (10^6 bytes/s) and the tier's share of fio's figure at the same
# queue depth (the goal is >= 80%).
#
#   scripts/bench_ssd.sh [DIR]      (DIR: a directory on the disk to measure;
#                                    default a fresh one under /var/tmp)
#
# Environment: SIZE of each run (1g), QD (4), ROUNDS (3), BUILD folder (build).
set -euo pipefail
BUILD=${BUILD:-build}
SIZE=${SIZE:-1g}
QD=${QD:-4}
ROUNDS=${ROUNDS:-3}
bench="$BUILD/benchmarks/tier_bench"
[ -x "$bench" ] || { echo "bench_ssd: build $bench first (ninja -C $BUILD)" >&2; exit 2; }
command -v fio >/dev/null || { echo "bench_ssd: fio is not installed" >&2; exit 2; }
dir=${1:-$(mktemp -d /var/tmp/mc-bench-ssd.XXXXXX)}
mkdir -p "$dir"
made=$([ $# -eq 0 ] && echo yes || echo no)
cleanup() {
  rm -f "$dir/fio.dat"
  rm -rf "$dir/objects"
  [ "$made" = yes ] && rmdir "$dir" 2>/dev/null || true
}
trap cleanup EXIT

fio_mbs() {  # fio_mbs RW ENGINE DEPTH: MB/s of one sequential run
  fio --name=seq --filename="$dir/fio.dat" --rw="$1" --bs=4M --size="$SIZE" --direct=1 \
      --ioengine="$2" --iodepth="$3" --numjobs=1 --end_fsync=0 --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; k=sys.argv[1]; print("%.1f" % (j[k]["bw_bytes"]/1e6))' \
      "$([ "$1" = write ] && echo write || echo read)"
}

tier_mbs() {  # tier_mbs THREADS: "offload_MB/s read_MB/s"
  "$bench" --path "$dir" --object-size 4mb --total "$SIZE" --threads "$1" |
    awk '/tier offload/ {w=$(NF-1)} /tier offload/ && /O_DIRECT/ {w=$(NF-2)}
         /tier disk-read/ {r=$(NF-1)} END {print w, r}'
}

echo "bench_ssd: $dir ($(df -hT "$dir" | awk 'NR==2 {print $2 " on " $1}')), $SIZE per run," \
     "4 MiB blocks, $ROUNDS rounds (medians; fio and the tier alternate, as a shared disk drifts)"
declare -A runs
for round in $(seq "$ROUNDS"); do
  runs[fw1]+=" $(fio_mbs write psync 1)"; runs[fr1]+=" $(fio_mbs read psync 1)"
  rm -f "$dir/fio.dat"
  read -r w r < <(tier_mbs 1); runs[tw1]+=" $w"; runs[tr1]+=" $r"
  runs[fwq]+=" $(fio_mbs write io_uring "$QD")"; runs[frq]+=" $(fio_mbs read io_uring "$QD")"
  rm -f "$dir/fio.dat"
  read -r w r < <(tier_mbs "$QD"); runs[twq]+=" $w"; runs[trq]+=" $r"
  echo "round $round: fio $(echo "${runs[fw1]##* }/${runs[fr1]##* }") tier $(echo "${runs[tw1]##* }/${runs[tr1]##* }")" \
       "fio qd $(echo "${runs[fwq]##* }/${runs[frq]##* }") tier qd $(echo "${runs[twq]##* }/${runs[trq]##* }") MB/s (write/read)"
done
med() { python3 -c 'import statistics,sys; print("%.1f" % statistics.median(map(float, sys.argv[1:])))' ${runs[$1]}; }
pct() { python3 -c "print('%.0f%%' % (100*float('$1')/float('$2')))"; }
row() { printf '%-34s %12s %12s\n' "$@"; }
row "" "write MB/s" "read MB/s"
row "fio psync, depth 1" "$(med fw1)" "$(med fr1)"
row "tier, 1 thread" "$(med tw1)" "$(med tr1)"
row "  tier / fio" "$(pct "$(med tw1)" "$(med fw1)")" "$(pct "$(med tr1)" "$(med fr1)")"
row "fio io_uring, depth $QD" "$(med fwq)" "$(med frq)"
row "tier, $QD threads" "$(med twq)" "$(med trq)"
row "  tier / fio" "$(pct "$(med twq)" "$(med fwq)")" "$(pct "$(med trq)" "$(med frq)")"
