#!/usr/bin/env bash
# Packs the tumbler-server npm package around an already-built binary (`npm pack`), installs
# the tarball into a fresh project with the lock libraries tests/clients/node pins, checks
# the TypeScript declarations and runs the example suite with node's test runner.
#
#   TUMBLER_BINARY=path/to/static/tumbler bash packaging/npm/ci.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tgz=$(bash "$here/pack.sh" "$work/dist")
echo "package: $(basename "$tgz") ($(stat -c %s "$tgz") bytes)"
pins=$(node -e 'const d=require(process.argv[1]).dependencies; console.log(["ioredis","redlock"].map(n=>n+"@"+d[n]).join(" "))' \
  "$root/tests/clients/node/package.json")
mkdir -p "$work/app"
cd "$work/app"
echo '{ "name": "example-app", "private": true, "type": "module" }' > package.json
# shellcheck disable=SC2086
npm install --no-audit --no-fund --loglevel=error "$tgz" $pins typescript@5.6.3
cp "$here/example-tests/"*.mjs "$here/example-tests/"*.ts .
mkdir failing
cp "$here/example-tests/failing/"*.mjs failing/
./node_modules/.bin/tsc --noEmit --strict --skipLibCheck --module nodenext --moduleResolution nodenext types.ts
env -i HOME="$work" PATH="/usr/local/bin:/usr/bin:/bin" node --test

# A test that fails on purpose, with TUMBLER_ARTIFACTS: the run must fail, and leave that
# test's state (and only that test's) behind. (failing/ is outside node --test's default
# file patterns, so the run above does not see it.)
artifacts=$work/artifacts
set +e
env -i HOME="$work" PATH="/usr/local/bin:/usr/bin:/bin" TUMBLER_ARTIFACTS="$artifacts" \
  node --test --test-reporter=tap failing/expected-failure.mjs >"$work/failing.log" 2>&1
rc=$?
set -e
if [ "$rc" -eq 0 ] || ! grep -qx "# pass 1" "$work/failing.log" || ! grep -qx "# fail 1" "$work/failing.log"; then
  cat "$work/failing.log"
  echo "expected-failure run: want a failed run with 1 pass and 1 fail, got exit $rc" >&2
  exit 1
fi
bash "$here/../check-artifacts.sh" "$artifacts" shipment_is_delivered \
  shipment:42 lock:shipment:42 order:42:status -- shipment:42 order:42:status
