#!/usr/bin/env bash
# The lock-order checker's cost: the same tumbler binary with `--lockdep no` and
# `--lockdep yes` side by side, interleaved over ROUNDS rounds (the order alternates per
# round), on Redisson's RLock scripts as EVALSHA with Redisson-shaped owners
# (`<uuid>:<threadId>`, so the checker recognises every hold):
#   acquire      fresh keys (lock:<rand>), a random thread per call: the usual workload;
#   acquire_1    fresh keys, one thread: an owner that ends up holding thousands of locks;
#   reentry      one held key, its holder again (a count going up: not an acquisition);
#   contended    a key held by another owner (the script answers the PTTL);
#   unlock       run after the acquires on the same keyspace (part release, part find none).
# 50 clients, -P 1, keys from a 1M keyspace. Server CPU per request from /proc/PID/stat.
# Prints the medians over rounds and the ratios on/off (median, min-max).
# Optional: BASE_BIN=path/to/tumbler-before-lockdep adds that binary as a third server
# ("base"), to compare `lockdep no` with the code before the checker existed.
# Usage: bench/lockdep.sh [ROUNDS]   (default 5; needs cargo build --release -p tumbler)
# Environment: N (requests per run, default 100000), TBIN (default target/release/tumbler).
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
N=${N:-100000}
TBIN=${TBIN:-target/release/tumbler}
BASE_BIN=${BASE_BIN:-}
HZ=$(getconf CLK_TCK)
OUT=$(mktemp /tmp/lockdep-bench.XXXXXX)
[ -x "$TBIN" ] || { echo "no $TBIN: run cargo build --release -p tumbler" >&2; exit 1; }
. bench/lib.sh
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
declare -A PORT PID
start() { # name binary args...
  local name=$1 bin=$2; shift 2
  PORT[$name]=$(free_port)
  "$bin" --port "${PORT[$name]}" "$@" >/dev/null 2>&1 &
  PID[$name]=$!
  PIDS+=("${PID[$name]}")
  wait_ping "${PORT[$name]}"
}
start off "$TBIN" --lockdep no
start on "$TBIN" --lockdep yes
SERVERS=(off on)
if [ -n "$BASE_BIN" ]; then start base "$BASE_BIN"; SERVERS+=(base); fi

U=5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11
LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
UNLOCK="if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end"
LS=$(redis-cli -p "${PORT[off]}" script load "$LOCK")
US=$(redis-cli -p "${PORT[off]}" script load "$UNLOCK")

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
bench_one() { # round case server args...
  local round=$1 case=$2 who=$3; shift 3
  local t0 t1 line
  t0=$(ticks "${PID[$who]}")
  line=$(redis-benchmark -p "${PORT[$who]}" -n "$N" -c 50 -P 1 -r 1000000 --csv "$@" 2>/dev/null | tail -1)
  t1=$(ticks "${PID[$who]}")
  echo "$line" | awk -F, -v r="$round" -v cs="$case" -v w="$who" -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" \
    '{gsub(/"/, "", $2); printf "%s %s %s %s %.3f\n", r, cs, w, $2, d / hz * 1e6 / n}' >>"$OUT"
}
cases() {
  echo "acquire evalsha $LS 1 lock:__rand_int__ 30000 $U:__rand_int__"
  echo "acquire_1 evalsha $LS 1 lock:__rand_int__ 30000 $U:1"
  echo "reentry evalsha $LS 1 mine 3600000 $U:1"
  echo "contended evalsha $LS 1 held 30000 $U:2"
  echo "unlock evalsha $US 2 lock:__rand_int__ chan 0 30000 $U:1"
}
echo "tumbler: $TBIN, lockdep no vs yes${BASE_BIN:+, base $BASE_BIN}; rounds=$ROUNDS N=$N clients=50 raw=$OUT"
for round in $(seq "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    p=${PORT[$s]}
    redis-cli -p "$p" flushall >/dev/null
    redis-cli -p "$p" script load "$LOCK" >/dev/null
    redis-cli -p "$p" script load "$UNLOCK" >/dev/null
    redis-cli -p "$p" evalsha "$LS" 1 mine 3600000 "$U:1" >/dev/null
    redis-cli -p "$p" evalsha "$LS" 1 held 3600000 "$U:3" >/dev/null
    [ "$s" = base ] || redis-cli -p "$p" tumbler.lockdep reset >/dev/null
  done
  order=("${SERVERS[@]}")
  [ $((round % 2)) = 0 ] && order=($(printf '%s\n' "${SERVERS[@]}" | tac))
  while read -r name args; do
    for s in "${order[@]}"; do
      # shellcheck disable=SC2086
      bench_one "$round" "$name" "$s" $args
    done
  done < <(cases)
  echo "round $round done" >&2
done
redis-cli -p "${PORT[on]}" info lockdep | tr -d '\r' | grep -E 'acquisitions|owners|inversions' | tr '\n' ' '
echo
python3 - "$OUT" "${SERVERS[@]}" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
servers = sys.argv[2:]
cases = list(dict.fromkeys(r[1] for r in rows))
def get(case, who, col):
    return {r[0]: float(r[col]) for r in rows if r[1] == case and r[2] == who}
hdr = "case        " + "".join(f"{s+' rps':>13}{s+' us/req':>12}" for s in servers) + "   on/off rps (min-max)   on/off cpu (min-max)"
print(hdr)
for c in cases:
    line = f"{c:<12}"
    for s in servers:
        line += f"{st.median(get(c, s, 3).values()):>13.0f}{st.median(get(c, s, 4).values()):>12.2f}"
    for col in (3, 4):
        on, off = get(c, "on", col), get(c, "off", col)
        rs = [on[k] / off[k] for k in on if k in off and off[k]]
        line += f"   {st.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})"
    if "base" in servers:
        off, base = get(c, "off", 3), get(c, "base", 3)
        rs = [off[k] / base[k] for k in off if k in base and base[k]]
        line += f"   off/base rps {st.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})"
    print(line)
PY
