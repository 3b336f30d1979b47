#!/usr/bin/env bash
# Soak: a mixed lock workload against the release binary for a fixed time, every reply
# checked, the server's RSS printed once a minute (bench/src/bin/soak.rs, docs/fuzzing.md).
#
#   bash bench/soak.sh [seconds]        # default 1800 (30 minutes)
#
# Workload: Redisson RLock scripts with pub/sub waiters, native LOCK.ACQUIRE WAIT (with and
# without SESSION) with FENCE.SET, a semaphore, EVAL/EVALSHA, BLPOP consumers, and
# connection churn with CLIENT KILL of parked clients and SESSION holders. Exits non-zero
# on any wrong reply, a counter that does not match the grants, or RSS growth after
# warm-up. TUMBLER_BIN picks the server binary (default: the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-1800}
tumbler=${TUMBLER_BIN:-target/release/tumbler}
cargo build --release -q -p tumbler-bench --bin soak
[ -n "${TUMBLER_BIN:-}" ] || cargo build --release -q -p tumbler --bin tumbler

log=$(mktemp)
"$tumbler" --port 0 --loglevel warning >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 200); do grep -q 'port=' "$log" && break; sleep 0.05; done
port=$(grep -o 'port=[0-9]*' "$log" | head -1 | cut -d= -f2)
echo "tumbler pid $pid on port $port; soak for $secs s"
status=0
./target/release/soak --addr "127.0.0.1:$port" --pid "$pid" --secs "$secs" || status=$?
kill -0 "$pid" 2>/dev/null || { echo "SERVER DIED"; cat "$log"; exit 1; }
if grep -qi 'panicked' "$log"; then echo "SERVER PANICKED:"; grep -i -A3 panicked "$log"; status=1; fi
exit $status
