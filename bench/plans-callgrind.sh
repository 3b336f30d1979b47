#!/usr/bin/env bash
# Server instructions per EVALSHA under callgrind (deterministic, so a fair comparison on a
# noisy machine): tumbler with native plans, tumbler on Lua, and redis-server, for the
# Redisson RLock scripts. Counters are zeroed after warm-up and dumped after N requests
# sent by one redis-benchmark client (-P 1), so the figure covers everything the server
# does per request (socket I/O, parsing, the script, the reply).
# Cases: acquire (fresh keys), reentry (one held key), unlock (one held key, count stays
# above 0: HINCRBY -1 + PEXPIRE), release (N held locks of count 1, each released once:
# HINCRBY -1 + DEL + PUBLISH), unlock_miss (no holder: HEXISTS only), cas.
# Usage: bench/plans-callgrind.sh [requests]   (needs: cargo build --release -p tumbler,
# or TUMBLER_BIN=path)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
P=${P:-7591}
. bench/lib.sh
cg_init

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
UNLOCK="if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end"
CAS="if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"

# Sends N commands, one at a time (-P 1, as redis-benchmark -c 1), with %d in an argument
# replaced by 0..N-1: every key a distinct, known one, which redis-benchmark cannot do.
one_by_one() { # port N args...
  python3 - "$@" <<'PY'
import socket, sys
port, n, args = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
s = socket.create_connection(("127.0.0.1", port))
for i in range(n):
    a = [x.replace("%d", str(i)).encode() for x in args]
    s.sendall(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
    buf = b""
    while not buf.endswith(b"\r\n"):
        buf += s.recv(4096)
PY
}

measure() { # label command...
  local label=$1; shift
  cg_start "$label" "$@"
  local ls us cs
  ls=$(redis-cli -p "$P" script load "$LOCK")
  us=$(redis-cli -p "$P" script load "$UNLOCK")
  cs=$(redis-cli -p "$P" script load "$CAS")
  # warm-up
  redis-benchmark -p "$P" -n 500 -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1 >/dev/null 2>&1
  for case in acquire reentry unlock release unlock_miss cas; do
    redis-cli -p "$P" flushall >/dev/null
    case $case in
      reentry) redis-cli -p "$P" evalsha "$ls" 1 mine 30000 uuid:1 >/dev/null ;;
      unlock) redis-cli -p "$P" hset mine uuid:1 100000000 >/dev/null ;;
      release) one_by_one "$P" "$N" evalsha "$ls" 1 'lock:%d' 30000 uuid:1 ;;
    esac
    local ir
    case $case in
      acquire) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1) ;;
      reentry) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 evalsha "$ls" 1 mine 30000 uuid:1) ;;
      unlock) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 evalsha "$us" 2 mine chan 0 30000 uuid:1) ;;
      release) ir=$(cg_count "$label" "$case" one_by_one "$P" "$N" evalsha "$us" 2 'lock:%d' chan 0 30000 uuid:1) ;;
      unlock_miss) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$us" 2 'lock:__rand_int__' chan 0 30000 uuid:1) ;;
      cas) ir=$(cg_count "$label" "$case" redis-benchmark -p "$P" -n "$N" -c 1 -r 1000000 evalsha "$cs" 1 'lk:__rand_int__' me) ;;
    esac
    printf "%-8s %-8s %12.0f instructions per EVALSHA\n" "$label" "$case" "$(cg_per "$N" "$ir")"
  done
  cg_stop
}

measure plan "${TUMBLER_BIN:-target/release/tumbler}" --port "$P" --worker-threads 1
measure lua "${TUMBLER_BIN:-target/release/tumbler}" --port "$P" --worker-threads 1 --lua-native-plans no
measure redis redis-server --port "$P" --bind 127.0.0.1 --save "" --appendonly no
