#!/usr/bin/env bash
# Builds tests/fuzz/frame_fuzz.cc with clang++ and libFuzzer (plus ASan and
# UBSan) and runs it for FUZZ_SECONDS (default 20). Exit 0: no crash; 77:
# skipped (no clang++ or no libFuzzer); anything else: a crash (the
# reproducer is left in the temp dir named in the output).
set -euo pipefail
src="${MOONCAKE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
seconds="${FUZZ_SECONDS:-20}"
cxx="${CLANGXX:-clang++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "SKIP: $cxx not found; install clang to run the frame fuzzer"
  exit 77
fi
work="$(mktemp -d /tmp/mooncake-frame-fuzz.XXXXXX)"
# Decoders only: no OpenSSL, httplib or sqlite, so clang compiles them alone.
sources=(tests/fuzz/frame_fuzz.cc src/proto/byte_io.cc src/proto/frame.cc src/proto/codec.cc
         src/proto/handshake.cc src/msg/messages.cc src/common/result.cc
         src/common/error_code.cc)
cd "$src"
if ! "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
     -fno-sanitize-recover=undefined -Isrc "${sources[@]}" -o "$work/frame_fuzz" \
     2>"$work/build.log"; then
  if grep -q -e "fuzzer" -e "libclang_rt" "$work/build.log"; then
    echo "SKIP: $cxx cannot link libFuzzer here:"; tail -3 "$work/build.log"; exit 77
  fi
  cat "$work/build.log"; exit 1
fi
mkdir -p "$work/corpus"
echo "frame_fuzz: running ${seconds}s in $work"
cd "$work"
if ./frame_fuzz -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 \
     -print_final_stats=1 corpus >"$work/fuzz.log" 2>&1; then
  grep -E "stat::number_of_executed_units|Done" "$work/fuzz.log" || true
  rm -rf "$work"
  exit 0
fi
tail -60 "$work/fuzz.log"
echo "frame_fuzz: CRASH; reproducer and log kept in $work"
exit 1
