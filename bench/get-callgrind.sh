#!/usr/bin/env bash
# Server instructions per GET (or any redis-benchmark test) of two tumbler binaries, e.g.
# before and after a change on the command path (the SLOWLOG check added one load and one
# comparison per command):
#
#   bash bench/get-callgrind.sh OLD_BIN NEW_BIN [requests] [tests]   # 20000, "get"
#
# Each binary runs under valgrind --tool=callgrind twice, with `requests` and 2x`requests`
# commands from redis-benchmark (one client, -P 16, keys from -r 1000000); instructions per
# request are the difference of the two totals divided by the extra requests (startup
# cancels out). Rounds alternate between the binaries; run it twice to see the noise band.
set -euo pipefail
old=$1 new=$2 n=${3:-20000} tests=${4:-get}
. "$(dirname "$0")/lib.sh"
cg_init

run() { # bin requests -> total Ir
  local bin=$1 reqs=$2
  cg_start run "$bin" --port "$(free_port)" --worker-threads 2 --loglevel warning
  redis-benchmark -p "$CG_PORT" -t "$tests" -n "$reqs" -c 1 -P 16 -r 1000000 -q >/dev/null
  cg_stop
  cg_total run
}

for bin in "$old" "$new"; do
  a=$(run "$bin" "$n")
  b=$(run "$bin" $((2 * n)))
  python3 -c "print('%-40s %8.1f instructions per request (%s)' % ('$bin', ($b - $a) / $n, '$tests'))"
done
