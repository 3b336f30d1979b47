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
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # bin requests -> total Ir
  local bin=$1 reqs=$2 port pid
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.%p" \
    "$bin" --port "$port" --worker-threads 2 --loglevel warning >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-benchmark -p "$port" -t "$tests" -n "$reqs" -c 1 -P 16 -r 1000000 -q >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  grep -h '^totals:\|^summary:' "$tmp"/cg.* | awk '$2>m {m=$2} END {print m}'
  rm -f "$tmp"/cg.*
}

for bin in "$old" "$new"; do
  a=$(run "$bin" "$n")
  b=$(run "$bin" $((2 * n)))
  python3 -c "print('%-40s %8.1f instructions per request (%s)' % ('$bin', ($b - $a) / $n, '$tests'))"
done
