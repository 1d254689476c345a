#!/usr/bin/env bash
# Sets up everything (packages, build) and runs every test: the release build
# (static binary) and, unless MOONCAKE_SKIP_SANITIZE=1, the suites named in
# MOONCAKE_SANITIZE_SUITES (default: all) again under AddressSanitizer +
# UndefinedBehaviorSanitizer ("all" runs every suite there), then the quick
# start in a fresh Debian 12 root (scripts/fresh_check.sh; MOONCAKE_SKIP_FRESH=1
# skips it). Ends with the line "N passed, N failed" (meson tests over both
# builds, plus the fresh-root run).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

# ccache (installed by setup.sh, used by meson when present) identifies the
# compiler by its contents, not its time stamp, so that the fresh root's
# freshly unpacked g++ finds the objects this machine's g++ made.
export CCACHE_COMPILERCHECK=content
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

builds=(build)
if [ "${MOONCAKE_SKIP_SANITIZE:-0}" != 1 ]; then
  # -Og with line tables only (-g1): a third of the compile time of -O2 -g
  # (about 7 min against 21 on 2 cores), the suite runs as fast, and a
  # sanitizer report still names file and line of every frame.
  # Nothing else compiles these objects: caching them would only cost time.
  CCACHE_DISABLE=1 BUILD_DIR=build-asan MESON_ARGS="-Dsanitize=true -Doptimization=g -Ddebug=false -Dcpp_args=-g1" \
    bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
  builds+=(build-asan)
fi

status=0
for b in "${builds[@]}"; do
  echo "== meson test in $b"
  suite_args=()
  # Sanitized code runs 2-3x slower; the per-test timeouts are sized for the
  # release build, so they are doubled there.
  [ "$b" = build-asan ] && suite_args+=(--timeout-multiplier 2)
  if [ "$b" = build-asan ] && [ "${MOONCAKE_SANITIZE_SUITES:-all}" != all ]; then
    for s in ${MOONCAKE_SANITIZE_SUITES:-all}; do suite_args+=(--suite "$s"); done
  fi
  # ASan's leak checker needs ptrace-free /proc access; keep its reports on.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C "$b" --print-errorlogs --num-processes 2 "${suite_args[@]}" ${MESON_TEST_ARGS:-} || status=1
done

# The README's quick start in a fresh minimal Debian 12 root, so a package
# setup.sh forgets fails here and not on a newcomer's machine. Skipped inside
# such a root (no nesting) or with MOONCAKE_SKIP_FRESH=1.
fresh=skipped
if [ -n "${MOONCAKE_IN_FRESH_ROOT:-}" ]; then
  echo "== fresh-root quick start: skipped (already inside a fresh root)"
elif [ "${MOONCAKE_SKIP_FRESH:-0}" = 1 ]; then
  echo "== fresh-root quick start: skipped (MOONCAKE_SKIP_FRESH=1)"
else
  echo "== quick start in a fresh Debian 12 root (scripts/fresh_check.sh)"
  start_s=$(date +%s)
  # The fresh root installs every package itself and configures, compiles
  # and links its own build, but through this machine's ccache: its compiles
  # are those of the release build above, so they are found there.
  ccache_dir=$(ccache -k cache_dir 2>/dev/null || true)
  if FRESH_CCACHE_DIR="$ccache_dir" bash scripts/fresh_check.sh 'bash scripts/quickstart.sh'; then
    fresh=passed
  else
    fresh=failed; status=1
  fi
  echo "== fresh-root quick start $fresh in $(( $(date +%s) - start_s )) s"
fi

python3 - "$fresh" "${builds[@]}" <<'PY'
# CI keeps only the tail of this output, so the failures are named here, last,
# each with the end of its own log, right above the totals line.
import json, sys
passed = failed = 0
fresh = sys.argv[1]
passed += fresh == "passed"
failed += fresh == "failed"
failures = ["fresh-root quick start"] if fresh == "failed" else []
for b in sys.argv[2:]:
    try:
        with open(f"{b}/meson-logs/testlog.json") as f:
            for line in f:
                r = json.loads(line)
                result = r.get("result")
                if result in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif result != "SKIP":
                    failed += 1
                    tail = (r.get("stdout") or "").rstrip().splitlines()[-15:]
                    failures.append(f"{b}: {r.get('name')}: {result} after "
                                    f"{r.get('duration', 0):.0f} s\n    "
                                    + "\n    ".join(tail))
    except FileNotFoundError:
        failed += 1
        failures.append(f"{b}: no meson-logs/testlog.json (the build or meson test did not run)")
if failures:
    print("== failed:")
    for f in failures:
        print("  " + f)
print(f"{passed} passed, {failed} failed")
PY
exit $status
