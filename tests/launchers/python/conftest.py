"""Shared set-up for the launcher and TLS tests (scripts/ci/launchers.sh runs them).

Every scenario runs against each server in SERVERS: the real redis-server (the control) and
the tumbler binary under test, with the same assertions, so a check that passes against
redis-server and fails against tumbler names a difference between the two.

Environment:
  TUMBLER_BINARY    the tumbler binary (required; scripts/ci/launchers.sh sets it)
  REDIS_SERVER      the reference redis-server (default: the one on PATH)
  LAUNCHER_SERVERS  comma-separated subset of "redis-server,tumbler" (default: both)
  LAUNCHER_NODE_DIR node_modules root with the Node launchers (scripts/ci/launchers.sh sets it)
  TUMBLER_SKIP_MISSING=1  a test whose tool (node, java, openssl...) is missing skips instead
                    of failing (docs/testing.md); the servers themselves are always required
"""

import os
import shutil
import socket
import subprocess
import time

import pytest

SKIP_MISSING = os.environ.get("TUMBLER_SKIP_MISSING") == "1"


def missing(what):
    """A tool the test needs is missing: the test fails, or skips under TUMBLER_SKIP_MISSING=1
    (the one rule of tests/src/tools.rs and scripts/ci/lib.sh)."""
    if SKIP_MISSING:
        pytest.skip(f"{what} missing (TUMBLER_SKIP_MISSING=1)")
    pytest.fail(f"{what} missing (TUMBLER_SKIP_MISSING=1 skips instead)")


def _require(path, what):
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return os.path.abspath(path)
    # Every scenario compares the two servers: without either the whole run fails.
    pytest.exit(f"{what} not found ({path!r})", returncode=1)


def server_paths():
    selected = os.environ.get("LAUNCHER_SERVERS", "redis-server,tumbler").split(",")
    paths = {}
    if "redis-server" in selected:
        paths["redis-server"] = _require(
            os.environ.get("REDIS_SERVER") or shutil.which("redis-server"), "redis-server"
        )
    if "tumbler" in selected:
        paths["tumbler"] = _require(os.environ.get("TUMBLER_BINARY"), "tumbler (TUMBLER_BINARY)")
    return paths


SERVERS = server_paths()
SERVER_NAMES = list(SERVERS)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def pid_alive(pid):
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_until(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Started:
    """A server process this test started itself; stopped by its own PID only."""

    def __init__(self, name, args, cwd=None):
        self.name = name
        self.args = args
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd
        )

    def stop(self, sig=15, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"{self.name} did not exit within {timeout}s of signal {sig}")
        self.stdout, self.stderr = out.decode(errors="replace"), err.decode(errors="replace")
        assert not pid_alive(self.proc.pid), f"{self.name} pid {self.proc.pid} left behind"
        return self.proc.returncode


def start_server(name, *args, ready_port=None, cwd=None):
    """Start SERVERS[name] with redis-server style arguments and wait for its port."""
    server = Started(name, [SERVERS[name], *args], cwd=cwd)
    if ready_port is not None:
        def up():
            if server.proc.poll() is not None:
                out, err = server.proc.communicate()
                raise AssertionError(
                    f"{name} exited with {server.proc.returncode} before listening:\n"
                    f"stdout: {out.decode(errors='replace')}\nstderr: {err.decode(errors='replace')}"
                )
            return port_open(ready_port)
        wait_until(up, what=f"{name} on port {ready_port}")
    return server


@pytest.fixture
def started():
    """Servers a test starts. Tests stop them themselves and assert how they exit; any still
    running when a test ends (it failed half-way) are killed here, by PID."""
    servers = []
    yield servers
    for s in servers:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.communicate()
