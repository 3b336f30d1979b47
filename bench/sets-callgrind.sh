#!/usr/bin/env bash
# Server instructions per set command on a small set of strings (5 members: a listpack from
# the redis-7.2 personality on, a hashtable before issue 40's listpack sets), for one or two
# tumbler binaries:
#
#   bash bench/sets-callgrind.sh BIN [BIN2] [requests]      # 20000
#
# Each binary runs under valgrind --tool=callgrind; per case, `requests` commands from
# redis-benchmark (one client, -P 16) are counted after zeroing the counters (cg_count), and
# divided by the requests.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cg_init
bins=("$1")
n=20000
if [ $# -ge 2 ]; then
  if [[ $2 =~ ^[0-9]+$ ]]; then n=$2; else bins+=("$2"); n=${3:-20000}; fi
fi
cases=(
  "SISMEMBER s epsilon"
  "SISMEMBER s absent"
  "SMEMBERS s"
  "SCARD s"
  "SADD s gamma"
  "SADD s2 alpha beta gamma delta epsilon"
)
for bin in "${bins[@]}"; do
  cg_start sets "$bin" --port "$(free_port)" --loglevel warning
  redis-cli -p "$CG_PORT" SADD s alpha beta gamma delta epsilon >/dev/null
  echo "$bin: OBJECT ENCODING s = $(redis-cli -p "$CG_PORT" OBJECT ENCODING s)"
  for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    ir=$(cg_count sets case redis-benchmark -p "$CG_PORT" -n "$n" -c 1 -P 16 -q $c)
    printf '  %-45s %8.0f instructions per request\n' "$c" "$(cg_per "$n" "$ir")"
  done
  cg_stop
done
