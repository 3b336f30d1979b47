#!/usr/bin/env bash
# The machine's ceiling as a server: `bench/limit-server.sh --port P` builds and runs the
# limit server of ../shared/perf/limit_server.c (one thread, epoll, parses RESP only far
# enough to count requests, answers each with a fixed reply; no keyspace). No server of
# that kind spends less CPU per request here, and none gets more requests per second out
# of redis-benchmark, which is the bound at -P 1 (docs/architecture.md, "The ceiling").
#
# It takes a server binary's place in bench/ab.sh, for the plain commands only (it answers
# +OK to everything else):
#   TBIN2=bench/limit-server.sh CASES='^(SET|GET|HSET|INCR|LPUSH|ZADD|PING)_P(1|16)$' \
#     SKIP_MEM=1 bench/ab.sh 7
# LIMIT_SRC overrides the source's path.
set -eu
[ "${1:-}" = --port ] || { echo "usage: $0 --port P" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
src=${LIMIT_SRC:-$here/../../shared/perf/limit_server.c}
[ -f "$src" ] || { echo "no $src (set LIMIT_SRC)" >&2; exit 1; }
bin=${TMPDIR:-/tmp}/tumbler-limit-server
[ "$bin" -nt "$src" ] || cc -O2 -o "$bin" "$src"
exec "$bin" "$2"
