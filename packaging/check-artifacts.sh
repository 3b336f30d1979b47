#!/usr/bin/env bash
# Checks what a failed test left with the packages' failure artifacts (packaging/*/ci.sh):
# DIR holds exactly NAME.txt and NAME.rdb, the .txt names every KEY, and the .rdb is an RDB
# file (starts with REDIS) that redis-check-rdb accepts and that holds every RDB_KEY (keys
# of data types; a native lock has no RDB form, so it is named in the .txt only). The
# file's version is the personality's (11 for the default redis-7.2): redis-check-rdb 7.0
# reads up to 10, so a newer file goes to Redis 8.0's checker, found beside the
# redis8-server that scripts/test.sh installs (its wrapper runs it through its own loader).
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
version=$(head -c 9 "$dir/$name.rdb" | tail -c 4)
checker=()
if [ "$version" -le 10 ] && command -v redis-check-rdb >/dev/null; then
  checker=(redis-check-rdb)
elif [ "$version" -gt 10 ] && wrapper=$(command -v redis8-server); then
  # The wrapper's last line: exec LOADER --library-path DIR .../redis-server "$@".
  read -r -a words <<<"$(grep '^exec ' "$wrapper" | sed 's/^exec //; s/ "\$@"$//')"
  words[-1]=${words[-1]/%-server/-check-rdb}
  checker=("${words[@]}")
fi
if [ ${#checker[@]} -gt 0 ]; then
  out=$("${checker[@]}" "$dir/$name.rdb" 2>&1) || fail "${checker[-1]} refuses $name.rdb: $out"
  case "$out" in *"RDB looks OK"*) ;; *) fail "${checker[-1]}: $out" ;; esac
else
  missing "a redis-check-rdb for RDB version $version"
fi
echo "artifacts of $name: $(stat -c %s "$dir/$name.txt") bytes of state, $(stat -c %s "$dir/$name.rdb") bytes of RDB"
