#!/usr/bin/env bash
# Packs dist/tumbler-server-*.tgz (`npm pack`) around the static binary
# (packaging/static-bin.sh; set TUMBLER_BINARY to use another).
#
#   bash packaging/npm/pack.sh [outdir]                # default: dist/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-dist}")
bin=$(bash "$here/../static-bin.sh")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$out"
cp "$here/package.json" "$here/index.js" "$here/index.d.ts" "$here/README.md" "$stage/"
cp "$bin" "$stage/bin/tumbler"
chmod 755 "$stage/bin/tumbler"
tgz=$(cd "$stage" && npm pack --silent --pack-destination "$out")
echo "$out/$tgz"
