# Sourced by scripts/test.sh and scripts/ci/*.sh: the one rule for a missing tool
# (docs/testing.md). Whatever a suite needs and does not find (redis-server, java, mvn, go,
# the server binary...) fails the run, under CI or not, unless TUMBLER_SKIP_MISSING=1, which
# skips what needs it instead. The Rust tests (tests/src/tools.rs), the launcher tests
# (tests/launchers/python/conftest.py) and the Go and Java suites follow the same rule.

# True when TUMBLER_SKIP_MISSING=1.
skip_missing() {
  [ "${TUMBLER_SKIP_MISSING:-}" = 1 ]
}

# missing WHAT...: WHAT is not installed. Exits 1; under TUMBLER_SKIP_MISSING=1 says so and
# returns instead, and the caller goes on without it.
missing() {
  echo "${0##*/}: missing: $*" >&2
  if skip_missing; then
    echo "${0##*/}: going on without it (TUMBLER_SKIP_MISSING=1)" >&2
    return 0
  fi
  _missing_fails
}

# skip_or_fail WHAT...: this suite cannot run without WHAT. Exits 1; under
# TUMBLER_SKIP_MISSING=1 exits 0 (the suite skipped).
skip_or_fail() {
  echo "${0##*/}: missing: $*" >&2
  if skip_missing; then
    echo "${0##*/}: skipped (TUMBLER_SKIP_MISSING=1)" >&2
    exit 0
  fi
  _missing_fails
}

_missing_fails() {
  echo "${0##*/}: install it, or set TUMBLER_SKIP_MISSING=1 to skip what needs it" >&2
  exit 1
}
