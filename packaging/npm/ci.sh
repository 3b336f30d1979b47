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
cp "$here/example-tests/"* .
./node_modules/.bin/tsc --noEmit --strict --skipLibCheck --module nodenext --moduleResolution nodenext types.ts
env -i HOME="$work" PATH="/usr/local/bin:/usr/bin:/bin" node --test
