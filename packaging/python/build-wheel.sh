#!/usr/bin/env bash
# Builds dist/tumbler_server-*.whl around the static binary (packaging/static-bin.sh; set
# TUMBLER_BINARY to use another). Needs python3 with venv; hatchling comes from PyPI.
#
#   bash packaging/python/build-wheel.sh [outdir]      # default: dist/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-dist}")
bin=$(bash "$here/../static-bin.sh")
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
TUMBLER_BINARY="$bin" "$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$out" "$here"
ls "$out"/tumbler_server-*.whl
