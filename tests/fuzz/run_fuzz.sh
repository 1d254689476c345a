#!/usr/bin/env bash
# Builds one libFuzzer target of tests/fuzz/ with clang++ (ASan + UBSan) and
# runs it for FUZZ_SECONDS (default 15) over its seed corpus
# tests/fuzz/corpus/NAME/, which it only reads (new inputs go to a temporary
# corpus). Usage:
#   tests/fuzz/run_fuzz.sh NAME            build and run
#   tests/fuzz/run_fuzz.sh --build NAME    build only; prints the binary's path
#   tests/fuzz/run_fuzz.sh --list          the fuzzer names
# Environment: FUZZ_SECONDS, FUZZ_RUNS (executions instead of seconds),
# FUZZ_BUILD_DIR (objects and binaries, kept between runs: a generated
# build.ninja rebuilds only what changed and shares objects between
# fuzzers), CLANGXX, MOONCAKE_FUZZ_SKIP (a reason: print it and skip).
# Exit 0: no crash; 77: skipped (no clang++, ninja or libFuzzer, or
# MOONCAKE_FUZZ_SKIP); 1: a crash or a build failure (the reproducer is kept
# and named in the output: replay it with `BINARY FILE`).
set -euo pipefail
src="${MOONCAKE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$src"

fuzzers=(frame_fuzz data_wire_fuzz metadata_http_fuzz descriptor_fuzz config_toml_fuzz
         config_json_fuzz trace_fuzz ops_fuzz rest_http_fuzz dummy_fuzz ha_log_fuzz
         tier_header_fuzz)
if [ "${1:-}" = --list ]; then printf '%s\n' "${fuzzers[@]}"; exit 0; fi
build_only=0
if [ "${1:-}" = --build ]; then build_only=1; shift; fi
name="${1:?usage: run_fuzz.sh [--build] NAME (one of: ${fuzzers[*]})}"
case " ${fuzzers[*]} " in *" $name "*) ;;
  *) echo "run_fuzz.sh: unknown fuzzer '$name' (one of: ${fuzzers[*]})" >&2; exit 2 ;; esac

if [ -n "${MOONCAKE_FUZZ_SKIP:-}" ]; then echo "SKIP: $name: $MOONCAKE_FUZZ_SKIP"; exit 77; fi
cxx="${CLANGXX:-clang++}"
for tool in "$cxx" ninja; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found; install clang, libclang-rt-14-dev and ninja-build to run the fuzzers"
    exit 77
  fi
done

# What each target compiles: the parsing code it drives and what that code
# calls, never the daemons around it (nothing listens or connects).
common="src/common/result.cc src/common/error_code.cc src/common/units.cc src/common/log.cc
        src/common/clock.cc"
crypto="src/common/capability.cc src/common/crypto.cc src/common/bearer.cc"
config="src/config/registry.cc src/common/json.cc src/config/sources.cc
        src/config/toml_source.cc src/config/ref_flags.cc"
declare -A srcs libs
srcs[frame_fuzz]="src/common/byte_io.cc src/proto/frame.cc src/proto/codec.cc src/proto/handshake.cc
                  src/msg/messages.cc"
srcs[ops_fuzz]="src/common/byte_io.cc src/proto/frame.cc src/proto/codec.cc src/msg/messages.cc"
srcs[dummy_fuzz]="src/common/byte_io.cc src/proto/frame.cc src/proto/codec.cc src/msg/messages.cc"
srcs[data_wire_fuzz]="src/transfer/data_protocol.cc src/transfer/access.cc
                      src/transfer/transport.cc $crypto"
libs[data_wire_fuzz]="-lcrypto"
srcs[metadata_http_fuzz]="src/metadata/metadata_server.cc src/metadata/kv_store.cc
                          src/metadata/sqlite_durability.cc src/storage/sqlite_db.cc $crypto"
libs[metadata_http_fuzz]="-lsqlite3 -lssl -lcrypto"
srcs[rest_http_fuzz]="src/rest/rest_server.cc src/common/json_escape.cc $crypto $config"
libs[rest_http_fuzz]="-lssl -lcrypto"
srcs[descriptor_fuzz]="src/store/segment_descriptor.cc src/common/json_escape.cc $config"
srcs[config_toml_fuzz]="$config"
srcs[ha_log_fuzz]="src/ha/gateway_json.cc src/common/json.cc src/common/json_escape.cc src/masterd/ha_records.cc src/common/byte_io.cc
                   src/proto/frame.cc src/proto/codec.cc src/msg/messages.cc"
libs[ha_log_fuzz]="-lz"
srcs[tier_header_fuzz]="src/tier/object_file.cc src/tier/crc32c.cc"
srcs[config_json_fuzz]="$config"
srcs[trace_fuzz]="src/eviction/trace.cc src/eviction/trace_replay.cc src/eviction/lru.cc
                  src/eviction/adaptive.cc src/eviction/duel.cc src/eviction/factory.cc
                  src/eviction/probation.cc src/eviction/belady.cc src/eviction/oracle.cc src/eviction/trace_stats.cc
                  src/common/prefault.cc"

build_dir="${FUZZ_BUILD_DIR:-/tmp/mooncake-fuzz-build-$(id -u)}"
mkdir -p "$build_dir"
# Fuzzers run side by side (the test suite runs two at once): one builds
# in the shared directory at a time, and the lock is released before the
# run, so one fuzzes while the next builds.
exec 9>"$build_dir/.lock"
flock 9
# Every object is compiled with the same flags, so fuzzers share them.
{
  echo "cxx = $cxx"
  echo "cflags = -std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer" \
       "-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
       "-I$src/src -isystem $src/subprojects/cpp-httplib -DTOML_HEADER_ONLY=1" \
       "-DCPPHTTPLIB_THREAD_POOL_COUNT=8 -DCPPHTTPLIB_OPENSSL_SUPPORT -Wno-unused-command-line-argument"
  echo "rule cxx"
  echo "  command = \$cxx \$cflags -MMD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "  description = CXX \$in"
  echo "rule link"
  echo "  command = \$cxx -fsanitize=fuzzer,address,undefined \$in -o \$out \$libs -lpthread"
  echo "  description = LINK \$out"
  declare -A seen=()
  for f in "${fuzzers[@]}"; do
    objs=()
    for s in "tests/fuzz/$f.cc" ${srcs[$f]} $common; do
      o="obj/${s//\//_}.o"
      objs+=("$o")
      if [ -z "${seen[$o]:-}" ]; then echo "build $o: cxx $src/$s"; seen[$o]=1; fi
    done
    echo "build $f: link ${objs[*]}"
    echo "  libs = ${libs[$f]:-}"
  done
} >"$build_dir/build.ninja.new"
mv "$build_dir/build.ninja.new" "$build_dir/build.ninja"
bin="$build_dir/$name"
log="$build_dir/$name.build.log"
start_s=$(date +%s)
if ! nice ninja -C "$build_dir" "$name" >"$log" 2>&1; then
  if grep -q -e "libclang_rt.fuzzer" -e "unsupported option '-fsanitize=fuzzer" "$log"; then
    echo "SKIP: $cxx cannot link libFuzzer here (install libclang-rt-14-dev):"; tail -3 "$log"
    exit 77
  fi
  cat "$log"; echo "$name: BUILD FAILED"; exit 1
fi
grep -q "LINK" "$log" && echo "$name: built in $(( $(date +%s) - start_s )) s"
flock -u 9
if [ $build_only = 1 ]; then echo "$bin"; exit 0; fi

seeds="tests/fuzz/corpus/$name"
work="$(mktemp -d "/tmp/mooncake-$name.XXXXXX")"
mkdir -p "$work/corpus" "$seeds"
if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); what="$FUZZ_RUNS executions"
else limit=(-max_total_time="${FUZZ_SECONDS:-15}"); what="${FUZZ_SECONDS:-15} s"; fi
echo "$name: running $what over $seeds in $work"
# -timeout: one input taking 10 s is a hang, reported like a crash.
if (cd "$work" && "$bin" "${limit[@]}" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 ${FUZZ_ARGS:-} corpus "$src/$seeds" >"$work/fuzz.log" 2>&1); then
  grep -E "^#[0-9]+.*(DONE|pulse)|cov:" "$work/fuzz.log" | tail -1 || true
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/fuzz.log" || true
  rm -rf "$work"
  exit 0
fi
tail -60 "$work/fuzz.log"
echo "$name: CRASH; log and reproducer (crash-*, timeout-*, oom-*) kept in $work;"
echo "replay: $bin $work/crash-..."
exit 1
