#!/usr/bin/env bash
# Server CPU time per request (user+sys from /proc/<pid>/stat), tumbler vs redis-server,
# for EVALSHA of Redisson's RLock scripts. On a 2-core machine redis-benchmark itself
# saturates one core, so requests/s tops out at the client for both servers; CPU per request
# shows what each server spends. Usage: bench/cpu-per-op.sh [requests]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300000}
TPORT=${TPORT:-7491}
RPORT=${RPORT:-7492}
target/release/tumbler --port "$TPORT" >/dev/null 2>&1 &
TPID=$!
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
RPID=$!
trap 'kill $TPID $RPID 2>/dev/null || true' EXIT
sleep 1
LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
for pl in 1 16; do
  for case in reentry contended; do
    for who in tumbler redis; do
      if [ $who = tumbler ]; then p=$TPORT; pid=$TPID; else p=$RPORT; pid=$RPID; fi
      redis-cli -p $p flushall >/dev/null
      sha=$(redis-cli -p $p script load "$LOCK")
      redis-cli -p $p evalsha "$sha" 1 held 3600000 uuid:holder >/dev/null
      owner=uuid:holder; [ $case = contended ] && owner=uuid:other
      t0=$(ticks $pid)
      rps=$(redis-benchmark -p $p -n "$N" -c 50 -P $pl --csv evalsha "$sha" 1 held 30000 $owner 2>/dev/null | tail -1 | awk -F'","' '{print $2}' | tr -d '"')
      t1=$(ticks $pid)
      us=$(awk -v d=$((t1 - t0)) -v hz=$hz -v n=$N 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')
      printf "%-10s -P %-3s %-8s %10s rps  %6s us CPU/request\n" $case $pl $who "$rps" "$us"
    done
  done
done
