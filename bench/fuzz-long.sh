#!/usr/bin/env bash
# The long versions of the fuzzers that CI runs in a bounded slice (docs/fuzzing.md):
#
#   bash bench/fuzz-long.sh [sequences] [frames]
#
# defaults: 100,000 differential command sequences against redis-server, 20,000 lock-model
# sequences, 20,000 protocol streams compared with redis-server, and 10,000,000 fuzzed
# frames over many connections. Release build, no time cap (FUZZ_SECS=0). FUZZ_SEED moves
# the seed window (default 1,000,000, away from CI's seeds). Prints each test's summary
# line (sequences/frames, mismatches, panics, wall time); exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
seqs=${1:-100000}
frames=${2:-10000000}
export FUZZ_SECS=0
export FUZZ_SEED=${FUZZ_SEED:-1000000}
export FUZZ_DIFF_COUNT=$seqs
export FUZZ_LOCKS_COUNT=${FUZZ_LOCKS_COUNT:-20000}
export FUZZ_PROTO_DIFF_COUNT=${FUZZ_PROTO_DIFF_COUNT:-20000}
export FUZZ_PROTO_FRAMES=$frames
status=0
for t in fuzz_differential fuzz_locks fuzz_protocol; do
  start=$(date +%s)
  echo "==> $t"
  cargo test --release -q -p tumbler-tests --test "$t" -- --nocapture --test-threads 1
  rc=$?
  echo "$t: exit $rc, wall $(( $(date +%s) - start )) s"
  [ "$rc" = 0 ] || status=1
done
exit $status
