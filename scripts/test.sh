#!/usr/bin/env bash
# Runs every test Tumbler has, installing what they need first:
#   1. redis-server (the reference for differential tests; brings redis-cli and
#      redis-benchmark) and tclsh (Redis' Tcl suite),
#   2. the client libraries the client tests drive (redis-py, pottery, python-redis-lock;
#      ioredis, redlock, redis-semaphore, bullmq) into target/clients,
#   3. unit, end-to-end, differential, client and doc tests (cargo test --workspace),
#   4. the static binary the container image ships (scripts/static-build.sh),
#   4b. the pip wheel and npm package around that binary, with their example suites,
#   4c. the launchers users start redis-server with (pytest-redis, npm redis-server,
#       redis-memory-server, Testcontainers' wait strategies) and TLS material made as users
#       make it (scripts/ci/launchers.sh),
#   4d. the Java artifact and its example project, the real Redisson/Jedis/Lettuce/Spring
#       against tumbler and redis-server (scripts/ci/java-*.sh), and the Go module
#       (scripts/ci/go.sh),
#   5. Redis 7.0's own Tcl units against a tumbler binary, with a ratchet of pass counts.
# First of all, scripts/ci/layers.py checks the crates' layers (both modes).
# .ci/run calls exactly this.
#
#   bash scripts/test.sh --quick   the fast loop: the release build, the unit tests and the
#                                  integration tests in quick_tests below (redis-server,
#                                  redis-cli and the newer reference servers needed; no client
#                                  libraries, static build, packages, launchers, Java, Go or Tcl)
#
# A missing tool or reference server fails the run, under CI or not; TUMBLER_SKIP_MISSING=1
# skips what needs it instead (scripts/ci/lib.sh). docs/testing.md lists every switch.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ci/lib.sh

quick=false
case "${1:-}" in
  --quick) quick=true ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
# The integration tests --quick runs (tests/tests/*.rs): a sample of each kind, about a
# minute of running. The ones that need the Python and Node clients are left out.
quick_tests=(
  e2e_basic e2e_foundation e2e_lists e2e_streams embed          # end to end, embedding
  differential_basic differential_keys differential_protocol    # against redis-server
  differential_functions rdb_differential snapshot               # RDB files, snapshots
  personality differential_versions differential_hash_ttl        # the releases Tumbler can be
  differential_sets                                              # encodings per release
  locks lock_checker scripting multi pubsub blocking             # locks and connections
  notifications cluster client_limits robustness
  cli cli_nodes process metrics_cli                              # the binary as a process
)

log() { printf '\n==> %s\n' "$*"; }

# The crates' layers (docs/architecture.md, "The server's layers"): no import cycle between
# modules, no import from a lower layer to a higher one. Seconds, so before anything else.
log "layering check (scripts/ci/layers.py)"
python3 scripts/ci/layers.py

need_pkgs=()
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server)
command -v redis-benchmark >/dev/null 2>&1 || need_pkgs+=(redis-tools)
if ! $quick; then
  command -v tclsh8.6 >/dev/null 2>&1 || command -v tclsh8.7 >/dev/null 2>&1 || need_pkgs+=(tcl)
  command -v dpkg-source >/dev/null 2>&1 || need_pkgs+=(dpkg-dev)
  command -v musl-gcc >/dev/null 2>&1 || need_pkgs+=(musl-tools)   # static binary (Dockerfile)
  # Client-library tests (tests/clients): a Python venv and npm.
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3 python3-venv)
  command -v npm >/dev/null 2>&1 || need_pkgs+=(nodejs npm)
  command -v tmux >/dev/null 2>&1 || need_pkgs+=(tmux)   # `tumbler top` in a real terminal
  command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)   # TLS material as users make it
  # The Java artifact and client tests (Java 17+, Maven) and the Go module (Go 1.26: the
  # machine image has it; Debian's golang-go is older, so go.sh says so if that is all there is).
  command -v javac >/dev/null 2>&1 || need_pkgs+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || need_pkgs+=(maven)
  command -v go >/dev/null 2>&1 || need_pkgs+=(golang-go)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing ${need_pkgs[*]}"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO timeout 300 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO timeout 600 apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  else
    missing "${need_pkgs[*]} (no apt-get: install them, redis-server 7.0 and tcl 8.6, and re-run)"
  fi
fi

# Newer reference servers (redis-server 8.0, valkey-server 9) from Debian's packages, unpacked
# beside their own libraries (../shared/refservers/install.sh), on PATH as redis8-server and
# valkey9-server for the differential tests.
refdir=${TUMBLER_CACHE:-$HOME/.cache/tumbler}/refservers
installer=../shared/refservers/install.sh
if [ -f "$installer" ]; then
  log "reference servers redis8-server, valkey9-server into $refdir"
  timeout 900 bash "$installer" "$refdir" >/dev/null
  export PATH="$refdir/bin:$PATH"
else
  missing "$installer (redis8-server and valkey9-server, the newer reference servers)"
fi

if $quick; then
  tests=()
  for t in "${quick_tests[@]}"; do tests+=(--test "$t"); done
  # One cargo invocation's features throughout (--workspace, as the full run's): the server
  # library is compiled once, and the binary the process tests run is built beside the
  # tests that run it (tests/src/binary.rs).
  log "building the shipped binary (release) and the quick tests (ci-test profile)"
  cargo build --release -p tumbler --bin tumbler
  cargo build --profile ci-test --workspace --bin tumbler "${tests[@]}"
  log "unit tests (lockcore, server, client, bench)"
  cargo test --profile ci-test --workspace --lib --bins
  log "integration tests: ${quick_tests[*]}"
  cargo test --profile ci-test --workspace "${tests[@]}"
  log "quick run passed (the full run: bash scripts/test.sh)"
  exit 0
fi

# Client libraries for tests/tests/clients_*.rs. Pinned in tests/clients/; reinstalled only
# when the pins change. Bounded so a slow registry cannot eat the CI budget.
clients=target/clients
mkdir -p "$clients"
if command -v python3 >/dev/null 2>&1; then
  req=tests/clients/python/requirements.txt
  if ! cmp -s "$req" "$clients/venv/requirements.txt"; then
    log "installing Python client libraries into $clients/venv"
    rm -rf "$clients/venv"
    timeout 120 python3 -m venv "$clients/venv"
    timeout 300 "$clients/venv/bin/pip" install -q --disable-pip-version-check -r "$req"
    cp "$req" "$clients/venv/requirements.txt"
  fi
else
  missing "python3 (the Python client tests)"
fi
if command -v npm >/dev/null 2>&1; then
  pkg=tests/clients/node/package.json
  # package-lock.json pins every transitive dependency (bullmq's too); `npm install` with
  # it installs exactly those versions. (`npm ci` would refuse it: the registry mirror
  # lacks msgpackr's optional builds for other platforms, so the lock cannot list them.)
  lock=tests/clients/node/package-lock.json
  # The marker is written only after a complete install, so an interrupted or timed-out
  # install is redone on the next run instead of leaving a half-filled node_modules.
  if ! cat "$pkg" "$lock" | cmp -s - "$clients/node/installed-package.json"; then
    log "installing Node client libraries into $clients/node"
    rm -rf "$clients/node"
    mkdir -p "$clients/node"
    cp "$pkg" "$lock" "$clients/node/"
    (cd "$clients/node" && timeout 300 npm install --no-audit --no-fund --loglevel=error)
    cat "$pkg" "$lock" > "$clients/node/installed-package.json"
  fi
else
  missing "npm (the Node client tests)"
fi

log "building"
# The shipped binary (the Tcl suite and the packages run it) with the release profile, and
# every test and bench target with the ci-test profile (Cargo.toml says why).
cargo build --release -p tumbler --bin tumbler
cargo build --profile ci-test --workspace --all-targets

log "cargo test --workspace"
# (includes doctests: docs/embedding.md's examples run via server/src/embed.rs)
cargo test --profile ci-test --workspace

# ---- lock-order checker: the lock tests again with the lock-order checker (lockdep) on in
# every server they start (tests/src/lib.rs reads TUMBLER_TEST_LOCKDEP); already built above
# (--workspace, as there: -p tumbler-tests would resolve features differently and compile the
# server library again), so this costs their run time only, about 40 s (lock_checker 12 s,
# fuzz_locks 25 s).
log "lock tests with lockdep on"
for t in lock_checker locks scripting_fairlock fuzz_locks; do
  TUMBLER_TEST_LOCKDEP=yes timeout 300 cargo test --profile ci-test --workspace --test "$t"
done
# ---- end lock-order checker

# ---- connections on tokio: plain TCP connections run on our own event loop by default
# (server/src/io/evloop.rs); these files again with them on tokio, the path TLS and Unix-socket
# connections take, whose arrival order and long-script hand-off differ. About 60 s.
log "connection tests with TCP connections on tokio (event-loop no)"
for t in arrival_order one_worker pubsub blocking scripting multi monitor client_limits robustness fuzz_protocol; do
  TUMBLER_TEST_EVENT_LOOP=no timeout 300 cargo test --profile ci-test --workspace --test "$t"
done
# ---- end connections on tokio

log "static binary for the container image (Dockerfile; no Docker engine needed)"
bash scripts/static-build.sh

# ---- packages: the pip wheel and the npm tarball, built around the static binary above
# (never recompiled), installed into fresh environments without the repository or cargo,
# each running its example suites (packaging/*/example-tests; the pytest one also under
# `-n 2` on one shared server) and a test that fails on purpose, whose .rdb/.txt artifacts
# packaging/check-artifacts.sh checks (redis-check-rdb, from redis-tools). About 40 s.
log "packages: pip wheel and npm tarball, example suites against the installed packages"
static_bin=$(bash packaging/static-bin.sh)
TUMBLER_BINARY=$static_bin timeout 600 bash packaging/python/ci.sh
TUMBLER_BINARY=$static_bin timeout 600 bash packaging/npm/ci.sh
# ---- end packages

# ---- launchers, Java and Go: the tools users start Tumbler with, unchanged, and the Java
# and Go packages. Each script installs its pinned dependencies (pip/npm/Maven/Go module
# caches) and runs every scenario against redis-server too.
log "launchers (pytest-redis, npm redis-server, redis-memory-server, Testcontainers) and TLS material"
TUMBLER_BINARY=target/release/tumbler timeout 900 bash scripts/ci/launchers.sh
log "Java: the tumbler-junit artifact and the example project that depends on it"
TUMBLER_BINARY=$static_bin timeout 900 bash scripts/ci/java-artifact.sh
log "Java: Redisson 3.x and 4.x, Jedis, Lettuce, Spring Data Redis against tumbler and redis-server"
TUMBLER_BINARY=target/release/tumbler timeout 1500 bash scripts/ci/java-compat.sh
log "Go: the tumbler.dev/tumbler module, its example module, and the miniredis comparison"
TUMBLER_BINARY=target/release/tumbler timeout 900 bash scripts/ci/go.sh
# ---- end launchers, Java and Go

# ---- Redis' and Valkey's own Tcl units (scripts/redis-tcl-suite.sh, docs/redis-tcl-suite.md):
# each suite against tumbler in the personality of its release, with a ratchet of pass counts
# per unit (tests/tcl/*.baseline; the reference servers' own counts are in their headers).
# tcl_external SUITE PERSONALITY BASELINE: the baseline's two-column lines, in external mode
# against one tumbler. tcl_spawn SUITE PERSONALITY BASELINE FILTER [ARGS]: the lines FILTER
# (awk) picks, the suite starting tumbler itself as src/redis-server.
tcl_external() {
  local suite=$1 personality=$2 baseline=$3 out pid port units
  out=$(mktemp)
  ./target/release/tumbler --port 0 --loglevel warning --personality "$personality" >"$out" 2>&1 &
  pid=$!
  trap "kill $pid 2>/dev/null || true" EXIT
  for _ in $(seq 100); do grep -q 'port=' "$out" && break; sleep 0.05; done
  port=$(grep -o 'port=[0-9]*' "$out" | head -1 | cut -d= -f2)
  units=$(grep -v '^#' "$baseline" | awk 'NF == 2 {print $1}' | tr '\n' ' ')
  timeout 900 bash scripts/redis-tcl-suite.sh --suite "$suite" --port "$port" --units "$units" \
    --unit-timeout 300 --baseline "$baseline" --logdir "target/tcl-logs/$suite"
  kill $pid 2>/dev/null || true
}
tcl_spawn() {
  local suite=$1 personality=$2 baseline=$3 filter=$4 units
  shift 4
  units=$(grep -v '^#' "$baseline" | awk "$filter {print \$1}" | tr '\n' ' ')
  timeout 600 bash scripts/redis-tcl-suite.sh --suite "$suite" --spawn target/release/tumbler \
    --server-args "--personality $personality" --units "$units" --unit-timeout 300 \
    --baseline "$baseline" --logdir "target/tcl-spawn-logs/$suite" "$@"
}

log "Redis 7.0 Tcl units against tumbler as redis-7.0 (ratchet: tests/tcl/tumbler.baseline)"
tcl_external redis-7.0 redis-7.0 tests/tcl/tumbler.baseline
# Spawn mode (ACL, auth, dump, maxmemory, tracking): the suite starts its own servers from its
# config files. About 35 s (unit/dump waits 15 s for MIGRATE's connection cache to expire).
log "Redis 7.0 Tcl units in spawn mode (ratchet: tests/tcl/tumbler-spawn.baseline)"
tcl_spawn redis-7.0 redis-7.0 tests/tcl/tumbler-spawn.baseline 'NF == 2'
# unit/info and unit/latency-monitor (lines marked `tags:-slow`): tagged needs:debug and
# needs:latency; the spawned servers enable DEBUG, so they run with Redis CI's own tags.
# About 30 s (LATENCY's tests sleep).
tcl_spawn redis-7.0 redis-7.0 tests/tcl/tumbler-spawn.baseline '$3 == "tags:-slow"' --tags "-slow"
# Redis 8.0.2's units as redis-8.0; unit/type/hash-field-expire (marked `spawn`) needs DEBUG
# and no replication. Valkey 9.1.2's as valkey-9.1. About 40 s together.
log "Redis 8.0 Tcl units against tumbler as redis-8.0 (ratchet: tests/tcl/tumbler-redis-8.0.baseline)"
tcl_external redis-8.0 redis-8.0 tests/tcl/tumbler-redis-8.0.baseline
tcl_spawn redis-8.0 redis-8.0 tests/tcl/tumbler-redis-8.0.baseline '$3 == "spawn"' --tags "-slow -needs:repl"
log "Valkey 9 Tcl units against tumbler as valkey-9.1 (ratchet: tests/tcl/tumbler-valkey-9.baseline)"
tcl_external valkey-9 valkey-9.1 tests/tcl/tumbler-valkey-9.baseline
# ---- end Tcl units
