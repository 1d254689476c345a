#!/usr/bin/env bash
# The disk tier against fio on the same file system, side by side in one run
# (issue 31, point 5). Each round runs, alternating, on the same directory:
#   fio   sequential write then read of SIZE, O_DIRECT, one job:
#         "fio 4M x1"  psync, 4 MiB blocks (4 MiB in flight)
#         "fio 1M x4"  io_uring, 1 MiB blocks, iodepth 4 (4 MiB in flight)
#         "fio 4M xQD" io_uring, 4 MiB blocks, iodepth QD
#   tier  benchmarks/tier_bench: 4 MiB objects written (offload) then read
#         back (disk-read) through tier::DiskTier as the store does it
#         (O_DIRECT, CRC-32C of every object, temporary file and rename):
#         "tier"        the store's default (io_uring, 4 x 1 MiB in flight per
#                       object), one caller as the store's tier worker, the
#                       objects page-aligned in memory;
#         "tier +64"    the same, the objects 64 bytes past a page (what the
#                       master's 64-byte allocator often gives: copied
#                       through bounce chunks);
#         "tier before" the previous engine (pwrite/pread, one 4 MiB I/O,
#                       checksum after it), page-aligned;
#         "tier xQD"    the default with QD callers at once.
# The tier's goal: >= 80% of fio with the same bytes in flight (the better of
# "fio 4M x1" and "fio 1M x4"; "tier xQD" against "fio 4M xQD"). MB/s are
# 10^6 bytes/s, medians over ROUNDS. Every round prints the load (uptime) and
# the CPU idle share during it: this machine is shared, so only ratios
# measured side by side mean anything.
#
#   scripts/bench_ssd.sh [DIR]      (DIR: a directory on the disk to measure;
#                                    default a fresh one under /var/tmp)
#
# Environment: SIZE of each run (1g), QD (4), ROUNDS (5), BUILD folder (build).
set -euo pipefail
BUILD=${BUILD:-build}
SIZE=${SIZE:-1g}
QD=${QD:-4}
ROUNDS=${ROUNDS:-5}
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

fio_run() {  # fio_run NAME ENGINE BS DEPTH: appends write and read MB/s to runs[NAME.w|r]
  local rw k
  for rw in write read; do
    k=$([ $rw = write ] && echo w || echo r)
    runs[$1.$k]+=" $(fio --name=seq --filename="$dir/fio.dat" --rw=$rw --bs="$3" --size="$SIZE" \
        --direct=1 --ioengine="$2" --iodepth="$4" --numjobs=1 --end_fsync=0 \
        --output-format=json 2>/dev/null |
      python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.1f" % (j[sys.argv[1]]["bw_bytes"]/1e6))' $rw)"
  done
  rm -f "$dir/fio.dat"
}

tier_run() {  # tier_run NAME ARGS...: appends offload and disk-read MB/s
  local name=$1 out
  shift
  out=$("$bench" --path "$dir" --object-size 4mb --total "$SIZE" "$@")
  [ -n "${setup[$name]:-}" ] || setup[$name]=$(echo "$out" | head -1 | sed 's/^tier_bench: [^,]*, //')
  runs[$name.w]+=" $(echo "$out" | awk '/tier offload/ {for (i = 1; i < NF; i++) if ($(i+1) == "MB/s") print $i}')"
  runs[$name.r]+=" $(echo "$out" | awk '/tier disk-read/ {for (i = 1; i < NF; i++) if ($(i+1) == "MB/s") print $i}')"
}

cpu_busy() { awk '/^cpu / {print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }  # busy idle jiffies

echo "bench_ssd: $dir ($(df -hT "$dir" | awk 'NR==2 {print $2 " on " $1}')), $SIZE per run," \
     "$ROUNDS rounds, $(nproc) CPUs; medians; fio and the tier alternate, as a shared disk drifts"
declare -A runs setup
for round in $(seq "$ROUNDS"); do
  read -r b0 i0 < <(cpu_busy)
  load=$(uptime | sed 's/.*load average: //')
  fio_run fio4 psync 4M 1
  tier_run tier
  fio_run fio1 io_uring 1M 4
  tier_run tier64 --misalign 64
  tier_run before --io sync --chunk 4mb --depth 1
  fio_run fioq io_uring 4M "$QD"
  tier_run tierq --threads "$QD"
  read -r b1 i1 < <(cpu_busy)
  last() { echo "${runs[$1.w]##* }/${runs[$1.r]##* }"; }
  echo "round $round (load $load; CPU idle $(( 100 * (i1 - i0) / (b1 - b0 + i1 - i0 + 1) ))%):" \
       "fio 4M x1 $(last fio4), 1M x4 $(last fio1); tier $(last tier), +64 $(last tier64)," \
       "before $(last before); fio 4M x$QD $(last fioq), tier x$QD $(last tierq) MB/s (write/read)"
done
med() { python3 -c 'import statistics,sys; print("%.1f" % statistics.median(map(float, sys.argv[1:])))' ${runs[$1]}; }
best() { python3 -c 'import sys; print(max(map(float, sys.argv[1:])))' "$@"; }
pct() { python3 -c "print('%.0f%%' % (100*float('$1')/float('$2')))"; }
row() { printf '%-44s %12s %12s\n' "$@"; }
ref_w=$(best "$(med fio4.w)" "$(med fio1.w)")
ref_r=$(best "$(med fio4.r)" "$(med fio1.r)")
echo
for n in tier tier64 before tierq; do echo "$n: ${setup[$n]}"; done
echo
row "" "write MB/s" "read MB/s"
row "fio 4M x1 (psync, 4 MiB blocks)" "$(med fio4.w)" "$(med fio4.r)"
row "fio 1M x4 (io_uring, 1 MiB blocks, depth 4)" "$(med fio1.w)" "$(med fio1.r)"
for n in tier tier64 before; do
  label=$(case $n in tier) echo "tier (store default)";; tier64) echo "tier, objects 64 B past a page";;
          before) echo "tier before (pwrite/pread, 4 MiB)";; esac)
  row "$label" "$(med $n.w)" "$(med $n.r)"
  row "  / the better fio with 4 MiB in flight" "$(pct "$(med $n.w)" "$ref_w")" "$(pct "$(med $n.r)" "$ref_r")"
done
row "fio 4M x$QD (io_uring, depth $QD)" "$(med fioq.w)" "$(med fioq.r)"
row "tier, $QD callers" "$(med tierq.w)" "$(med tierq.r)"
row "  / fio 4M x$QD" "$(pct "$(med tierq.w)" "$(med fioq.w)")" "$(pct "$(med tierq.r)" "$(med fioq.r)")"
