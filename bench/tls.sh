#!/usr/bin/env bash
# TLS handshake and throughput, tumbler vs redis-server (Debian's is built with OpenSSL TLS),
# side by side in one run, as ratios. Both servers get the same ECDSA P-256 certificate
# (made here with openssl) and `tls-auth-clients no`; redis-benchmark drives both over TLS.
#
#   handshake:  -k 0 makes every request a new connection: TCP connect, TLS handshake, PING.
#   throughput: SET/GET with keep-alive, keys from a 1M keyspace (-r 1000000), 50 clients,
#               without and with pipelining (-P 16).
#
# Rounds alternate tumbler/redis (ROUNDS, default 3) and report the median and the spread
# (noise band) of each ratio; server CPU per request comes from /proc/<pid>/stat.
# Usage: bench/tls.sh [requests]   (needs target/release/tumbler: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
NH=${NH:-$((N / 10))}
ROUNDS=${ROUNDS:-3}
TPORT=${TPORT:-7591}
RPORT=${RPORT:-7592}
dir=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
tls=(--tls-cert-file "$dir/cert.pem" --tls-key-file "$dir/key.pem" --tls-auth-clients no)
target/release/tumbler --port 0 --tls-port "$TPORT" "${tls[@]}" >/dev/null 2>&1 &
TPID=$!
redis-server --port 0 --tls-port "$RPORT" "${tls[@]}" --bind 127.0.0.1 --save "" \
  --appendonly no >/dev/null 2>&1 &
RPID=$!
trap 'kill $TPID $RPID 2>/dev/null || true; rm -rf "$dir"' EXIT
cli() { redis-cli --tls --cacert "$dir/cert.pem" -p "$1" "${@:2}"; }
for _ in $(seq 100); do
  cli $TPORT ping >/dev/null 2>&1 && cli $RPORT ping >/dev/null 2>&1 && break
  sleep 0.05
done
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# bench <port> <pid> <n> <redis-benchmark args...> -> "rps us_cpu_per_request"
bench() {
  local port=$1 pid=$2 n=$3; shift 3
  local t0 t1 rps
  t0=$(ticks "$pid")
  rps=$(redis-benchmark --tls --cacert "$dir/cert.pem" -p "$port" -n "$n" --csv "$@" 2>/dev/null \
    | tail -1 | awk -F'","' '{print $2}' | tr -d '"')
  t1=$(ticks "$pid")
  awk -v r="$rps" -v d=$((t1 - t0)) -v hz="$hz" -v n="$n" 'BEGIN{printf "%s %.2f", r, d / hz * 1e6 / n}'
}
declare -A res
cases=("handshake" "set" "get" "set-P16" "get-P16")
args_for() {
  case $1 in
    handshake) echo "-c 8 -k 0 -t ping_mbulk" ;;
    set) echo "-c 50 -r 1000000 -t set" ;;
    get) echo "-c 50 -r 1000000 -t get" ;;
    set-P16) echo "-c 50 -r 1000000 -P 16 -t set" ;;
    get-P16) echo "-c 50 -r 1000000 -P 16 -t get" ;;
  esac
}
for r in $(seq "$ROUNDS"); do
  for c in "${cases[@]}"; do
    n=$N; [ "$c" = handshake ] && n=$NH
    # shellcheck disable=SC2046
    res[$c,t,$r]=$(bench $TPORT $TPID "$n" $(args_for "$c"))
    # shellcheck disable=SC2046
    res[$c,r,$r]=$(bench $RPORT $RPID "$n" $(args_for "$c"))
  done
done
printf "%-10s %14s %14s %18s %10s %10s\n" case "tumbler rps" "redis rps" "ratio (min..max)" "t us/req" "r us/req"
for c in "${cases[@]}"; do
  ratios=(); trs=(); rrs=(); tcs=(); rcs=()
  for r in $(seq "$ROUNDS"); do
    read -r tr tc <<<"${res[$c,t,$r]}"; read -r rr rc <<<"${res[$c,r,$r]}"
    trs+=("$tr"); rrs+=("$rr"); tcs+=("$tc"); rcs+=("$rc")
    ratios+=("$(awk -v a="$tr" -v b="$rr" 'BEGIN{printf "%.2f", a / b}')")
  done
  med() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
  lo=$(printf "%s\n" "${ratios[@]}" | sort -g | head -1); hi=$(printf "%s\n" "${ratios[@]}" | sort -g | tail -1)
  printf "%-10s %14s %14s %8s (%s..%s) %10s %10s\n" "$c" "$(med "${trs[@]}")" "$(med "${rrs[@]}")" \
    "$(med "${ratios[@]}")" "$lo" "$hi" "$(med "${tcs[@]}")" "$(med "${rcs[@]}")"
done
