#!/usr/bin/env bash
# Foundation benchmark (issue 3): tumbler vs redis-server, measured side by side in the
# same run on the same machine, reported as ratios (tumbler / redis).
#
#   bench/foundation.sh            # N=100000 requests per test, 50 clients
#   N=20000 bench/foundation.sh    # quicker
#
# Measures: redis-benchmark SET/GET/HSET/PING (mbulk) at -P 1 and -P 16, time from exec
# to the first PONG, and idle RSS right after startup. Needs redis-server,
# redis-benchmark and redis-cli. Bounded: each redis-benchmark run is capped by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100000}
CLIENTS=${CLIENTS:-50}
TUMBLER=${TUMBLER:-target/release/tumbler}

. bench/lib.sh
bench_need redis-server redis-benchmark redis-cli
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release -p tumbler >&2
fi

now_ns() { date +%s%N; }

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# start NAME PORT CMD... -> sets START_MS_<NAME> (exec to first PONG) and PID_<NAME>
start() {
  local name=$1 port=$2; shift 2
  local t0; t0=$(now_ns)
  "$@" >/dev/null 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 2000); do
    if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = "PONG" ]; then break; fi
  done
  local t1; t1=$(now_ns)
  printf -v "START_MS_$name" '%s' "$(( (t1 - t0) / 1000000 ))"
  printf -v "PID_$name" '%s' "$pid"
}

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

RP=$(free_port); TP=$(free_port)
start redis "$RP" redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no
start tumbler "$TP" "$TUMBLER" --port "$TP" --bind 127.0.0.1 --loglevel warning
sleep 0.5
RSS_redis=$(rss_kb "$PID_redis"); RSS_tumbler=$(rss_kb "$PID_tumbler")

# rps PORT TEST PIPELINE -> requests per second
rps() {
  timeout 300 redis-benchmark -p "$1" -t "$2" -n "$N" -c "$CLIENTS" -P "$3" -q --csv 2>/dev/null \
    | awk -F'","' 'NR>1 {gsub(/"/,"",$2); print $2; exit}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

printf '%-14s %14s %14s %8s\n' "test" "redis" "tumbler" "ratio"
for p in 1 16; do
  for t in set get hset ping_mbulk; do
    r=$(rps "$RP" "$t" "$p"); u=$(rps "$TP" "$t" "$p")
    printf '%-14s %14s %14s %8s\n' "$t -P $p" "$r rps" "$u rps" "$(ratio "$u" "$r")"
  done
done
printf '%-14s %14s %14s %8s\n' "first PONG" "${START_MS_redis} ms" "${START_MS_tumbler} ms" \
  "$(ratio "$START_MS_tumbler" "$START_MS_redis")"
printf '%-14s %14s %14s %8s\n' "idle RSS" "${RSS_redis} kB" "${RSS_tumbler} kB" \
  "$(ratio "$RSS_tumbler" "$RSS_redis")"
