#!/usr/bin/env bash
# Long fuzzing runs: each fuzzer of tests/fuzz/ in turn, one process at a
# time, at nice 19, for N executions (default 10 million) or S seconds;
# prints per fuzzer the executions, coverage (libFuzzer's cov: edges and ft:
# features), corpus size and the crash verdict, then a summary table.
#   scripts/fuzz_long.sh                       every fuzzer, 10M executions
#   scripts/fuzz_long.sh -n 1000000 trace_fuzz one fuzzer, 1M executions
#   scripts/fuzz_long.sh -t 600                every fuzzer, 600 s each
#   scripts/fuzz_long.sh -k DIR ...            keep the grown corpora in DIR/<fuzzer>
# A crash leaves its reproducer in the work dir it names (replay:
# `BINARY FILE`); copy it into tests/fuzz/corpus/<fuzzer>/ with the fix.
# Exit status: 1 if any fuzzer crashed or failed to build.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=10000000
seconds=""
keep=""
while getopts "n:t:k:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    t) seconds=$OPTARG ;;
    k) keep=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(bash "$here/tests/fuzz/run_fuzz.sh" --list)

status=0
summary=()
for name in "${names[@]}"; do
  bin=$(bash "$here/tests/fuzz/run_fuzz.sh" --build "$name" | tail -1)
  if [ ! -x "$bin" ]; then
    echo "$name: build failed or skipped: $bin"; summary+=("$name build-failed - - -"); status=1
    continue
  fi
  work=$(mktemp -d "/tmp/mooncake-long-$name.XXXXXX")
  corpus="$work/corpus"
  if [ -n "$keep" ]; then corpus="$keep/$name"; fi
  mkdir -p "$corpus"
  if [ -n "$seconds" ]; then limit=(-max_total_time="$seconds"); else limit=(-runs="$runs"); fi
  if [ -n "$seconds" ]; then what="$seconds s"; else what="$runs executions"; fi
  echo "== $name: $what, log $work/fuzz.log"
  start_s=$(date +%s)
  (cd "$work" && nice -n 19 "$bin" "${limit[@]}" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -print_pcs=0 "$corpus" "$here/tests/fuzz/corpus/$name" \
      >"$work/fuzz.log" 2>&1)
  rc=$?
  elapsed=$(( $(date +%s) - start_s ))
  execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$work/fuzz.log" | grep -oE "[0-9]+$")
  last=$(grep -E "^#[0-9]+" "$work/fuzz.log" | tail -1)
  cov=$(grep -oE "cov: [0-9]+" <<<"$last" | grep -oE "[0-9]+")
  ft=$(grep -oE "ft: [0-9]+" <<<"$last" | grep -oE "[0-9]+")
  crashes=$(ls "$work" | grep -cE "^(crash|leak|timeout|oom)-")
  verdict="ok"
  if [ $rc -ne 0 ] || [ "$crashes" -gt 0 ]; then
    verdict="CRASH:$crashes:exit-$rc:$work"; status=1
    grep -E "ERROR|runtime error|Assertion|abort" "$work/fuzz.log" | head -5
  fi
  echo "$name: executions ${execs:-?} in ${elapsed}s, cov ${cov:-?}, ft ${ft:-?}, $verdict"
  summary+=("$name ${execs:-?} ${elapsed}s ${cov:-?} ${ft:-?} $verdict")
  [ "$verdict" = ok ] && [ -z "$keep" ] && rm -rf "$work"
done
echo
printf '%-20s %12s %8s %6s %7s %s\n' fuzzer executions time cov ft result
for line in "${summary[@]}"; do
  # shellcheck disable=SC2086
  printf '%-20s %12s %8s %6s %7s %s\n' $line
done
exit $status
