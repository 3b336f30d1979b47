#!/usr/bin/env bash
# A/B benchmark: tumbler (release binary) against redis-server 7.0.15, side by side in one
# run, interleaved over ROUNDS rounds (the order of the two servers alternates per round).
#
# Per round and server:
#   - plain commands SET GET HSET INCR LPUSH ZADD PING, 50 clients, keys drawn from a 1M
#     keyspace (-r 1000000), at -P 1 and -P 16;
#   - Redisson's RLock scripts as EVALSHA (same text as bench/scripts.sh): acquire on fresh
#     keys (lock:<rand>), reentry (one held key), contended (another owner: returns the
#     PTTL), unlock (run right after acquire on the same lock:<rand> keyspace, so part of
#     the calls release a held lock: HINCRBY -1, DEL, PUBLISH; the rest find no holder),
#     and release at -P 16 (the unlock script on 1M held locks rel:<rand>, filled before the
#     case and not timed: about 90 % of the calls release one);
#   - one-client latency (p50/p99, -P 1) for GET, SET and the acquire script;
#   - server CPU per request: the server's CPU time over the run (the growth of each of its
#     threads' /proc/PID/task/*/schedstat run time, ns resolution; /proc/PID/stat's clock
#     ticks are 10 ms, too coarse for short runs), divided by the requests;
#   - kernel time per request: the growth of /proc/PID/stat's system time (clock ticks, so
#     only its medians over the rounds mean much), and its share of the CPU above.
# Then, on fresh servers, bytes per held Redisson lock: 10,000 x (HSET lock:N <uuid>:1 1 +
# PEXPIRE lock:N 3600000), RSS growth (and redis' INFO used_memory growth).
# Prints medians over the rounds of throughput and CPU per request, and the ratios
# tumbler/redis with their median and min-max over rounds.
#
# Usage: bench/ab.sh [ROUNDS]        (default 3; needs `cargo build --release`)
# Environment: N1 (requests per -P 1 run, default 50000), N16 (per -P 16 run, 200000),
#   NLAT (one-client latency requests, 10000), CASES (regex over case names, default all),
#   TBIN (tumbler binary, default target/release/tumbler), TARGS (extra tumbler flags),
#   TBIN2 / TARGS2 (a second tumbler candidate, "tumbler2", measured in the same rounds:
#   set either one to compare two builds or two configurations side by side),
#   OUT (raw results file), SKIP_MEM=1 to skip the memory measurement,
#   PREFILL (SETs over the 1M keys at the start of each round, untimed; 3000000 leaves about
#   950,000 keys: without it each round starts empty and the plain commands run on the
#   200,000-300,000 keys the SET cases leave),
#   PIN=1 to pin the servers to CPU 1 and redis-benchmark to CPU 0 (taskset), so that the
#   client and the server never share a core (off by default: the README's runs float).
# A run with the defaults (3 rounds) takes 5-8 minutes on the shared 2-core build machine.
# A cheap many-round subset, e.g. one worker against two:
#   CASES='^(SET|GET|PING)_P1$' N1=20000 SKIP_MEM=1 TARGS2='--worker-threads 1' bench/ab.sh 9
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
N1=${N1:-50000}
N16=${N16:-200000}
NLAT=${NLAT:-10000}
CASES=${CASES:-.}
TBIN=${TBIN:-target/release/tumbler}
TARGS=${TARGS:-}
TBIN2=${TBIN2:-}
TARGS2=${TARGS2:-}
[ -n "$TARGS2" ] && [ -z "$TBIN2" ] && TBIN2=$TBIN
OUT=${OUT:-$(mktemp /tmp/ab.XXXXXX)}

[ -x "$TBIN" ] || { echo "no $TBIN: run cargo build --release" >&2; exit 1; }
SRV=()
CLI=()
if [ -n "${PIN:-}" ]; then
  SRV=(taskset -c 1)
  CLI=(taskset -c 0)
fi
. bench/lib.sh
TP=$(free_port)
RP=$(free_port)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
# shellcheck disable=SC2086
"${SRV[@]}" "$TBIN" --port "$TP" $TARGS >/dev/null 2>&1 &
TPID=$!
PIDS+=("$TPID")
"${SRV[@]}" redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
RPID=$!
PIDS+=("$RPID")
# The servers measured each round, as "name port pid"; the first one starts the odd rounds.
SERVERS=("tumbler $TP $TPID" "redis $RP $RPID")
if [ -n "$TBIN2" ]; then
  T2P=$(free_port)
  # shellcheck disable=SC2086
  "${SRV[@]}" "$TBIN2" --port "$T2P" $TARGS2 >/dev/null 2>&1 &
  T2PID=$!
  PIDS+=("$T2PID")
  SERVERS=("tumbler $TP $TPID" "redis $RP $RPID" "tumbler2 $T2P $T2PID")
fi
for s in "${SERVERS[@]}"; do
  read -r _ p _ <<<"$s"
  wait_ping "$p"
done

LOCK="if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
UNLOCK="if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end"
LOCK_SHA=$(redis-cli -p "$RP" script load "$LOCK")
UNLOCK_SHA=$(redis-cli -p "$RP" script load "$UNLOCK")

# The process' threads and the CPU time each has run, in ns (schedstat), one "tid ns" a line.
cpu_snap() { # pid
  local f tid ns
  for f in /proc/"$1"/task/*/schedstat; do
    tid=${f#/proc/"$1"/task/}
    read -r ns _ <"$f" 2>/dev/null && echo "${tid%/schedstat} $ns"
  done
}

# CPU time between two snapshots, per thread: a thread that exits in between (tokio's idle
# blocking-pool threads leave after 10 s) drops out of both sides rather than taking its
# past run time out of the sum (a plain sum over live threads went negative once).
cpu_delta() { # before after
  awk 'NR == FNR {b[$1] = $2; next} {s += $2 - (($1 in b) ? b[$1] : 0)} END {printf "%.0f", s}' \
    <(echo "$1") <(echo "$2")
}

# System (kernel) time of the whole process in clock ticks, exited threads included.
sys_ticks() { # pid
  awk '{print $15}' "/proc/$1/stat"
}
HZ=$(getconf CLK_TCK)

# One redis-benchmark run against one server; appends a result line to $OUT:
#   round case server rps cpu_us_per_request p50_ms p99_ms kernel_us_per_request
bench_one() { # round case server port pid clients pipeline requests args...
  local round=$1 case=$2 who=$3 port=$4 pid=$5 c=$6 pl=$7 n=$8
  shift 8
  local t0 t1 s0 s1 line
  t0=$(cpu_snap "$pid")
  s0=$(sys_ticks "$pid")
  line=$("${CLI[@]}" redis-benchmark -p "$port" -n "$n" -c "$c" -P "$pl" -r 1000000 --csv "$@" 2>/dev/null | tail -1)
  t1=$(cpu_snap "$pid")
  s1=$(sys_ticks "$pid")
  echo "$line" | awk -F, -v r="$round" -v cs="$case" -v w="$who" -v d="$(cpu_delta "$t0" "$t1")" -v n="$n" \
    -v k="$(( (s1 - s0) * 1000000 / HZ ))" \
    '{for (i = 1; i <= NF; i++) gsub(/"/, "", $i);
      printf "%s %s %s %s %.4f %s %s %.4f\n", r, cs, w, $2, d / 1e3 / n, $5, $7, k / n}' >>"$OUT"
}

# 1,000,000 Redisson locks rel:000000000000.. (redis-benchmark's __rand_int__ spelling),
# held once by uuid:1, for the release case; not part of the measured time.
FILL="for i = 0, tonumber(ARGV[1]) - 1 do local k = string.format('rel:%012d', i) redis.call('hset', k, 'uuid:1', 1) redis.call('pexpire', k, 3600000) end return 1"
fill_held() { # port
  redis-cli -p "$1" eval "$FILL" 0 1000000 >/dev/null
}

prep() { # port: script cache and the held keys the scripts expect
  redis-cli -p "$1" script load "$LOCK" >/dev/null
  redis-cli -p "$1" script load "$UNLOCK" >/dev/null
  redis-cli -p "$1" evalsha "$LOCK_SHA" 1 held 3600000 uuid:holder >/dev/null
  redis-cli -p "$1" evalsha "$LOCK_SHA" 1 mine 3600000 uuid:1 >/dev/null
}

# name pipeline clients requests args   (one line per case; __N__ is replaced by N1/N16)
cases() {
  for pl in 1 16; do
    local n=$N1
    [ "$pl" = 16 ] && n=$N16
    echo "SET_P$pl $pl 50 $n -t set"
    echo "GET_P$pl $pl 50 $n -t get"
    echo "HSET_P$pl $pl 50 $n -t hset"
    echo "INCR_P$pl $pl 50 $n -t incr"
    echo "LPUSH_P$pl $pl 50 $n -t lpush"
    echo "ZADD_P$pl $pl 50 $n -t zadd"
    echo "PING_P$pl $pl 50 $n -t ping_mbulk"
    echo "acquire_P$pl $pl 50 $n evalsha $LOCK_SHA 1 lock:__rand_int__ 30000 uuid:1"
    echo "unlock_P$pl $pl 50 $n evalsha $UNLOCK_SHA 2 lock:__rand_int__ chan 0 30000 uuid:1"
    echo "reentry_P$pl $pl 50 $n evalsha $LOCK_SHA 1 mine 3600000 uuid:1"
    echo "contended_P$pl $pl 50 $n evalsha $LOCK_SHA 1 held 30000 uuid:2"
  done
  # Unlock of held locks on a large keyspace: 1M locks held by uuid:1 (fill_held, before
  # the case), N16 unlocks on random ones, so about 90 % release a lock (HINCRBY -1, DEL,
  # PUBLISH) and the rest find it gone.
  echo "release_P16 16 50 $N16 evalsha $UNLOCK_SHA 2 rel:__rand_int__ chan 0 30000 uuid:1"
  echo "lat_GET 1 1 $NLAT -t get"
  echo "lat_SET 1 1 $NLAT -t set"
  echo "lat_acquire 1 1 $NLAT evalsha $LOCK_SHA 1 lock:__rand_int__ 30000 uuid:1"
}

echo "tumbler: $TBIN $TARGS (port $TP)   redis-server $(redis-server --version | awk '{print $3}') (port $RP)"
[ -n "$TBIN2" ] && echo "tumbler2: $TBIN2 $TARGS2 (port $T2P)"
echo "rounds=$ROUNDS N1=$N1 N16=$N16 NLAT=$NLAT clients=50 keyspace=1000000 prefill=${PREFILL:-0} pin=${PIN:-0} raw=$OUT"
start=$(date +%s)
for round in $(seq "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    read -r _ p _ <<<"$s"
    redis-cli -p "$p" flushall >/dev/null
    prep "$p"
    # Untimed: fill the keyspace first (PREFILL SETs over the 1M keys, so that GET and
    # the rest run on a keyspace of that size rather than on what the SET cases left).
    if [ "${PREFILL:-0}" -gt 0 ]; then
      "${CLI[@]}" redis-benchmark -p "$p" -t set -r 1000000 -n "$PREFILL" -P 16 -c 50 -q >/dev/null
    fi
  done
  # Round r starts with server (r-1) mod k and goes round the list, so each server goes
  # first, second, ... equally often.
  k=${#SERVERS[@]}
  while read -r name pl c n args; do
    [[ $name =~ $CASES ]] || continue
    for i in $(seq 0 $((k - 1))); do
      read -r who p pid <<<"${SERVERS[$(((round - 1 + i) % k))]}"
      [ "$name" = release_P16 ] && fill_held "$p"
      # shellcheck disable=SC2086
      bench_one "$round" "$name" "$who" "$p" "$pid" "$c" "$pl" "$n" $args
    done
  done < <(cases)
  echo "round $round done ($(($(date +%s) - start)) s)" >&2
done

MEM=""
if [ "${SKIP_MEM:-0}" != 1 ]; then
  MEM=$(python3 - "$TBIN" <<'PY'
import os, socket, subprocess, sys, time
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def cmd(*a):
    out = b"*%d\r\n" % len(a)
    for x in a:
        x = str(x).encode()
        out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out
def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
def roundtrip(port, payload, replies):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    buf = b""
    while buf.count(b"\r\n") < replies:
        buf += s.recv(1 << 16)
    s.close()
    return buf
def used_memory(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(cmd("INFO", "memory"))
    buf = b""
    while b"\r\n" not in buf:
        buf += s.recv(1 << 16)
    head, _, body = buf.partition(b"\r\n")
    n = int(head[1:])
    while len(body) < n:
        body += s.recv(1 << 16)
    s.close()
    for line in body.split(b"\r\n"):
        if line.startswith(b"used_memory:"):
            return int(line.split(b":")[1])
    return 0
N = 10_000
payload = b"".join(cmd("HSET", f"lock:{i}", f"6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b{i:04x}:1", 1)
                   + cmd("PEXPIRE", f"lock:{i}", 3600000) for i in range(N))
res = {}
for name, argv in (("tumbler", [sys.argv[1]]), ("redis", ["redis-server", "--save", "", "--appendonly", "no"])):
    port = free_port()
    p = subprocess.Popen(argv + ["--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                roundtrip(port, cmd("PING"), 1); break
            except OSError:
                time.sleep(0.05)
        time.sleep(0.3)
        r0, u0 = rss_kib(p.pid), used_memory(port)
        roundtrip(port, payload, 2 * N)
        time.sleep(0.3)
        r1, u1 = rss_kib(p.pid), used_memory(port)
        res[name] = ((r1 - r0) * 1024 / N, (u1 - u0) / N)
    finally:
        p.kill(); p.wait()
t, r = res["tumbler"], res["redis"]
print(f"bytes per held Redisson lock (10,000 x HSET+PEXPIRE), RSS growth: tumbler {t[0]:.0f}  redis {r[0]:.0f}  ratio {t[0]/r[0]:.2f}")
print(f"  INFO used_memory growth: tumbler {t[1]:.0f}  redis {r[1]:.0f}")
PY
)
fi

echo "total $(($(date +%s) - start)) s"
python3 - "$OUT" "$ROUNDS" <<'PY'
import statistics, sys
from collections import defaultdict
rows = defaultdict(dict)   # (case) -> {(round, server): (rps, cpu, p50, p99)}
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 7:
        continue
    rnd, case, who = f[0], f[1], f[2]
    try:
        vals = tuple(float(x) for x in f[3:8])
    except ValueError:
        continue
    if len(vals) == 4:  # raw files from before the kernel-time column
        vals += (float("nan"),)
    if case not in order:
        order.append(case)
    rows[case][(rnd, who)] = vals
def med(xs):
    return statistics.median(xs) if xs else float("nan")
def band(xs):
    return f"{med(xs):5.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "n/a"
print(f"{'case':13} {'tumbler rps':>11} {'redis rps':>10} {'rps ratio med (min-max)':>24} "
      f"{'tumbler us/req':>14} {'redis us/req':>12} {'CPU ratio med (min-max)':>24}")
lat = []
for case in order:
    d = rows[case]
    rounds = sorted({r for r, _ in d})
    both = [r for r in rounds if (r, "tumbler") in d and (r, "redis") in d]
    if case.startswith("lat_"):
        lat.append((case, d, both))
        continue
    t = [d[(r, "tumbler")] for r in both]
    rd = [d[(r, "redis")] for r in both]
    rr = [a[0] / b[0] for a, b in zip(t, rd) if b[0] > 0]
    cr = [a[1] / b[1] for a, b in zip(t, rd) if b[1] > 0]
    print(f"{case:13} {med([x[0] for x in t]):11.0f} {med([x[0] for x in rd]):10.0f} {band(rr):>24} "
          f"{med([x[1] for x in t]):14.3f} {med([x[1] for x in rd]):12.3f} {band(cr):>24}")
# A second candidate: its ratios to redis, and to tumbler (the A/B of the two candidates).
if any(w == "tumbler2" for d in rows.values() for _, w in d):
    print(f"\ntumbler2 against redis and against tumbler (per-round ratios, median (min-max)):")
    print(f"{'case':13} {'tumbler2 us/req':>15} {'rps t2/redis':>20} {'CPU t2/redis':>20} "
          f"{'rps t2/tumbler':>20} {'CPU t2/tumbler':>20}")
    for case in order:
        if case.startswith("lat_"):
            continue
        d = rows[case]
        rs = sorted({r for r, _ in d})
        three = [r for r in rs if all((r, w) in d for w in ("tumbler", "redis", "tumbler2"))]
        if not three:
            continue
        t2 = [d[(r, "tumbler2")] for r in three]
        rd = [d[(r, "redis")] for r in three]
        t1 = [d[(r, "tumbler")] for r in three]
        ratio = lambda a, b, i: [x[i] / y[i] for x, y in zip(a, b) if y[i] > 0]
        print(f"{case:13} {med([x[1] for x in t2]):15.3f} {band(ratio(t2, rd, 0)):>20} "
              f"{band(ratio(t2, rd, 1)):>20} {band(ratio(t2, t1, 0)):>20} {band(ratio(t2, t1, 1)):>20}")
# Kernel time per request (/proc/PID/stat, clock ticks): the part of the CPU above that
# both servers spend in the same system calls, which no user-space change removes.
if any(x[4] == x[4] for d in rows.values() for x in d.values()):
    print(f"\nkernel time per request, us (median (min-max) of the rounds), and its share of the CPU:")
    print(f"{'case':13} {'tumbler':>20} {'redis':>20} {'tumbler share':>14} {'redis share':>12}")
    for case in order:
        if case.startswith("lat_"):
            continue
        d = rows[case]
        rs = sorted({r for r, _ in d})
        both = [r for r in rs if (r, "tumbler") in d and (r, "redis") in d]
        t = [d[(r, "tumbler")] for r in both]
        rd = [d[(r, "redis")] for r in both]
        share = lambda xs: med([x[4] / x[1] for x in xs if x[1] > 0])
        print(f"{case:13} {band([x[4] for x in t]):>20} {band([x[4] for x in rd]):>20} "
              f"{share(t):14.2f} {share(rd):12.2f}")
for case, d, both in lat:
    t = [d[(r, "tumbler")] for r in both]
    rd = [d[(r, "redis")] for r in both]
    print(f"{case:13} one client p50/p99 ms: tumbler {med([x[2] for x in t]):.3f}/{med([x[3] for x in t]):.3f}"
          f"   redis {med([x[2] for x in rd]):.3f}/{med([x[3] for x in rd]):.3f}"
          f"   rps ratio {band([a[0]/b[0] for a, b in zip(t, rd)])}")
PY
[ -n "$MEM" ] && echo "$MEM"
