#!/usr/bin/env bash
# Builds the static tumbler binary that the Dockerfile ships (FROM scratch) and checks it:
# statically linked, runs, answers PING, reasonable size. CI has no Docker engine, so this
# is the image check: the image is this one file (plus nothing).
#
#   bash scripts/static-build.sh        # prints the binary path and its size
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  rustup target add "$target" >/dev/null 2>&1 || true
fi
if ! command -v musl-gcc >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq musl-tools >/dev/null 2>&1 || true
fi

export CARGO_PROFILE_RELEASE_STRIP=true
if rustup target list --installed 2>/dev/null | grep -qx "$target" && command -v musl-gcc >/dev/null 2>&1; then
  cargo build --release --locked -q -p tumbler --bin tumbler --target "$target"
  bin=target/$target/release/tumbler
else
  # No musl toolchain: glibc with a static C runtime (what the Dockerfile would need to
  # fall back to). Same checks.
  echo "musl target unavailable; building a glibc static binary instead" >&2
  target=x86_64-unknown-linux-gnu
  RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked -q -p tumbler --bin tumbler --target "$target"
  bin=target/$target/release/tumbler
fi

# 1. No dynamic dependencies: ldd says so, and there is no ELF interpreter.
ldd_out=$(ldd "$bin" 2>&1 || true)
case "$ldd_out" in
  *"statically linked"*|*"not a dynamic executable"*) ;;
  *) echo "FAIL: $bin is dynamically linked:"; echo "$ldd_out"; exit 1 ;;
esac
if command -v readelf >/dev/null 2>&1 && readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
  echo "FAIL: $bin has an ELF interpreter"; exit 1
fi

# 2. It runs from an empty environment (as in FROM scratch) and answers PING.
"$bin" --version >/dev/null
out=$(mktemp)
env -i "$bin" --port 0 >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q 'port=' "$out" && break; sleep 0.05; done
port=$(grep -o 'port=[0-9]*' "$out" | head -1 | cut -d= -f2)
env -i "$bin" --healthcheck --port "$port" || { echo "FAIL: healthcheck"; cat "$out"; exit 1; }
kill $pid

# 3. Size: the image is this file. Fail if it balloons (debug info, a fat dependency).
size=$(stat -c %s "$bin")
echo "static binary: $bin ($target), $size bytes ($((size / 1024)) KiB)"
limit=$((12 * 1024 * 1024))
[ "$size" -lt "$limit" ] || { echo "FAIL: binary larger than $limit bytes"; exit 1; }
