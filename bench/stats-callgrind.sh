#!/usr/bin/env bash
# What INFO commandstats/errorstats/latencystats cost per request (issue 17): server
# instructions per GET, SET and Redisson-acquire EVALSHA under callgrind (deterministic, so a
# fair comparison on a noisy machine) for two tumbler binaries, e.g. main's and this
# branch's. Counters are zeroed after warm-up and dumped after N requests from one
# redis-benchmark client (-P 1, keys from 1M), so each figure covers everything the server
# does per request. Latency tracking is on (the default) in both.
# Usage: bench/stats-callgrind.sh BEFORE_BIN AFTER_BIN [requests]   ("-" skips one)
set -euo pipefail
BEFORE=$1
AFTER=$2
N=${3:-5000}
P=${P:-7593}
. "$(dirname "$0")/lib.sh"
cg_init

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"

measure() { # label binary [args]
  local label=$1; shift
  cg_start "$label" "$@" --port "$P" --worker-threads 1
  local ls
  ls=$(redis-cli -p "$P" script load "$LOCK")
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1 >/dev/null 2>&1
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 -t set,get >/dev/null 2>&1
  for case in get set acquire; do
    local ir
    case $case in
      get) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 -t get) ;;
      set) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 -t set) ;;
      acquire) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1) ;;
    esac
    printf "%-7s %-8s %10.0f instructions per request\n" "$label" "$case" "$(cg_per "$N" "$ir")"
  done
  cg_stop
}

[[ $BEFORE == - ]] || measure before "$BEFORE"
[[ $AFTER == - ]] || measure after "$AFTER"
