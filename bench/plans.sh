#!/usr/bin/env bash
# Native plans vs Lua vs redis-server: Redisson RLock acquire / re-entry / unlock as EVALSHA,
# three servers side by side, interleaved rounds, keys from a 1M keyspace, 50 clients,
# -P 1 and -P 16. Prints per-round throughput and server CPU per request (user+sys from
# /proc/<pid>/stat), then medians and ratios with their per-round range.
#
# Cases (each round starts from an empty keyspace):
#   acquire  EVALSHA lock 1 lock:__rand_int__ 30000 uuid:1      (fresh keys: exists, hset, pexpire)
#   reentry  EVALSHA lock 1 lock:__rand_int__ 30000 uuid:1      (the same keys again: exists,
#            hexists, hincrby, pexpire where the key was taken, a fresh acquire elsewhere)
#   unlock   EVALSHA unlock 2 lock:__rand_int__ chan 0 30000 uuid:1   (hexists, hincrby -1,
#            pexpire/del+publish where held, `return nil` elsewhere)
# Usage: bench/plans.sh [requests] [rounds]   (needs: cargo build --release -p tumbler)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
ROUNDS=${2:-3}
PON=${PON:-7581}
POFF=${POFF:-7582}
PRED=${PRED:-7583}

target/release/tumbler --port "$PON" >/dev/null 2>&1 &
ON=$!
target/release/tumbler --port "$POFF" --lua-native-plans no >/dev/null 2>&1 &
OFF=$!
redis-server --port "$PRED" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
RED=$!
trap 'kill $ON $OFF $RED 2>/dev/null || true' EXIT
sleep 1

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
UNLOCK="if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end"

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
OUT=$(mktemp)

# run <server> <port> <pid> <pipeline> <case> <round> args...
run() {
  local who=$1 p=$2 pid=$3 pl=$4 case=$5 round=$6; shift 6
  local t0 t1 rps us
  t0=$(ticks "$pid")
  rps=$(redis-benchmark -p "$p" -n "$N" -c 50 -P "$pl" -r 1000000 --csv "$@" 2>/dev/null |
    tail -1 | awk -F'","' '{print $2}' | tr -d '"')
  t1=$(ticks "$pid")
  us=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" 'BEGIN{printf "%.3f", d / hz * 1e6 / n}')
  printf "%s %s %s %s %s %s\n" "$case" "$pl" "$who" "$round" "$rps" "$us" >>"$OUT"
  printf "round %s  %-8s -P %-3s %-6s %10s rps %8s us CPU/request\n" "$round" "$case" "$pl" "$who" "$rps" "$us"
}

for round in $(seq 1 "$ROUNDS"); do
  for pl in 1 16; do
    # Interleave: each case runs on the three servers back to back.
    for who in plan lua redis; do
      case $who in plan) p=$PON ;; lua) p=$POFF ;; redis) p=$PRED ;; esac
      redis-cli -p "$p" flushall >/dev/null
    done
    for case in acquire reentry unlock; do
      for who in plan lua redis; do
        case $who in plan) p=$PON; pid=$ON ;; lua) p=$POFF; pid=$OFF ;; redis) p=$PRED; pid=$RED ;; esac
        ls=$(redis-cli -p "$p" script load "$LOCK")
        us_=$(redis-cli -p "$p" script load "$UNLOCK")
        case $case in
          acquire|reentry) run $who "$p" "$pid" "$pl" $case "$round" evalsha "$ls" 1 'lock:__rand_int__' 30000 uuid:1 ;;
          unlock) run $who "$p" "$pid" "$pl" $case "$round" evalsha "$us_" 2 'lock:__rand_int__' chan 0 30000 uuid:1 ;;
        esac
      done
    done
  done
done

echo
echo "medians over $ROUNDS rounds (ratio range over rounds in brackets)"
for case in acquire reentry unlock; do
  for pl in 1 16; do
    awk -v c=$case -v pl=$pl '
      function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((n + 1) / 2)] }
      $1 == c && $2 == pl { rps[$3, $4] = $5; cpu[$3, $4] = $6; if ($4 > R) R = $4 }
      END {
        split("plan lua redis", W, " ")
        for (w = 1; w <= 3; w++) { for (r = 1; r <= R; r++) { x[r] = rps[W[w], r]; y[r] = cpu[W[w], r] }; mr[W[w]] = med(x, R); mc[W[w]] = med(y, R) }
        lo1 = lo2 = lo3 = 1e9; hi1 = hi2 = hi3 = 0
        for (r = 1; r <= R; r++) {
          a = rps["plan", r] / rps["redis", r]; if (a < lo1) lo1 = a; if (a > hi1) hi1 = a
          b = cpu["plan", r] / cpu["redis", r]; if (b < lo2) lo2 = b; if (b > hi2) hi2 = b
          d = cpu["plan", r] / cpu["lua", r]; if (d < lo3) lo3 = d; if (d > hi3) hi3 = d
        }
        printf "%-8s -P %-3s rps plan %9.0f lua %9.0f redis %9.0f | plan/redis %.2f [%.2f-%.2f]  plan/lua %.2f\n", c, pl, mr["plan"], mr["lua"], mr["redis"], mr["plan"] / mr["redis"], lo1, hi1, mr["plan"] / mr["lua"]
        printf "%-8s -P %-3s CPU us/req plan %.3f lua %.3f redis %.3f | plan/redis %.2f [%.2f-%.2f]  plan/lua %.2f [%.2f-%.2f]\n", c, pl, mc["plan"], mc["lua"], mc["redis"], mc["plan"] / mc["redis"], lo2, hi2, mc["plan"] / mc["lua"], lo3, hi3
      }' "$OUT"
  done
done
rm -f "$OUT"
