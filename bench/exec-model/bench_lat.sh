#!/usr/bin/env bash
# Single-client latency only, client pinned to CPU 0 with taskset, server unpinned.
# Usage: ./bench_lat.sh [ROUNDS] > results/lat_pinned.csv
set -u
ROUNDS=${1:-3}
source <(sed -n '/^BIN=/,/^}/p' bench.sh)   # reuse BIN/PORT/CONFIGS/start()
echo "config,round,bench,test,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms"
for r in $(seq $ROUNDS); do
  n=${#CONFIGS[@]}
  for i in $(seq 0 $((n-1))); do
    cfg=${CONFIGS[$(( (i + r - 1) % n ))]}
    start $cfg
    timeout 60 taskset -c 0 redis-benchmark -h 127.0.0.1 -p $PORT --csv -t get -n 50000 -c 1 -P 1 2>/dev/null \
      | grep -v '^"test"' | sed "s/^/$cfg,$r,LATPIN,/"
    kill $SRV; wait $SRV 2>/dev/null
  done
done
