#!/usr/bin/env bash
# Builds the tumbler-server wheel around an already-built binary and runs the example suite
# against the installed wheel, as a user would: a fresh venv, no cargo on PATH, no
# repository source on sys.path (the tests run from a copy in a temporary directory).
#
#   TUMBLER_BINARY=path/to/static/tumbler bash packaging/python/ci.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wheel=$(bash "$here/build-wheel.sh" "$work/dist")
echo "wheel: $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel" \
  -r "$here/example-tests/requirements.txt"
mkdir "$work/tests"
cp "$here/example-tests/"test_*.py "$work/tests/"
cd "$work/tests"
# A user's machine: only the venv and the system on PATH (no ~/.cargo/bin), no PYTHONPATH,
# and no TUMBLER_BINARY: the tests must find the wheel's own binary.
env -i HOME="$work" PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin" sh -c '
  if command -v cargo >/dev/null; then echo "cargo is on PATH" >&2; exit 1; fi
  exec python -m pytest -q -p no:cacheprovider
'
