#!/usr/bin/env bash
# The cost of cluster slot checks in CPU instructions, which (unlike throughput on a shared
# machine) do not depend on load:
#
#   bash bench/cluster-callgrind.sh [requests]       # default 20000
#
# Runs tumbler under valgrind --tool=callgrind twice per mode (plain server; one-node
# cluster, which owns every slot, so every command pays the slot check and none is
# redirected), with `requests` and 2x`requests` SET+GET from redis-benchmark (one client,
# -P 16, keys from -r 1000000), and reports server instructions per request as the
# difference of the two runs divided by the extra requests (startup cancels out).
# TUMBLER_BIN picks the binary (default: the release build, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
tumbler=${TUMBLER_BIN:-target/release/tumbler}
if [ -z "${TUMBLER_BIN:-}" ]; then
  cargo build --release -q -p tumbler --bin tumbler
fi
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # mode requests -> total Ir
  local mode=$1 reqs=$2 port extra=()
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  [ "$mode" = on ] && extra=(--cluster-enabled yes)
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$mode.$reqs" \
    "$tumbler" --port "$port" --worker-threads 2 --loglevel warning "${extra[@]}" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-benchmark -p "$port" -t set,get -n "$reqs" -c 1 -P 16 -r 1000000 -q >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  grep -h '^totals:\|^summary:' "$tmp"/cg.$mode.$reqs* | awk '$2>m {m=$2} END {print m}'
}

declare -A per
for mode in off on; do
  a=$(run "$mode" "$n")
  b=$(run "$mode" $((2 * n)))
  per[$mode]=$(python3 -c "print(($b - $a) / (2 * $n))")
  echo "cluster $mode: $a Ir for $n x (SET+GET), $b for $((2 * n)) -> ${per[$mode]} instructions per request"
done
python3 -c "print(f'slot checks: on/off = {${per[on]} / ${per[off]}:.4f} instructions per request')"
