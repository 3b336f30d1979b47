"""Tumbler, a Redis-compatible server with native locks, started from Python tests.

    with tumbler.Server(time_control=True) as srv:
        r = srv.client()
        srv.advance(30_001)

The server is the static binary shipped in this wheel (``tumbler/bin/tumbler``), or the
one named by ``$TUMBLER_BINARY`` or ``Server(binary=...)``. It listens on loopback on a
free port; ``srv.url`` and ``srv.port`` say where.

``srv.snapshot_save(name)`` and ``srv.snapshot_restore(name)`` keep and bring back the
contents of one database (``srv.db``); ``srv.write_artifacts(dir, name)`` writes the whole
server's state as ``name.rdb`` and ``name.txt``, for a test that failed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

__all__ = ["LockOrderError", "Server", "TumblerError", "artifact_name", "binary_path"]
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
    lock-order checker on (docs/lockdep.md). ``personality`` (``"redis-8.0"``,
    ``"valkey-9.1"``, ...) chooses the server release tumbler imitates (default
    ``redis-7.2``; docs/personalities.md). ``args`` are passed to the server as they are (any
    redis.conf directive as ``--name value``), e.g. ``["--requirepass", "s3cret"]``.

    ``db`` is the database :meth:`client`, :attr:`url`, the snapshot methods and
    :meth:`reset` use (default 0). :meth:`attach` gives a ``Server`` for a tumbler process
    started elsewhere (another pytest-xdist worker's): it is never stopped from here.
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
        db: int = 0,
        personality: Optional[str] = None,
    ) -> None:
        self.time_control = time_control
        self.db = db
        self.lockdep = lockdep
        self.personality = personality
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
        self._attached = False
        #: Set by the pytest plugin on the server its pytest-xdist workers share:
        #: :meth:`reset` then empties this worker's database only.
        self.shared = False

    @classmethod
    def attach(
        cls, host: str, port: int, *, db: int = 0, time_control: bool = False,
        lockdep: Optional[str] = None,
    ) -> "Server":
        """A ``Server`` for a tumbler already listening on ``host:port``, started by
        someone else; :meth:`stop` only closes this object's connection."""
        srv = cls(time_control=time_control, host=host, port=port, lockdep=lockdep, db=db)
        srv.port = port
        srv._attached = True
        return srv

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "Server":
        if self._proc is not None or self._attached:
            return self
        exe = binary_path(self.binary)
        cmd = [exe, "--port", str(self._want_port), "--bind", self.host]
        if self.time_control:
            cmd += ["--enable-time-control", "yes"]
        if self.lockdep:
            cmd += ["--lockdep", self.lockdep]
        if self.personality:
            cmd += ["--personality", self.personality]
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
        if self._attached:
            self._attached = False
            return
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
        return self._attached or (self._proc is not None and self._proc.poll() is None)

    @property
    def pid(self) -> Optional[int]:
        """The server's process id if this object started it, else None."""
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------------ clients

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/DB``, for any Redis client."""
        return f"redis://{self.host}:{self.port}/{self.db}"

    def client(self, **kwargs: Any):
        """A new ``redis.Redis`` (redis-py) connected to this server, on database
        :attr:`db` unless ``db=`` says otherwise; ``kwargs`` go to it
        (``decode_responses=True``, ``protocol=3``, ...)."""
        import redis

        if not self.running:
            raise TumblerError("the server is not running; use it inside `with Server(...)`")
        kwargs.setdefault("db", self.db)
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

    def flushdb(self) -> None:
        """Empties database :attr:`db` only."""
        self._command("FLUSHDB")

    def reset(self) -> None:
        """A clean server for the next test: FLUSHALL (FLUSHDB of :attr:`db` only when
        this object is attached to a server it shares) and, with time control, a running
        clock (time only moves forward, so an earlier ADVANCE stays)."""
        if self._attached or self.shared:
            self.flushdb()
        else:
            self.flushall()
        if self.time_control:
            self.resume()

    # ------------------------------------------------------------------ snapshots

    def snapshot_save(self, name: str) -> None:
        """``TUMBLER.SNAPSHOT SAVE``: keeps database :attr:`db` as it is now (keys, values,
        TTLs) under ``name``, replacing a snapshot of that name."""
        self._command("TUMBLER.SNAPSHOT", "SAVE", name)

    def snapshot_restore(self, name: str) -> None:
        """``TUMBLER.SNAPSHOT RESTORE``: database :attr:`db` becomes exactly what it was at
        :meth:`snapshot_save`; the other databases are untouched."""
        self._command("TUMBLER.SNAPSHOT", "RESTORE", name)

    def snapshot_list(self) -> list:
        """The names of the snapshots the server keeps."""
        return [n.decode() if isinstance(n, bytes) else n
                for n in self._command("TUMBLER.SNAPSHOT", "LIST")]

    def snapshot_drop(self, name: str) -> bool:
        """Forgets a snapshot; False if there was none of that name."""
        return bool(self._command("TUMBLER.SNAPSHOT", "DROP", name))

    # ------------------------------------------------------------------ state of a failure

    def state(self) -> str:
        """``TUMBLER.STATE``: every database in readable text (keys, types, TTLs, values,
        native-lock holders and waiters, the lock-order report)."""
        raw = self._command("TUMBLER.STATE")
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)

    def rdb(self) -> bytes:
        """``TUMBLER.RDB SAVE``: an RDB file of every database, as bytes (the server writes
        nothing to disk)."""
        raw = self._command("TUMBLER.RDB", "SAVE")
        return raw if isinstance(raw, bytes) else str(raw).encode()

    def write_artifacts(self, directory: "str | os.PathLike", name: str,
                        header: str = "") -> "list[Path]":
        """Writes ``<directory>/<name>.rdb`` (:meth:`rdb`) and ``<directory>/<name>.txt``
        (``header``, then :meth:`state`); ``name`` is made safe for a file name first.
        Returns the files written. Each is tried even if the other fails; the first error
        is raised after both were tried."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        base = artifact_name(name)
        written: list = []
        errors: list = []
        for suffix, produce in ((".txt", lambda: (header + self.state()).encode()),
                                (".rdb", self.rdb)):
            try:
                data = produce()
            except Exception as e:  # noqa: BLE001 - reported below, after the other file
                errors.append(e)
                continue
            path = out / (base + suffix)
            path.write_bytes(data)
            written.append(path)
        if errors:
            raise TumblerError(
                f"could not write every artifact of {name!r} (wrote {[str(p) for p in written]}): "
                f"{errors[0]}"
            ) from errors[0]
        return written


def artifact_name(name: str) -> str:
    """``name`` (a pytest node id, a test title) as a file name: characters other than
    letters, digits, ``.``, ``-`` and ``_`` become ``_``; a long name is cut and ends with
    a hash of the whole, so two tests never share a file."""
    import hashlib

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "test"
    if len(safe) > 120:
        digest = hashlib.sha1(name.encode()).hexdigest()[:10]
        safe = f"{safe[:109]}-{digest}"
    return safe

