#!/usr/bin/env bash
# What INFO scriptstats and the script profiler cost per EVALSHA, in server instructions
# under callgrind (deterministic, so fair on a noisy machine), measured as
# bench/plans-callgrind.sh does: one redis-benchmark client (-P 1), counters zeroed after
# warm-up, so the figure covers the whole request (socket I/O, parsing, script, reply).
#
# Usage: bench/scriptstats-callgrind.sh BASE_BINARY NEW_BINARY [requests]
#   BASE_BINARY: a release build without the feature (e.g. main before the merge)
#   NEW_BINARY:  a release build with it; measured with lua-profiler no, then yes
# Cases: RLock re-entry and compare-and-delete, on native plans and on Lua.
set -euo pipefail
BASE=$1
NEW=$2
N=${3:-3000}
P=${P:-7593}
. "$(dirname "$0")/lib.sh"
cg_init

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
CAS="if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"

measure() { # label command...
  local label=$1; shift
  cg_start "$label" "$@"
  local ls cs
  ls=$(redis-cli -p "$P" script load "$LOCK")
  cs=$(redis-cli -p "$P" script load "$CAS")
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1 >/dev/null 2>&1
  for case in reentry cas; do
    redis-cli -p "$P" flushall >/dev/null
    [ "$case" = reentry ] && redis-cli -p "$P" evalsha "$ls" 1 mine 30000 uuid:1 >/dev/null
    local ir
    case $case in
      reentry) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 evalsha "$ls" 1 mine 30000 uuid:1) ;;
      cas) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$cs" 1 'lk:__rand_int__' me) ;;
    esac
    printf "%-22s %-8s %10.0f instructions per EVALSHA\n" "$label" "$case" "$(cg_per "$N" "$ir")"
  done
  cg_stop
}

for plans in yes no; do
  path=$([ "$plans" = yes ] && echo plan || echo lua)
  measure "$path:base" "$BASE" --port "$P" --worker-threads 1 --lua-native-plans "$plans"
  measure "$path:stats" "$NEW" --port "$P" --worker-threads 1 --lua-native-plans "$plans"
  measure "$path:stats+profiler" "$NEW" --port "$P" --worker-threads 1 --lua-native-plans "$plans" --lua-profiler yes
done
