#!/usr/bin/env bash
# Heap bytes and allocations per EVALSHA of Redisson's RLock acquire script (reentry path:
# EXISTS, HEXISTS, HINCRBY, PEXPIRE), over the whole request path (parse, script, the four
# redis.call, reply). Runs tumbler under valgrind's DHAT twice, with N1 and N2 requests from
# one client, and divides the difference, so start-up and connection costs cancel out.
# Usage: bench/alloc-per-evalsha.sh [N1] [N2]   (needs valgrind and a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-1000}
N2=${2:-6000}
PORT=${PORT:-7611}
LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
measure() { # n -> "bytes blocks"
  local n=$1 log
  log=$(mktemp)
  valgrind --tool=dhat --dhat-out-file=/dev/null target/release/tumbler --port "$PORT" >/dev/null 2>"$log" &
  local vp=$!
  for _ in $(seq 150); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.2; done
  local sha
  sha=$(redis-cli -p "$PORT" script load "$LOCK")
  redis-cli -p "$PORT" evalsha "$sha" 1 held 3600000 uuid:holder >/dev/null
  redis-benchmark -p "$PORT" -n "$n" -c 1 -P 1 -q evalsha "$sha" 1 held 30000 uuid:holder >/dev/null 2>&1
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$vp" || true
  grep -o "Total: *[0-9,]* bytes in *[0-9,]* blocks" "$log" | tr -d ',' | awk '{print $2, $5}'
  rm -f "$log"
}
read -r b1 k1 < <(measure "$N1")
read -r b2 k2 < <(measure "$N2")
awk -v b1="$b1" -v b2="$b2" -v k1="$k1" -v k2="$k2" -v n=$((N2 - N1)) \
  'BEGIN { printf "per EVALSHA: %.0f bytes in %.1f allocations\n", (b2 - b1) / n, (k2 - k1) / n }'
