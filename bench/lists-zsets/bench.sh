#!/usr/bin/env bash
# Lists and sorted sets: redis-benchmark against tumbler (release) and redis-server 7.0.15,
# side by side in the same run, reporting requests/s and the tumbler/redis ratio.
# Bounded: N requests per test (default 50000), 50 clients, no pipelining.
# Usage: bench/lists-zsets/bench.sh [N]
set -euo pipefail
N=${1:-50000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/target/release/tumbler
[ -x "$BIN" ] || { echo "build first: cargo build --release -p tumbler" >&2; exit 2; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
RP=$(free_port)
redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
RPID=$!
LOG=$(mktemp)
"$BIN" --port 0 >"$LOG" 2>&1 &
TPID=$!
trap 'kill $RPID $TPID 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 50); do grep -aq 'port=' "$LOG" && break; sleep 0.1; done
TP=$(grep -ao 'port=[0-9]*' "$LOG" | cut -d= -f2)
TESTS=lpush,rpush,lpop,rpop,lrange_100,zadd,zpopmin
run() { timeout 300 redis-benchmark -p "$1" -n "$N" -c 50 -t "$TESTS" --csv 2>/dev/null | tr -d '"' | grep -v '^test,' | cut -d, -f1,2; }
# A sorted-set read path the stock tests lack: ZRANGEBYSCORE on a 10k-member set.
zrange() {
  redis-cli -p "$1" del bz >/dev/null
  for i in $(seq 0 99); do
    args=(); for j in $(seq 0 99); do k=$((i*100+j)); args+=("$k" "m$k"); done
    redis-cli -p "$1" zadd bz "${args[@]}" >/dev/null
  done
  timeout 300 redis-benchmark -p "$1" -n "$N" -c 50 --csv zrangebyscore bz 5000 5010 2>/dev/null \
    | tr -d '"' | tail -1 | cut -d, -f2 | sed 's/^/zrangebyscore_10_of_10k,/'
}
declare -A R T
while IFS=, read -r k v; do R[$k]=$v; done < <(run "$RP"; zrange "$RP")
while IFS=, read -r k v; do T[$k]=$v; done < <(run "$TP"; zrange "$TP")
printf '%-28s %12s %12s %7s\n' test redis_rps tumbler_rps ratio
for k in "${!R[@]}"; do
  [ -n "${T[$k]:-}" ] || continue
  printf '%-28s %12s %12s %7.2f\n' "$k" "${R[$k]}" "${T[$k]}" "$(echo "${T[$k]} / ${R[$k]}" | bc -l)"
done | sort
