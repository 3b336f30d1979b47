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
mkdir "$work/tests" "$work/xdist" "$work/failing" "$work/personality"
cp "$here/example-tests/"test_*.py "$work/tests/"
cp "$here/example-tests/xdist/"*.py "$work/xdist/"
cp "$here/example-tests/failing/"*.py "$work/failing/"
cp "$here/example-tests/personality/"*.py "$work/personality/"
# A user's machine: only the venv and the system on PATH (no ~/.cargo/bin), no PYTHONPATH,
# and no TUMBLER_BINARY: the tests must find the wheel's own binary.
user() {
  env -i HOME="$work" PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin" "$@"
}
user sh -c 'if command -v cargo >/dev/null; then echo "cargo is on PATH" >&2; exit 1; fi'
(cd "$work/tests" && user python -m pytest -q -p no:cacheprovider)
# The session's server as another release (--tumbler-personality).
(cd "$work/personality" && user python -m pytest -q -p no:cacheprovider --tumbler-personality valkey-9.1)

# Two pytest-xdist workers on one server, each in its own database: the suite checks the
# isolation and the restores; each worker records the server it used.
records=$work/xdist-records
(cd "$work/xdist" && user TUMBLER_XDIST_RECORDS="$records" python -m pytest -q -p no:cacheprovider -n 2)
"$work/venv/bin/python" - "$records" <<'PY'
import json, os, sys
from pathlib import Path
recs = sorted((json.loads(p.read_text()) for p in Path(sys.argv[1]).glob("gw*.json")),
              key=lambda r: r["worker"])
assert [r["worker"] for r in recs] == ["gw0", "gw1"], recs
assert recs[0]["db"] != recs[1]["db"], recs
assert len({(r["run_id"], r["process_id"], r["port"]) for r in recs}) == 1, recs
pid = recs[0]["process_id"]
try:
    os.kill(pid, 0)
    sys.exit(f"the shared server (pid {pid}) outlived the run")
except ProcessLookupError:
    pass
print(f"xdist: gw0 and gw1 shared server pid {pid} (databases {recs[0]['db']} and {recs[1]['db']})")
PY

# A test that fails on purpose, with --tumbler-artifacts: pytest must fail, and leave that
# test's state (and only that test's) behind.
artifacts=$work/artifacts
set +e
(cd "$work/failing" && user python -m pytest -q -p no:cacheprovider --tumbler-artifacts "$artifacts") \
  >"$work/failing.log" 2>&1
rc=$?
set -e
if [ "$rc" -ne 1 ] || ! grep -q "1 failed, 1 passed" "$work/failing.log"; then
  cat "$work/failing.log"
  echo "expected-failure run: want exit 1 and '1 failed, 1 passed', got exit $rc" >&2
  exit 1
fi
grep -q "tumbler artifacts" "$work/failing.log" || { cat "$work/failing.log"; echo "the report does not name the artifacts" >&2; exit 1; }
bash "$here/../check-artifacts.sh" "$artifacts" test_expected_failure.py_test_shipment_is_delivered \
  shipment:42 lock:shipment:42 order:42:status -- shipment:42 order:42:status
