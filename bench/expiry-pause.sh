#!/usr/bin/env bash
# The longest pause a TTL renewal sees when 1M keys have a TTL: tumbler vs redis-server.
#
#   bash bench/expiry-pause.sh [rounds]      # default 2 rounds per server
#
# Each server gets 1,000,000 keys lock:<n> with a one-hour TTL (a Lua loop, not timed),
# then redis-benchmark renews them in random order, as Redisson's watchdog does for held
# locks: 3,000,000 x PEXPIRE lock:<rand> 3600000, 50 clients, -P 16. Printed: throughput,
# average, p50, p95, p99 and max latency (ms). Renewals leave stale entries in tumbler's
# expiry heap, rebuilt once they pass twice the keys with a TTL (lockcore/src/storage/
# expiry.rs): the max column shows whether that rebuild pauses a renewal (it did, 60-90
# ms, until it was spread over later renewals). TUMBLER_BIN picks the binary (default:
# the release build), TUMBLER_BIN2 an optional second one measured beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
. bench/lib.sh
tumbler=$(bench_tumbler)
bench_need redis-server

FILL="for i = 0, tonumber(ARGV[1]) - 1 do redis.call('set', string.format('lock:%012d', i), 1, 'px', 3600000) end return 1"

one() { # label server-argv...
  local label=$1 line
  shift
  bench_serve "$@"
  redis-cli -p "$BENCH_PORT" eval "$FILL" 0 1000000 >/dev/null
  line=$(redis-benchmark -p "$BENCH_PORT" -n 3000000 -c 50 -P 16 -r 1000000 --csv \
    pexpire lock:__rand_int__ 3600000 2>/dev/null | tail -1)
  echo "$line" | awk -F, -v l="$label" '{gsub(/"/, ""); printf "%-9s %s %s %s %s %s %s\n", l, $2, $3, $5, $6, $7, $8}'
  bench_stop
}

echo "server    rps avg_ms p50_ms p95_ms p99_ms max_ms"
bench_rounds "$rounds" one "$tumbler"
