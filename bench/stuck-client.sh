#!/usr/bin/env bash
# Everyone else's service while one client stops reading its replies.
#
#   bash bench/stuck-client.sh [rounds]      # default 2 rounds per server
#
# One client stores a 100 kB value, then keeps sending GET of it for 6 s and never reads
# a reply: the server's writes to it get stuck and its input piles up. One second in,
# redis-benchmark runs GET -P 1 with 50 clients (50,000 requests, keys from 1M) against the
# same server; its throughput and latency percentiles are printed, then the same without
# the stuck client. TUMBLER_BIN picks the binary (default: the release build), TUMBLER_BIN2
# an optional second one run beside it (a binary from before a change).
#
# Measured (issue 11, seventh round): a connection waiting for its turn in the arrival order
# (server/src/state/arrival.rs) behind a ticket given back out of order was only woken when the
# first ticket in line was given back; with the stuck client's ticket first in line, such
# waits ran to their 10 ms bound. redis-server's output buffer for the stuck client grows
# without bound here (client-output-buffer-limit normal 0 0 0), which is its own cost.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
. bench/lib.sh
tumbler=$(bench_tumbler)
bench_need redis-server


stuck_client() { # port seconds
  python3 - "$1" "$2" <<'PY'
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
big = b"x" * 100000
s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n%s\r\n" % (len(big), big))
s.setblocking(False)
cmd = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n"
end = time.time() + secs
while time.time() < end:
    try:
        s.send(cmd)
    except BlockingIOError:
        time.sleep(0.0005)
PY
}

# name rps avg_ms min_ms p50_ms p95_ms p99_ms max_ms
one() { # label server-argv...
  local label=$1 port spid line
  shift
  bench_serve "$@"
  port=$BENCH_PORT
  stuck_client "$port" 6 &
  spid=$!
  sleep 1
  line=$(redis-benchmark -p "$port" -t get -n 50000 -c 50 -P 1 -r 1000000 --csv 2>/dev/null | tail -1)
  echo "$label with a stuck client: $line" | tr -d '"' | tr ',' ' '
  wait "$spid"
  line=$(redis-benchmark -p "$port" -t get -n 50000 -c 50 -P 1 -r 1000000 --csv 2>/dev/null | tail -1)
  echo "$label without:             $line" | tr -d '"' | tr ',' ' '
  bench_stop
}

echo "columns: test rps avg_ms min_ms p50_ms p95_ms p99_ms max_ms"
bench_rounds "$rounds" one "$tumbler"
