#!/usr/bin/env bash
# Interleaved benchmark of proto execution models vs redis-server.
# Usage: ./bench.sh [ROUNDS] > results/raw.csv
set -u
ROUNDS=${1:-3}
BIN=./target/release/proto
PORT=7200
N=200000
CONFIGS=(redis mutex tmutex exec-cb-1w exec-cb-2w exec-std-1w exec-std-2w current)

start() { # $1 config -> sets SRV
  case $1 in
    redis)       redis-server --port $PORT --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null 2>&1 & ;;
    mutex)       $BIN --mode mutex  --workers 2 --port $PORT & ;;
    tmutex)      $BIN --mode tmutex --workers 2 --port $PORT & ;;
    exec-cb-1w)  $BIN --mode executor --chan crossbeam --workers 1 --port $PORT & ;;
    exec-cb-2w)  $BIN --mode executor --chan crossbeam --workers 2 --port $PORT & ;;
    exec-std-1w) $BIN --mode executor --chan std --workers 1 --port $PORT & ;;
    exec-std-2w) $BIN --mode executor --chan std --workers 2 --port $PORT & ;;
    current)     $BIN --mode current --port $PORT & ;;
  esac
  SRV=$!
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p $PORT ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server $1 did not start" >&2
}

rb() { # label, args... ; prints label,round,csv-row
  local label=$1; shift
  timeout 120 redis-benchmark -h 127.0.0.1 -p $PORT --csv "$@" 2>/dev/null \
    | grep -v '^"test"' | sed "s/^/$cfg,$r,$label,/"
}

echo "config,round,bench,test,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms"
for r in $(seq $ROUNDS); do
  # rotate order each round
  n=${#CONFIGS[@]}
  for i in $(seq 0 $((n-1))); do
    cfg=${CONFIGS[$(( (i + r - 1) % n ))]}
    start $cfg
    if [ $cfg = redis ]; then LK=(HINCRBY lock:__rand_int__ field 1); else LK=(LOCKSIM lock:__rand_int__ field 30000); fi
    rb P1  -t set,get,ping -n $N -c 50 -P 1
    rb P16 -t set,get,ping -n $N -c 50 -P 16
    rb LK1  -n $N -c 50 -P 1  -r 1000 "${LK[@]}"
    rb LK16 -n $N -c 50 -P 16 -r 1000 "${LK[@]}"
    rb LAT -t get -n 50000 -c 1 -P 1
    kill $SRV; wait $SRV 2>/dev/null
    echo "round $r $cfg done" >&2
  done
done
