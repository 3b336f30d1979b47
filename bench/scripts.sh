#!/usr/bin/env bash
# EVALSHA throughput and latency, tumbler vs redis-server side by side in the same run.
#
# Scripts: the Redisson RLock scripts (acquire on fresh keys, reentry, contended acquire
# that returns the holder's PTTL, unlock by a non-holder) and `return 1`.
# Usage: bench/scripts.sh [requests] [clients]     (needs a release build: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
C=${2:-50}
TPORT=${TPORT:-7481}
RPORT=${RPORT:-7482}

target/release/tumbler --port "$TPORT" >/tmp/bench-tumbler.log 2>&1 &
TPID=$!
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no >/tmp/bench-redis.log 2>&1 &
RPID=$!
trap 'kill $TPID $RPID 2>/dev/null || true' EXIT
sleep 1

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
UNLOCK="if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end"
ONE="return 1"

setup() { # port
  local p=$1
  redis-cli -p "$p" flushall >/dev/null
  LOCK_SHA=$(redis-cli -p "$p" script load "$LOCK")
  UNLOCK_SHA=$(redis-cli -p "$p" script load "$UNLOCK")
  ONE_SHA=$(redis-cli -p "$p" script load "$ONE")
  redis-cli -p "$p" evalsha "$LOCK_SHA" 1 held 3600000 uuid:holder >/dev/null
}

rps() { # port pipeline args...
  local p=$1 pl=$2; shift 2
  redis-benchmark -p "$p" -n "$N" -c "$C" -P "$pl" -r 1000000 --csv "$@" 2>/dev/null |
    tail -1 | awk -F'","' '{print $2}' | tr -d '"'
}

lat() { # port args...  -> p50 p99 (ms), one client, no pipelining
  local p=$1; shift
  redis-benchmark -p "$p" -n 20000 -c 1 -P 1 -r 1000000 --csv "$@" 2>/dev/null |
    tail -1 | awk -F'","' '{print $5" "$7}' | tr -d '"'
}

declare -A CASES
run_case() { # name port-independent args (with SHA placeholders)
  local name=$1; shift
  for pl in 1 16; do
    setup "$TPORT"; t=$(rps "$TPORT" "$pl" $(eval echo "$@"))
    setup "$RPORT"; r=$(rps "$RPORT" "$pl" $(eval echo "$@"))
    ratio=$(awk -v a="$t" -v b="$r" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "n/a" }')
    printf "%-22s -P %-3s tumbler %10s rps   redis %10s rps   ratio %s\n" "$name" "$pl" "$t" "$r" "$ratio"
  done
  setup "$TPORT"; tl=$(lat "$TPORT" $(eval echo "$@"))
  setup "$RPORT"; rl=$(lat "$RPORT" $(eval echo "$@"))
  printf "%-22s 1 client p50/p99 ms: tumbler %s   redis %s\n" "$name" "$tl" "$rl"
}

echo "requests=$N clients=$C"
run_case "acquire (fresh keys)" 'EVALSHA $LOCK_SHA 1 lock:__rand_int__ 30000 uuid:1'
run_case "reentry" 'EVALSHA $LOCK_SHA 1 mine 30000 uuid:1'
run_case "contended (pttl)" 'EVALSHA $LOCK_SHA 1 held 30000 uuid:2'
run_case "unlock (not holder)" 'EVALSHA $UNLOCK_SHA 2 held chan 0 30000 uuid:2'
run_case "return 1" 'EVALSHA $ONE_SHA 0'
