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
DIR=$(mktemp -d)

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"

measure() { # label binary [args]
  local label=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$DIR/$label.%p" "$@" --port "$P" --workers 1 >/dev/null 2>&1 &
  local vpid=$!
  for _ in $(seq 1 100); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.2; done
  local ls
  ls=$(redis-cli -p "$P" script load "$LOCK")
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1 >/dev/null 2>&1
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 -t set,get >/dev/null 2>&1
  for case in get set acquire; do
    callgrind_control -z "$vpid" >/dev/null 2>&1
    case $case in
      get) redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 -t get >/dev/null 2>&1 ;;
      set) redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 -t set >/dev/null 2>&1 ;;
      acquire) redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1 >/dev/null 2>&1 ;;
    esac
    rm -f "$DIR"/"$label".*.*
    callgrind_control -d "$case" "$vpid" >/dev/null 2>&1
    sleep 0.5
    local ir
    ir=$(cat "$DIR"/"$label".*.* 2>/dev/null | awk '/^summary:/ {s += $2} END {print s + 0}')
    printf "%-7s %-8s %10.0f instructions per request\n" "$label" "$case" "$(awk -v i="$ir" -v n="$N" 'BEGIN{print i / n}')"
  done
  kill "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
}

[[ $BEFORE == - ]] || measure before "$BEFORE"
[[ $AFTER == - ]] || measure after "$AFTER"
rm -rf "$DIR"
