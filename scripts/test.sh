#!/usr/bin/env bash
# Runs every test Tumbler has, installing what they need first:
#   1. redis-server (the reference for differential tests) and tclsh (Redis' Tcl suite),
#   2. unit, end-to-end and differential tests (cargo test --workspace),
#   3. Redis 7.0's own Tcl units against a tumbler binary, with a ratchet of pass counts.
# .ci/run calls exactly this. Under CI=true a missing reference server fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }

need_pkgs=()
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server)
command -v tclsh8.6 >/dev/null 2>&1 || command -v tclsh8.7 >/dev/null 2>&1 || need_pkgs+=(tcl)
command -v dpkg-source >/dev/null 2>&1 || need_pkgs+=(dpkg-dev)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing ${need_pkgs[*]}"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  else
    echo "missing: ${need_pkgs[*]}; install them (redis-server 7.0, tcl 8.6) and re-run" >&2
    [ "${CI:-}" = "true" ] && exit 1
  fi
fi

log "building"
cargo build --release --workspace --all-targets

log "cargo test --workspace"
cargo test --release --workspace

log "Redis 7.0 Tcl units against tumbler (ratchet: tests/tcl/tumbler.baseline)"
out=$(mktemp); ./target/release/tumbler --port 0 --loglevel warning >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'port=' "$out" && break; sleep 0.05; done
port=$(grep -o 'port=[0-9]*' "$out" | head -1 | cut -d= -f2)
units=$(grep -v '^#' tests/tcl/tumbler.baseline | awk '{print $1}' | tr '\n' ' ')
bash scripts/redis-tcl-suite.sh --port "$port" --units "$units" --baseline tests/tcl/tumbler.baseline --logdir target/tcl-logs
kill $pid 2>/dev/null || true
