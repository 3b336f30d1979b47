#!/usr/bin/env bash
# Checks what a failed test left with the packages' failure artifacts (packaging/*/ci.sh):
# DIR holds exactly NAME.txt and NAME.rdb, the .txt names every KEY, and the .rdb is an RDB
# file (starts with REDIS) that redis-check-rdb accepts.
#
#   bash packaging/check-artifacts.sh DIR NAME KEY...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/ci/lib.sh
. "$here/../scripts/ci/lib.sh"
dir=$1 name=$2
shift 2
fail() { echo "check-artifacts: $*" >&2; exit 1; }

want=$(printf '%s\n' "$name.rdb" "$name.txt")
got=$(ls -1 "$dir" 2>/dev/null | sort || true)
[ "$got" = "$want" ] || fail "$dir should hold exactly $name.rdb and $name.txt, it holds: ${got:-nothing}"
for key in "$@"; do
  grep -qF -- "$key" "$dir/$name.txt" || fail "$name.txt does not name $key:$(echo; head -c 2000 "$dir/$name.txt")"
done
[ "$(head -c 5 "$dir/$name.rdb")" = REDIS ] || fail "$name.rdb does not start with REDIS"
if command -v redis-check-rdb >/dev/null; then
  out=$(redis-check-rdb "$dir/$name.rdb" 2>&1) || fail "redis-check-rdb refuses $name.rdb: $out"
  case "$out" in *"RDB looks OK"*) ;; *) fail "redis-check-rdb: $out" ;; esac
else
  missing redis-check-rdb
fi
echo "artifacts of $name: $(stat -c %s "$dir/$name.txt") bytes of state, $(stat -c %s "$dir/$name.rdb") bytes of RDB"
