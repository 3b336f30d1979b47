#!/usr/bin/env bash
# The Go module (go/, tumbler.dev/tumbler), its example user project (go/example), the
# Tumbler-vs-miniredis comparison (go/compare) and the //go:embed companion (go/embedded):
# go vet and go test -count=1 for each, against the server binary $TUMBLER_BINARY (default
# target/release/tumbler).
#
# Modules come from the Go module proxy (pinned in each go.sum); about 10 s with an empty
# module cache. A missing go toolchain, server binary or redis-server (the reference of
# go/compare's differential test) fails the run, or skips it under TUMBLER_SKIP_MISSING=1
# (scripts/ci/lib.sh). Exits non-zero if any vet or test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
. scripts/ci/lib.sh

command -v go >/dev/null 2>&1 || skip_or_fail "no go toolchain on PATH (Go 1.22+ is needed; the pinned client libraries need 1.26)"
export TUMBLER_BINARY=${TUMBLER_BINARY:-$root/target/release/tumbler}
case "$TUMBLER_BINARY" in /*) ;; *) TUMBLER_BINARY=$root/$TUMBLER_BINARY ;; esac
[ -x "$TUMBLER_BINARY" ] || skip_or_fail "no server binary at $TUMBLER_BINARY (build it: cargo build --release -p tumbler)"

# No toolchain download, go.sum as committed, and a bounded proxy fetch.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
echo "go.sh: $(go version); server $TUMBLER_BINARY"

t0=$(date +%s)
echo "go.sh: downloading modules"
# The //go:embed companion carries a copy of the binary under test.
bash go/embedded/build.sh "$TUMBLER_BINARY" >/dev/null
modules="go go/example go/compare go/embedded"
for m in $modules; do
  (cd "$m" && timeout 300 go mod download) || { echo "go.sh: go mod download failed in $m" >&2; exit 1; }
done
echo "go.sh: modules ready in $(( $(date +%s) - t0 )) s"

status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for m in $modules; do
  echo "==> $m: go vet"
  (cd "$m" && timeout --kill-after=10 300 go vet ./...) || { echo "go.sh: go vet failed in $m" >&2; status=1; }
  echo "==> $m: go test -count=1"
  # -p 1: one package at a time, to stay lean on a small machine next to other builds.
  if (cd "$m" && timeout --kill-after=10 600 go test -count=1 -p 1 -timeout 300s -v ./... >"$log" 2>&1); then :; else
    status=1
    echo "go.sh: go test failed in $m; its output:" >&2
    grep -vE '^=== (RUN|PAUSE|CONT)' "$log" | tail -150 >&2
  fi
  # The per-test lines, the comparison table (go/compare) and go test's closing line.
  grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|\| |start-up ratio)' "$log" || true
  pass=$(grep -cE '^\s*--- PASS' "$log" || true)
  fail=$(grep -cE '^\s*--- FAIL' "$log" || true)
  skip=$(grep -cE '^\s*--- SKIP' "$log" || true)
  total_pass=$(( ${total_pass:-0} + pass )); total_fail=$(( ${total_fail:-0} + fail )); total_skip=$(( ${total_skip:-0} + skip ))
done
echo "go.sh: $(( $(date +%s) - t0 )) s in all"
echo "go: ${total_pass} passed, ${total_fail} failed, ${total_skip} skipped"
exit $status
