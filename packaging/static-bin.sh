#!/usr/bin/env bash
# Prints the path of the static tumbler binary the packages carry, building it with
# scripts/static-build.sh (a no-op when it is up to date) unless TUMBLER_BINARY names one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${TUMBLER_BINARY:-}" ]; then
  realpath "$TUMBLER_BINARY"
  exit 0
fi
line=$(bash "$root/scripts/static-build.sh" | grep '^static binary: ')
bin=${line#static binary: }
echo "$root/${bin%% *}"
