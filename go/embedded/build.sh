#!/usr/bin/env bash
# Puts the tumbler binary into go/embedded/bin/ for //go:embed: the argument, else
# $TUMBLER_BINARY, else the static binary that packaging/static-bin.sh builds or finds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${TUMBLER_BINARY:-}}
if [ -z "$src" ]; then src=$(bash "$here/../../packaging/static-bin.sh"); fi
install -m 0755 "$src" "$here/bin/tumbler"
echo "$here/bin/tumbler"
