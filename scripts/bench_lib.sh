# Sourced by the benchmark scripts (bench_master.sh, bench_durability.sh,
# bench_dataplane.sh):
# a work directory, every started process stopped by its pid on exit, and a
# master plus one store on 127.0.0.1 for metadata-only runs. The caller sets
# BIN (the mooncake binary), OBJECTS (the store is sized for that many 4 KiB
# objects) and NAME (for messages and the work directory) first.
work=$(mktemp -d "${TMPDIR:-/tmp}/mooncake-$NAME.XXXXXX")  # TMPDIR: where the state file lives
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=scripts/free_port.sh
. "$(dirname "${BASH_SOURCE[0]}")/free_port.sh"
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# start_master DATA_DIR [FLAG...]: sets $master, $port, $mport; returns once /health
# answers, with $master_up_s the seconds from exec to that answer (the ports
# are picked before the clock starts). A port picked free can be taken by a
# client's connection before the master binds it (the TCP runs open
# thousands); a master that exits at start is started again on new ports.
start_master() {
  local attempt
  for attempt in 1 2 3; do
    port=$(free_port); mport=$(free_port)
    local t0=$EPOCHREALTIME
    "$BIN" master --port "$port" --metrics-port "$mport" --rpc-address 127.0.0.1 \
      --data-dir "$1" --log-level warn "${@:2}" >>"$work/master.log" 2>&1 &
    master=$!; pids+=("$master")
    # The wait must not load the machine it measures: a curl costs ~20 ms
    # of CPU here, so polling /health every 10 ms took most of a core from
    # a loading master on two. The admin port opens only once the state is
    # loaded; until it accepts, each poll is a connect from bash itself
    # and a 10 ms `read -t` (no process started).
    local nap
    exec {nap}<> <(:)
    for _ in $(seq "${MASTER_START_POLLS:-2000}"); do  # ~20 s at 10 ms; more for big journals
      if { : <>"/dev/tcp/127.0.0.1/$mport"; } 2>/dev/null &&
          curl -fs "http://127.0.0.1:$mport/health" >/dev/null; then
        master_up_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
        exec {nap}<&-
        return 0
      fi
      kill -0 "$master" 2>/dev/null || break
      read -rt 0.01 -u "$nap" || true
    done
    exec {nap}<&-
    kill -0 "$master" 2>/dev/null && break  # running but not answering: give up
    wait "$master" 2>/dev/null || true
    echo "$NAME: the master exited at start (attempt $attempt); log: $work/master.log" >&2
  done
  echo "$NAME: the master did not come up; log: $work/master.log" >&2; exit 1
}

# start_store: one store mounted on that master (sets $store). Its segment has
# room for OBJECTS 4 KiB objects; a memfd segment costs nothing until touched,
# metadata-only puts never touch it, and --no-prefault keeps the store from
# faulting it in beside the measurement.
start_store() {
  local seg_bytes=$(( (OBJECTS * 4096 * 5 / 4) + (1 << 30) ))
  "$BIN" store --master "127.0.0.1:$port" --segment "$seg_bytes" --port 0 --no-prefault \
    --metadata-server none --log-level warn >>"$work/store.log" 2>&1 &
  store=$!; pids+=("$store")
  for _ in $(seq 200); do
    curl -fs "http://127.0.0.1:$mport/get_all_segments" | grep -q . && return 0
    sleep 0.05
  done
  echo "$NAME: the store did not mount; logs in $work" >&2; exit 1
}
