"""Tumbler, a Redis-compatible server with native locks, started from Python tests.

    with tumbler.Server(time_control=True) as srv:
        r = srv.client()
        srv.advance(30_001)

The server is the static binary shipped in this wheel (``tumbler/bin/tumbler``), or the
one named by ``$TUMBLER_BINARY`` or ``Server(binary=...)``. It listens on loopback on a
free port; ``srv.url`` and ``srv.port`` say where.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

__all__ = ["LockOrderError", "Server", "TumblerError", "binary_path"]
__version__ = "0.1.0"

_HOW_TO_FIX = (
    "Reinstall the wheel for this platform (pip install --force-reinstall tumbler-server), "
    "or point TUMBLER_BINARY (or Server(binary=...)) at a tumbler executable, e.g. one built "
    "with `cargo build --release -p tumbler` (target/release/tumbler)."
)


class TumblerError(RuntimeError):
    """The server could not be found, started or controlled."""


class LockOrderError(AssertionError):
    """The lock-order checker found lock order inversions or deadlocks (docs/lockdep.md).
    ``report`` is the whole ``TUMBLER.LOCKDEP REPORT`` document."""

    def __init__(self, message: str, report: dict) -> None:
        super().__init__(message)
        self.report = report


def _describe_findings(report: dict) -> str:
    lines = []
    for kind in ("inversions", "deadlocks"):
        for f in report.get(kind, []):
            cycle = " -> ".join(f["cycle"] + f["cycle"][:1])
            lines.append(f"{kind[:-1]}: {cycle}")
            for e in f["edges"]:
                held = e.get("held", e.get("holds"))
                lines.append(
                    f"    {e['owner']} held {held} and took {e['lock']}"
                    f" at {e['time']} ({e['command']})"
                )
    return "\n".join(lines)


def binary_path(binary: Optional[str] = None) -> str:
    """The tumbler executable to run: ``binary``, else ``$TUMBLER_BINARY``, else the one
    shipped in this package. Raises :class:`TumblerError` if it is missing or not
    executable."""
    path = binary or os.environ.get("TUMBLER_BINARY") or str(
        Path(__file__).resolve().parent / "bin" / "tumbler"
    )
    if not os.path.isfile(path):
        raise TumblerError(f"tumbler binary not found at {path}. {_HOW_TO_FIX}")
    if not os.access(path, os.X_OK):
        raise TumblerError(f"tumbler binary at {path} is not executable. {_HOW_TO_FIX}")
    return path


class Server:
    """A tumbler server process, stopped on :meth:`stop` or at the end of a ``with``.

    ``time_control`` enables ``advance()``, ``freeze()`` and ``resume()`` (the server's
    ``--enable-time-control yes``). ``lockdep`` (``"yes"`` or ``"strict"``) turns the
    lock-order checker on (docs/lockdep.md). ``args`` are passed to the server as they are (any
    redis.conf directive as ``--name value``), e.g. ``["--requirepass", "s3cret"]``.
    """

    def __init__(
        self,
        *,
        time_control: bool = False,
        args: Sequence[str] | str = (),
        binary: Optional[str] = None,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 10.0,
        lockdep: Optional[str] = None,
    ) -> None:
        self.time_control = time_control
        self.lockdep = lockdep
        self.args = shlex.split(args) if isinstance(args, str) else list(args)
        self.binary = binary
        self.host = host
        self._want_port = port
        self.startup_timeout = startup_timeout
        self.port: int = 0
        self.metrics_port: Optional[int] = None
        self._proc: Optional[subprocess.Popen] = None
        self._log = None
        self._admin = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "Server":
        if self._proc is not None:
            return self
        exe = binary_path(self.binary)
        cmd = [exe, "--port", str(self._want_port), "--bind", self.host]
        if self.time_control:
            cmd += ["--enable-time-control", "yes"]
        if self.lockdep:
            cmd += ["--lockdep", self.lockdep]
        # The server exits when this pipe closes, so it dies with this process even when
        # the process is killed (nothing is ever written to it).
        cmd += ["--watch-stdin", "yes"]
        cmd += self.args
        self._log = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.PIPE
            )
        except OSError as e:
            raise TumblerError(f"cannot run {exe}: {e}. {_HOW_TO_FIX}") from e
        self._proc = proc
        lines: list = []
        done = threading.Event()

        def read_stdout() -> None:
            # Reads the startup lines, then keeps draining so the pipe never fills.
            assert proc.stdout is not None
            for raw in proc.stdout:
                lines.append(raw.decode("utf-8", "replace"))
                if "tumbler listening on" in lines[-1]:
                    # The metrics line, if any, comes right after; give it a moment.
                    done.set()
            done.set()

        threading.Thread(target=read_stdout, daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while not done.wait(0.01):
            if time.monotonic() > deadline:
                self.stop()
                raise TumblerError(
                    f"{exe} did not report its port within {self.startup_timeout}s; "
                    f"log: {self._read_log()}"
                )
        port_line = next((l for l in lines if "tumbler listening on" in l), None)
        if port_line is None:
            code = proc.wait(5)
            # The server logs to stdout, as redis-server does; stderr has the rest.
            log = "".join(lines) + self._read_log()
            self._proc = None
            raise TumblerError(
                f"{exe} exited with status {code} before listening"
                f" (command: {shlex.join(cmd)}); log: {log}. "
                + ("" if "tumbler" in log else _HOW_TO_FIX)
            )
        self.port = int(port_line.rsplit("port=", 1)[1].split()[0])
        if any("--metrics-port" == a for a in self.args) or os.environ.get(
            "TUMBLER_METRICS_PORT"
        ):
            end = time.monotonic() + 2
            while time.monotonic() < end and not any("metrics-port=" in l for l in lines):
                time.sleep(0.005)
            m = next((l for l in lines if "metrics-port=" in l), None)
            if m:
                self.metrics_port = int(m.rsplit("metrics-port=", 1)[1].split()[0])
        return self

    def stop(self) -> None:
        """Stops the server (SIGTERM, then SIGKILL after 5 s)."""
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # noqa: BLE001 - the server may be gone already
                pass
            self._admin = None
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _read_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace").strip()[-2000:]

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------------ clients

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``, for any Redis client."""
        return f"redis://{self.host}:{self.port}/0"

    def client(self, **kwargs: Any):
        """A new ``redis.Redis`` (redis-py) connected to this server; ``kwargs`` go to it
        (``decode_responses=True``, ``protocol=3``, ...)."""
        import redis

        if not self.running:
            raise TumblerError("the server is not running; use it inside `with Server(...)`")
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def _command(self, *args: Any) -> Any:
        if self._admin is None:
            self._admin = self.client()
        return self._admin.execute_command(*args)

    def _time(self, *args: Any) -> Any:
        if not self.time_control:
            raise TumblerError(
                "time control is off: start the server with Server(time_control=True)"
            )
        return self._command("TUMBLER.TIME", *args)

    # ------------------------------------------------------------------ time control

    def advance(self, ms: int) -> int:
        """Moves the server clock forward by ``ms`` milliseconds: TTLs, lock leases and
        blocking timeouts that fall due fire at once. Returns the new server time (Unix ms)."""
        return int(self._time("ADVANCE", int(ms)))

    def freeze(self) -> None:
        """Stops the server clock: TTLs and timeouts stop counting down."""
        self._time("FREEZE")

    def resume(self) -> None:
        """Lets a frozen clock run again from where it stopped."""
        self._time("RESUME")

    def now(self) -> int:
        """The server clock, in Unix milliseconds."""
        return int(self._time("NOW"))

    # ------------------------------------------------------------------ lock-order checker

    def lockdep_report(self) -> dict:
        """The lock-order checker's findings: ``{"mode", "inversions", "deadlocks"}``."""
        raw = self._command("TUMBLER.LOCKDEP", "REPORT")
        return json.loads(raw.decode() if isinstance(raw, bytes) else raw)

    def lockdep_reset(self) -> None:
        """Forgets the checker's order graph and findings."""
        self._command("TUMBLER.LOCKDEP", "RESET")

    def assert_no_lock_inversions(self) -> None:
        """Raises :class:`LockOrderError` (an ``AssertionError``) naming every lock order
        inversion and deadlock the checker found; the server must run with ``lockdep``."""
        report = self.lockdep_report()
        if report.get("mode") == "no":
            raise TumblerError("lockdep is off: start the server with Server(lockdep='yes')")
        if report["inversions"] or report["deadlocks"]:
            raise LockOrderError(
                "the lock-order checker found:\n" + _describe_findings(report), report
            )

    def flushall(self) -> None:
        self._command("FLUSHALL")

    def reset(self) -> None:
        """A clean server for the next test: FLUSHALL and, with time control, a running
        clock (time only moves forward, so an earlier ADVANCE stays)."""
        self.flushall()
        if self.time_control:
            self.resume()

