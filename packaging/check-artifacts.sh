#!/usr/bin/env bash
# Checks what a failed test left with the packages' failure artifacts (packaging/*/ci.sh):
# DIR holds exactly NAME.txt and NAME.rdb, the .txt names every KEY, and the .rdb is an RDB
# file (starts with REDIS) that redis-check-rdb accepts and that holds every RDB_KEY (keys
# of data types; a native lock has no RDB form, so it is named in the .txt only).
#
#   bash packaging/check-artifacts.sh DIR NAME KEY... [-- RDB_KEY...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/ci/lib.sh
. "$here/../scripts/ci/lib.sh"
dir=$1 name=$2
shift 2
keys=() rdb_keys=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do keys+=("$1"); shift; done
[ $# -gt 0 ] && shift
rdb_keys=("$@")
fail() { echo "check-artifacts: $*" >&2; exit 1; }

want=$(printf '%s\n' "$name.rdb" "$name.txt")
got=$(ls -1 "$dir" 2>/dev/null | sort || true)
[ "$got" = "$want" ] || fail "$dir should hold exactly $name.rdb and $name.txt, it holds: ${got:-nothing}"
for key in "${keys[@]}"; do
  grep -qF -- "$key" "$dir/$name.txt" || fail "$name.txt does not name $key:$(echo; head -c 2000 "$dir/$name.txt")"
done
[ "$(head -c 5 "$dir/$name.rdb")" = REDIS ] || fail "$name.rdb does not start with REDIS"
for key in "${rdb_keys[@]}"; do
  grep -qaF -- "$key" "$dir/$name.rdb" || fail "$name.rdb does not hold $key"
done
if command -v redis-check-rdb >/dev/null; then
  out=$(redis-check-rdb "$dir/$name.rdb" 2>&1) || fail "redis-check-rdb refuses $name.rdb: $out"
  case "$out" in *"RDB looks OK"*) ;; *) fail "redis-check-rdb: $out" ;; esac
else
  missing redis-check-rdb
fi
echo "artifacts of $name: $(stat -c %s "$dir/$name.txt") bytes of state, $(stat -c %s "$dir/$name.rdb") bytes of RDB"
