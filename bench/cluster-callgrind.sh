#!/usr/bin/env bash
# The cost of cluster slot checks in CPU instructions, which (unlike throughput on a shared
# machine) do not depend on load:
#
#   bash bench/cluster-callgrind.sh [requests]       # default 10000
#
# Runs tumbler under valgrind --tool=callgrind as a plain server ("off") and as a one-node
# cluster ("on"; it owns every slot, so every command pays the slot check and none is
# redirected). Per mode: SET and GET from one redis-benchmark client at -P 1 and -P 16 (keys
# from -r 1000000), and EVALSHA of a one-key compare-and-delete script at -P 1. Counters are
# zeroed after warm-up and dumped after `requests` commands, so each figure is everything the
# server does in user space per request. TUMBLER_BIN picks the binary (default: the release
# build, built if missing); BASE_BIN adds a second binary measured the same way first.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
. bench/lib.sh
tumbler=$(bench_tumbler)
cg_init
CAS="if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
cases="set:1 get:1 set:16 get:16 evalsha:1"

measure() { # label binary mode -> one line per case: "label mode case -P p Ir/request"
  local label=$1 bin=$2 mode=$3 extra=() cs c
  [ "$mode" = on ] && extra=(--cluster-enabled yes)
  cg_start "$label.$mode" "$bin" --port "$(free_port)" --worker-threads 2 --loglevel warning "${extra[@]}"
  local port=$CG_PORT
  cs=$(redis-cli -p "$port" script load "$CAS")
  redis-benchmark -p "$port" -t set,get -n 1000 -c 1 -P 16 -r 1000000 -q >/dev/null
  redis-benchmark -p "$port" -n 500 -c 1 -r 1000000 evalsha "$cs" 1 'lk:__rand_int__' me >/dev/null
  for c in $cases; do
    local t=${c%:*} p=${c#*:} ir
    if [ "$t" = evalsha ]; then
      ir=$(cg_count "$label.$mode" "$c" redis-benchmark -p "$port" -n "$n" -c 1 -P "$p" -r 1000000 evalsha "$cs" 1 'lk:__rand_int__' me)
    else
      ir=$(cg_count "$label.$mode" "$c" redis-benchmark -p "$port" -t "$t" -n "$n" -c 1 -P "$p" -r 1000000 -q)
    fi
    printf "%-6s %-4s %-8s -P %-3s %8.1f instructions per request\n" "$label" "$mode" "$t" "$p" "$(cg_per "$n" "$ir")"
  done
  cg_stop
}

for pair in ${BASE_BIN:+"base=$BASE_BIN"} "new=$tumbler"; do
  label=${pair%%=*} bin=${pair#*=}
  measure "$label" "$bin" off | tee "$CG_DIR/out-$label-off"
  measure "$label" "$bin" on | tee "$CG_DIR/out-$label-on"
  paste "$CG_DIR/out-$label-off" "$CG_DIR/out-$label-on" |
    awk '{printf "%-6s %-8s -P %-3s on/off = %.4f (%+.1f instructions)\n", $1, $3, $5, $15/$6, $15-$6}'
done
