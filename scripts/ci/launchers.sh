#!/usr/bin/env bash
# The tools that start redis-server for users, unchanged from their registries, start
# the tumbler binary as they start redis-server, and TLS material made as users make it; every
# scenario runs against redis-server too, in the same run, with the same assertions.
#   pytest-redis (redis_proc, redis_noproc, --redis-exec / redis_exec), npm redis-server,
#   redis-memory-server (REDISMS_SYSTEM_BINARY), Testcontainers' Redis wait strategies,
#   the TLS matrix (openssl CLI, Redis' utils/gen-test-certs.sh; redis-cli, redis-py, ioredis).
# Usage: [TUMBLER_BINARY=path] bash scripts/ci/launchers.sh [pytest args...]
# Installs pinned packages into target/launchers (reinstalled only when the pins change).
# Anything missing fails the run (TUMBLER_SKIP_MISSING=1 skips the tests whose tool is
# missing: scripts/ci/lib.sh, tests/launchers/python/conftest.py). Exits non-zero on any
# failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
. scripts/ci/lib.sh
log() { printf '\n==> %s\n' "$*"; }
die() { echo "launchers.sh: $*" >&2; exit 1; }

bin=${TUMBLER_BINARY:-target/release/tumbler}
[ -x "$bin" ] || die "tumbler binary not found at $bin (build: cargo build --release -p tumbler --bin tumbler)"
bin=$(readlink -f "$bin")
work=$root/target/launchers
mkdir -p "$work"

need_pkgs=()
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_pkgs+=(redis-tools)
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3 python3-venv)
command -v npm >/dev/null 2>&1 || need_pkgs+=(nodejs npm)
command -v java >/dev/null 2>&1 || need_pkgs+=(default-jre-headless)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "missing: ${need_pkgs[*]}"
  log "installing ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO timeout 300 apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO timeout 600 apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# Redis' utils/gen-test-certs.sh, from Debian's redis source package (the Tcl-suite script
# fetches and caches it), run unchanged in the background while the packages install.
log "Redis source (utils/gen-test-certs.sh)"
src=$(TUMBLER_CACHE=$work/cache timeout 300 bash scripts/redis-tcl-suite.sh --fetch-only)
gen=$src/utils/gen-test-certs.sh
[ -f "$gen" ] || die "no utils/gen-test-certs.sh in $src"
rm -rf "$work/gen-test-certs"; mkdir -p "$work/gen-test-certs"
(cd "$work/gen-test-certs" && timeout 300 bash "$gen") >"$work/gen-test-certs.log" 2>&1 &
gen_pid=$!

req=tests/launchers/python/requirements.txt
if ! cmp -s "$req" "$work/venv/requirements.txt"; then
  log "installing pytest-redis, redis-py, testcontainers into $work/venv"
  rm -rf "$work/venv"
  timeout 120 python3 -m venv "$work/venv"
  timeout 300 "$work/venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$work/venv/requirements.txt"
fi
pkg=tests/launchers/node/package.json
lock=tests/launchers/node/package-lock.json
if ! cat "$pkg" "$lock" | cmp -s - "$work/node/installed-package.json"; then
  log "installing redis-server, redis-memory-server, @testcontainers/redis, ioredis into $work/node"
  rm -rf "$work/node"; mkdir -p "$work/node"
  cp "$pkg" "$lock" "$work/node/"
  # REDISMS_DISABLE_POSTINSTALL: redis-memory-server would otherwise download and build Redis.
  (cd "$work/node" && REDISMS_DISABLE_POSTINSTALL=1 timeout 300 npm install --no-audit --no-fund --loglevel=error)
  cat "$pkg" "$lock" > "$work/node/installed-package.json"
fi

wait "$gen_pid" || { cat "$work/gen-test-certs.log" >&2; die "utils/gen-test-certs.sh failed"; }

# Every process of this run carries LAUNCHERS_RUN in its environment (children inherit it, as
# the launchers pass the environment on); any still alive after the run was left behind by a
# launcher: reported, then stopped by its PID. Processes of anyone else on the machine are
# never looked at by name or binary, only by this mark.
run_mark="launchers-$$-$(date +%s%N)"
ours_running() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    tr '\0' '\n' 2>/dev/null < "$p/environ" | grep -qx "LAUNCHERS_RUN=$run_mark" && echo "${p#/proc/}"
  done
  return 0
}

log "launcher and TLS tests against redis-server and $bin ($("$bin" --version | head -1))"
set +e
(cd tests/launchers/python && export LAUNCHERS_RUN=$run_mark && TUMBLER_BINARY=$bin LAUNCHER_NODE_DIR=$work/node \
  REDIS_GEN_TEST_CERTS=$gen REDIS_GEN_TEST_CERTS_OUT=$work/gen-test-certs \
  timeout 1200 "$work/venv/bin/python" -m pytest -p no:cacheprovider -q -rfE "$@")
rc=$?
set -e

# com.github.codemonstur:embedded-redis from Maven Central, unchanged, its builder pointed at each
# binary (tests/launchers/java/embedded-redis); its servers carry the mark too.
log "embedded-redis (Java) against redis-server and $bin"
if command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
  (export LAUNCHERS_RUN=$run_mark && TUMBLER_BINARY=$bin \
    timeout 600 mvn -B -ntp -q -f tests/launchers/java/embedded-redis/pom.xml test) || rc=1
elif skip_missing; then
  echo "embedded-redis: skipped (no mvn or javac; TUMBLER_SKIP_MISSING=1)"
else
  echo "launchers.sh: mvn and a JDK are needed for the embedded-redis step" >&2; rc=1
fi

left=$(ours_running)
if [ -n "$left" ]; then
  echo "launchers.sh: server processes left behind: $left" >&2
  for p in $left; do ps -o pid,args -p "$p" >&2 || true; kill "$p" 2>/dev/null || true; done
  rc=1
fi
exit $rc
