#!/usr/bin/env bash
# The disk tier against fio on the same file system, side by side in one run
# (issue 31, point 5). Short runs in pairs, each pair a fio run and a tier
# run back to back (the order alternating), so both see the same load; the
# figure is the median of the pairs' ratios, with its quartiles, since a
# shared machine's bandwidth swings by 2-3x from one second to the next.
#
#   fio   sequential write then read of SIZE, O_DIRECT, one job:
#         "fio 4M x1"  psync, 4 MiB blocks: 4 MiB in flight, one I/O at a time
#         "fio 4M xQD" io_uring, 4 MiB blocks, iodepth QD
#   tier  benchmarks/tier_bench: 4 MiB objects written (offload) then read
#         back (disk-read) through tier::DiskTier as the store does it
#         (O_DIRECT, CRC-32C of every object, temporary file and rename):
#         "tier"        the store's default (io_uring, 4 x 1 MiB in flight per
#                       object), one caller as the store's tier worker, the
#                       objects page-aligned in memory; against fio 4M x1;
#         "tier +64"    the same, the objects 64 bytes past a page (what the
#                       master's 64-byte allocator often gives: copied
#                       through bounce chunks); against fio 4M x1;
#         "tier before" the previous engine (pwrite/pread, one 4 MiB I/O,
#                       checksum after it), page-aligned; against fio 4M x1;
#         "tier base"   with BASE_BENCH set: that tier_bench binary (e.g. one
#                       built from main) with its defaults, page-aligned, one
#                       caller; against fio 4M x1, so a change shows beside
#                       its baseline in one run; "tier base +64" the same
#                       with the objects 64 bytes past a page;
#         "tier full"   the default, one caller, into a full tier: each offload
#                       first removes an old object (tier_bench --full), as
#                       in a store whose disk tier has filled; against fio 4M x1;
#         "tier xQD"    the default with QD callers at once; against fio 4M xQD.
# The goal: the tier >= 80% of fio. MB/s are 10^6 bytes/s. The load (uptime)
# and the CPU idle share are printed for every configuration; beside each
# side's median MB/s its own quartiles over the pairs (is a wide ratio the
# disk's swing, seen by fio too, or ours?), and the CPU each side used while
# it ran, in % of one core (fio's usr + sys; the tier process's user +
# system time over the phase; "-" from a BASE_BENCH that does not print it). Each tier run
# starts from an empty objects directory, as each fio run from a new file
# (the tier's spare files, tier/file_pool.h, are made during the run).
#
#   scripts/bench_ssd.sh [DIR]      (DIR: a directory on the disk to measure;
#                                    default a fresh one under /var/tmp)
#
# Environment: SIZE of each run (128m), PAIRS per configuration (15),
# QD (4), BUILD folder (build), BASE_BENCH (unset: no "tier base" row).
set -euo pipefail
BUILD=${BUILD:-build}
SIZE=${SIZE:-128m}
PAIRS=${PAIRS:-15}
QD=${QD:-4}
bench="$BUILD/benchmarks/tier_bench"
[ -x "$bench" ] || { echo "bench_ssd: build $bench first (ninja -C $BUILD)" >&2; exit 2; }
command -v fio >/dev/null || { echo "bench_ssd: fio is not installed" >&2; exit 2; }
dir=${1:-$(mktemp -d /var/tmp/mc-bench-ssd.XXXXXX)}
mkdir -p "$dir"
made=$([ $# -eq 0 ] && echo yes || echo no)
samples=$(mktemp /tmp/mc-bench-ssd-samples.XXXXXX)
cleanup() {
  rm -f "$dir/fio.dat" "$samples" "$samples.configs" "$samples.setup"
  rm -rf "$dir/objects"
  [ "$made" = yes ] && rmdir "$dir" 2>/dev/null || true
}
trap cleanup EXIT

fio_mbs() {  # fio_mbs RW ENGINE DEPTH LAYOUT: "MB/s CPU%" of one run (terse: KiB/s, read 7, write 48; usr 88, sys 89)
  local where=(--filename="$dir/fio.dat")
  # files: SIZE as 4 MiB files, one open at a time, in order (the tier's layout)
  [ "$4" = files ] && where=(--directory="$dir/fio" --nrfiles="$files" --filesize=4M
                             --openfiles=1 --file_service_type=sequential)
  fio --name=seq "${where[@]}" --rw="$1" --bs=4M --size="$SIZE" --direct=1 \
      --ioengine="$2" --iodepth="$3" --numjobs=1 --end_fsync=0 \
      --output-format=terse --terse-version=3 2>/dev/null |
    awk -F';' -v rw="$1" '{printf "%.1f %.1f\n", (rw == "write" ? $48 : $7) * 1024 / 1e6, $88 + $89}'
}

fio_pair() {  # fio_pair ENGINE DEPTH LAYOUT: "write read write-cpu read-cpu"
  local w r
  mkdir -p "$dir/fio"
  read -r w wc < <(fio_mbs write "$1" "$2" "$3")
  read -r r rc < <(fio_mbs read "$1" "$2" "$3")
  rm -rf "$dir/fio.dat" "$dir/fio"
  echo "$w $r $wc $rc"
}

tier_pair() {  # tier_pair [--bench BINARY] ARGS...: "write read write-cpu read-cpu"; the setup line to stderr
  local binary=$bench
  [ "${1:-}" = --bench ] && { binary=$2; shift 2; }
  "$binary" --path "$dir" --object-size 4mb --total "$SIZE" "$@" |
    awk '/^tier_bench:/ {sub(/^tier_bench: [^,]*, /, ""); print > "/dev/stderr"}
         /tier offload|tier disk-read/ {m++; c[m] = "-"
           for (i = 1; i < NF; i++) {if ($(i+1) == "MB/s") v[m] = $i; if ($i == "cpu") c[m] = $(i+1) + 0}}
         END {print v[1], v[2], c[1], c[2]}'
}

cpu() { awk '/^cpu / {print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }  # busy idle jiffies

run_config() {  # run_config NAME FIO_ENGINE FIO_DEPTH FIO_LAYOUT TIER_ARGS...
  local name=$1 engine=$2 depth=$3 layout=$4 i fw fr tw tr fwc frc twc trc b0 i0 b1 i1 load
  shift 4
  load=$(uptime | sed 's/.*load average: //')
  read -r b0 i0 < <(cpu)
  for i in $(seq "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then
      read -r fw fr fwc frc < <(fio_pair "$engine" "$depth" "$layout")
      read -r tw tr twc trc < <(tier_pair "$@" 2>"$samples.setup")
    else
      read -r tw tr twc trc < <(tier_pair "$@" 2>"$samples.setup")
      read -r fw fr fwc frc < <(fio_pair "$engine" "$depth" "$layout")
    fi
    echo "$name|$fw $fr $tw $tr $fwc $frc $twc $trc" >>"$samples"
  done
  read -r b1 i1 < <(cpu)
  echo "$name|$(cat "$samples.setup")|load $load, CPU idle $(( 100 * (i1 - i0) / (b1 - b0 + i1 - i0 + 1) ))%" \
    >>"$samples.configs"
  rm -f "$samples.setup"
}

echo "bench_ssd: $dir ($(df -hT "$dir" | awk 'NR==2 {print $2 " on " $1}')), $SIZE per run," \
     "$PAIRS pairs per configuration, $(nproc) CPUs"
: >"$samples.configs"
files=$(( $(numfmt --from=iec "${SIZE^^}") / (4 << 20) ))
run_config "tier" psync 1 one
[ -n "${BASE_BENCH:-}" ] && run_config "tier base" psync 1 one --bench "$BASE_BENCH"
run_config "tier, fio on files" psync 1 files
run_config "tier +64" psync 1 one --misalign 64
[ -n "${BASE_BENCH:-}" ] && run_config "tier base +64" psync 1 one --bench "$BASE_BENCH" --misalign 64
run_config "tier before" psync 1 one --io sync --chunk 4mb --depth 1
run_config "tier full" psync 1 one --full yes
run_config "tier x$QD" io_uring "$QD" one --threads "$QD"
python3 - "$samples" "$QD" <<'EOF'
import statistics, sys
rows, qd = {}, sys.argv[2]
for line in open(sys.argv[1]):
    name, values = line.rstrip("\n").split("|")
    rows.setdefault(name, []).append([float("nan") if v == "-" else float(v) for v in values.split()])
configs = {}
for line in open(sys.argv[1] + ".configs"):
    name, setup, load = line.rstrip("\n").split("|")
    configs[name] = (setup, load)
def q(v):
    v = sorted(x for x in v if x == x)
    if not v:
        return float("nan"), float("nan"), float("nan")
    if len(v) < 4:
        return statistics.median(v), v[0], v[-1]
    qs = statistics.quantiles(v, n=4)
    return qs[1], qs[0], qs[2]
def mbs(v):
    m, lo, hi = q(v)
    return f"{m:.0f} ({lo:.0f}-{hi:.0f})"
def cpu(v):
    m = q(v)[0]
    return "-" if m != m else f"{m:.0f}"
print(f"{'':20} {'fio MB/s (quartiles)':>22} {'tier MB/s (quartiles)':>22} "
      f"{'tier/fio: median of pairs (quartiles)':>38} {'CPU % of a core: fio tier':>26}")
for name, rs in rows.items():
    ref = f"fio 4M x{qd} io_uring" if name.startswith("tier x") else "fio 4M x1 psync"
    if "files" in name:
        ref = "fio 4M x1 psync over 4 MiB files"
    print(f"{name} vs {ref}: {configs[name][0]}; {configs[name][1]}")
    for k, label in ((0, "write (offload)"), (1, "read (disk-read)")):
        m, lo, hi = q([r[k + 2] / r[k] for r in rs if r[k] > 0])
        print(f"  {label:18} {mbs(r[k] for r in rs):>22} {mbs(r[k + 2] for r in rs):>22} "
              f"{100 * m:25.0f}% ({100 * lo:.0f}%-{100 * hi:.0f}%) "
              f"{cpu(r[k + 4] for r in rs):>19} {cpu(r[k + 6] for r in rs):>6}")
EOF
rm -f "$samples.configs"
