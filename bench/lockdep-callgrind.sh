#!/usr/bin/env bash
# Server instructions per EVALSHA of Redisson's RLock acquire script under callgrind
# (deterministic): `--lockdep no` and `--lockdep yes` of one binary, and optionally
# BASE_BIN (the code before the checker) to show that `no` costs nothing. Owners are
# Redisson-shaped (`<uuid>:<threadId>`), one redis-benchmark client, counters zeroed after
# warm-up. Usage: bench/lockdep-callgrind.sh [requests]   (default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
TBIN=${TBIN:-target/release/tumbler}
BASE_BIN=${BASE_BIN:-}
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
. bench/lib.sh
cg_init
U=5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11
LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
measure() { # label binary args...
  local label=$1; shift
  cg_start "$label" "$@" --port "$P"
  local ls
  ls=$(redis-cli -p "$P" script load "$LOCK")
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 evalsha "$ls" 1 'w:__rand_int__' 30000 "$U:__rand_int__" >/dev/null 2>&1
  for case in acquire acquire_1; do
    redis-cli -p "$P" flushall >/dev/null
    local ir
    case $case in
      acquire) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 "$U:__rand_int__") ;;
      acquire_1) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 "$U:1") ;;
    esac
    printf "%-12s %-10s %12.0f instructions per EVALSHA\n" "$label" "$case" "$(cg_per "$N" "$ir")"
  done
  cg_stop
}
[ -n "$BASE_BIN" ] && measure base "$BASE_BIN" --worker-threads 1
measure lockdep-no "$TBIN" --worker-threads 1 --lockdep no
measure lockdep-yes "$TBIN" --worker-threads 1 --lockdep yes
