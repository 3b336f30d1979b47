"""pytest plugin (entry point ``pytest11``): a tumbler server for the test session.

Fixtures:
  ``tumbler_server``  session scope: one server for the whole run. Under pytest-xdist the
                      workers share one server and each has its own database (``.db``).
  ``tumbler``         the same server, its database emptied (FLUSHALL; FLUSHDB of the
                      worker's database under xdist) and its clock resumed before each test.
  ``tumbler_seed``    override it (any scope, requesting ``tumbler_server``) to write the
                      data every test starts from; it runs once per its scope on an empty
                      database, and a snapshot is taken right after it.
  ``tumbler_seeded``  the same server, the database as ``tumbler_seed`` left it; after the
                      test one TUMBLER.SNAPSHOT RESTORE puts it back.

Options (command line, or the ini keys in brackets):
  --tumbler-no-time-control   start without TUMBLER.TIME [tumbler_time_control = false]
  --tumbler-binary PATH       the server executable [tumbler_binary]
  --tumbler-lockdep yes|strict  run the lock-order checker and fail the run (an error at
                              the session's end) if it found lock order inversions or
                              deadlocks [tumbler_lockdep]
  --tumbler-personality NAME  the server release tumbler imitates: redis-7.0, redis-7.2
                              (default), redis-7.4, redis-8.0, valkey-8.1, valkey-9.0,
                              valkey-9.1 [tumbler_personality]
  --tumbler-args "..."        extra server arguments, e.g. "--requirepass s3cret"; this is
                              also how to pass node or cluster options the server supports
                              [tumbler_args]
  --tumbler-artifacts DIR     when a test that uses the server fails, write the server's
                              state to DIR/<test id>.rdb (TUMBLER.RDB SAVE) and .txt
                              (TUMBLER.STATE) [tumbler_artifacts; env TUMBLER_ARTIFACTS]
  --tumbler-xdist shared|per-worker  pytest-xdist workers share one server, each on its
                              own database (default), or start one each [tumbler_xdist]
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from . import Server, TumblerError


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tumbler", "tumbler server fixtures")
    group.addoption(
        "--tumbler-no-time-control",
        action="store_true",
        default=None,
        help="start the tumbler server without time control (TUMBLER.TIME)",
    )
    group.addoption("--tumbler-binary", default=None, help="tumbler executable to run")
    group.addoption(
        "--tumbler-args", default=None, help="extra tumbler server arguments (one string)"
    )
    group.addoption(
        "--tumbler-personality",
        default=None,
        metavar="NAME",
        help="the server release tumbler imitates (redis-7.2 by default; redis-8.0, "
        "valkey-9.1, ...)",
    )
    parser.addini(
        "tumbler_time_control", "enable TUMBLER.TIME (default true)", type="bool", default=True
    )
    group.addoption(
        "--tumbler-lockdep",
        default=None,
        choices=["yes", "strict"],
        help="run the lock-order checker; fail the run if it finds inversions",
    )
    group.addoption(
        "--tumbler-artifacts",
        default=None,
        metavar="DIR",
        help="when a test using the server fails, write DIR/<test id>.rdb and .txt "
        "(the server's data and its readable state)",
    )
    group.addoption(
        "--tumbler-xdist",
        default=None,
        choices=["shared", "per-worker"],
        help="pytest-xdist workers share one server, each on its own database (default), "
        "or start one server each",
    )
    parser.addini("tumbler_binary", "tumbler executable to run", default="")
    parser.addini("tumbler_lockdep", "lock-order checker: yes or strict", default="")
    parser.addini("tumbler_args", "extra tumbler server arguments", default="")
    parser.addini("tumbler_personality", "the server release tumbler imitates", default="")
    parser.addini(
        "tumbler_artifacts", "directory for the state of failed tests (.rdb, .txt)", default=""
    )
    parser.addini("tumbler_xdist", "shared (default) or per-worker", default="")


def _server_from_config(config: pytest.Config, db: int = 0, databases: int = 0) -> Server:
    time_control = bool(config.getini("tumbler_time_control"))
    if config.getoption("tumbler_no_time_control"):
        time_control = False
    binary = config.getoption("tumbler_binary") or config.getini("tumbler_binary") or None
    args = config.getoption("tumbler_args") or config.getini("tumbler_args") or ""
    lockdep = config.getoption("tumbler_lockdep") or config.getini("tumbler_lockdep") or None
    extra = ["--databases", str(databases)] if databases > 16 else []
    personality = (
        config.getoption("tumbler_personality") or config.getini("tumbler_personality") or None
    )
    srv = Server(
        time_control=time_control,
        binary=binary,
        args=args,
        lockdep=lockdep,
        db=db,
        personality=personality,
    )
    srv.args = extra + srv.args  # the user's own --databases, if any, comes later and wins
    return srv


def _artifacts_dir(config: pytest.Config) -> Optional[Path]:
    d = (
        config.getoption("tumbler_artifacts")
        or config.getini("tumbler_artifacts")
        or os.environ.get("TUMBLER_ARTIFACTS")
    )
    if not d:
        return None
    return Path(config.invocation_params.dir, d)


def _xdist_worker() -> Optional[int]:
    """This process's pytest-xdist worker number (``gw3`` -> 3), or None outside xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else None


# ---------------------------------------------------------------------- shared server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _SharedServer:
    """One tumbler process for all pytest-xdist workers of a run.

    The workers coordinate through a JSON file in the run's shared temporary directory (the
    parent of each worker's basetemp), read and written under an exclusive ``flock``. The
    first worker to need a server starts it (with ``--watch-stdin``, so it dies with that
    worker and hence with the run) and records its address; the others attach to it and add
    their pid to its users. A worker done with it removes its pid; the starter then waits
    until no other recorded user is still alive, and stops it.
    """

    def __init__(self, shared_dir: Path) -> None:
        self.state_path = shared_dir / "tumbler-server.json"
        self.lock_path = shared_dir / "tumbler-server.lock"
        self.owner = False

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.lock_path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _read(self) -> Optional[dict]:
        try:
            return json.loads(self.state_path.read_text())
        except (FileNotFoundError, ValueError):
            return None

    def _write(self, state: dict) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.state_path)

    @staticmethod
    def _answers(host: str, port: int) -> bool:
        import redis

        try:
            with redis.Redis(host=host, port=port, socket_timeout=2) as r:
                return bool(r.ping())
        except redis.RedisError:
            return False

    def acquire(self, config: pytest.Config, worker: int) -> Server:
        me = os.getpid()
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        with self._locked():
            st = self._read()
            if st and _alive(st["owner"]) and self._answers(st["host"], st["port"]):
                st["users"] = [p for p in st["users"] if _alive(p)] + [me]
                self._write(st)
                srv = Server.attach(
                    st["host"], st["port"], db=worker,
                    time_control=st["time_control"], lockdep=st["lockdep"],
                )
            else:
                srv = _server_from_config(config, db=worker, databases=count).start()
                self.owner = True
                self._write({
                    "host": srv.host, "port": srv.port, "pid": srv.pid, "owner": me,
                    "users": [me], "time_control": srv.time_control, "lockdep": srv.lockdep,
                })
        srv.shared = True
        return srv

    def release(self, srv: Server) -> None:
        me = os.getpid()
        with self._locked():
            st = self._read()
            if st and st["port"] == srv.port:
                st["users"] = [p for p in st["users"] if p != me]
                self._write(st)
        if not self.owner:
            srv.stop()  # closes this worker's connection; the server goes on
            return
        while True:
            with self._locked():
                st = self._read()
                others = [p for p in (st or {}).get("users", []) if _alive(p)]
                if not others:
                    self.state_path.unlink(missing_ok=True)
                    srv.stop()
                    return
            time.sleep(0.05)


# ---------------------------------------------------------------------- seed snapshots


class _Seeds:
    """The snapshots of the ``tumbler_seed`` fixtures set up now, innermost last (a
    module's override inside the session's), and whether the database is known to be as
    the innermost one left it."""

    def __init__(self) -> None:
        self.stack: List[str] = []
        self.made = 0
        self.at_seed = False

    def push(self, srv: Server) -> None:
        self.made += 1
        name = f"pytest-seed-db{srv.db}-{os.getpid()}-{self.made}"
        srv.snapshot_save(name)
        self.stack.append(name)
        self.at_seed = True

    def pop(self, srv: Server) -> None:
        name = self.stack.pop()
        if not srv.running:
            return
        srv.snapshot_drop(name)
        # Back to the enclosing seed's data, or to an empty database.
        if self.stack:
            srv.snapshot_restore(self.stack[-1])
            self.at_seed = True
        else:
            srv.flushdb()
            self.at_seed = False

    def restore(self, srv: Server) -> None:
        if not self.stack:
            raise TumblerError(
                "no tumbler_seed snapshot to restore: taking it failed (see the first error)"
            )
        srv.snapshot_restore(self.stack[-1])
        self.at_seed = True


_SERVER = pytest.StashKey[Server]()
_SEEDS = pytest.StashKey[_Seeds]()


def _seeds(config: pytest.Config) -> _Seeds:
    if _SEEDS not in config.stash:
        config.stash[_SEEDS] = _Seeds()
    return config.stash[_SEEDS]


# Old-style hook wrappers (`hookwrapper=True`), which every pytest since 3 runs; the new
# style needs pluggy 1.2, and a plugin installed in an environment with an older pytest
# must not break its collection.
@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Around every ``tumbler_seed`` fixture: an empty database before it (or, for one that
    extends an outer ``tumbler_seed``, the outer one's data), a snapshot after it, and at
    its teardown the database goes back to the outer seed's snapshot."""
    if fixturedef.argname != "tumbler_seed":
        yield
        return
    srv: Server = request.getfixturevalue("tumbler_server")
    seeds = _seeds(request.config)
    if "tumbler_seed" in fixturedef.argnames:
        if seeds.stack and not seeds.at_seed:
            seeds.restore(srv)
    else:
        srv.flushdb()
    pushed = []
    fixturedef.addfinalizer(lambda: pushed and seeds.pop(srv))
    outcome = yield
    if outcome.excinfo is None:
        seeds.push(srv)
        pushed.append(True)


# ---------------------------------------------------------------------- failure artifacts


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    """A test that used the server failed (in setup or call): with ``--tumbler-artifacts``,
    the server's state goes to files named after the test, before any fixture's teardown
    restores or empties it."""
    rep = (yield).get_result()
    if rep.when not in ("setup", "call") or not rep.failed:
        return
    directory = _artifacts_dir(item.config)
    srv = item.config.stash.get(_SERVER, None)
    if directory is None or srv is None or "tumbler_server" not in getattr(
        item, "fixturenames", ()
    ):
        return
    if not srv.running:
        rep.sections.append(("tumbler artifacts", "not written: the server is not running"))
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    header = (
        f"# test: {item.nodeid}\n# phase: {rep.when}\n# database: {srv.db}\n"
        f"# server: {srv.host}:{srv.port}{f' (xdist worker {worker})' if worker else ''}\n\n"
    )
    try:
        paths = srv.write_artifacts(directory, item.nodeid, header)
        rep.sections.append(("tumbler artifacts", "\n".join(str(p) for p in paths)))
    except Exception as e:  # noqa: BLE001 - the test's own failure is what matters
        rep.sections.append(("tumbler artifacts", f"not written: {e}"))
    return


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def tumbler_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """One tumbler server for the whole session. Under pytest-xdist the workers share one
    server and each uses its own database (``tumbler_server.db`` = the worker's number),
    unless ``--tumbler-xdist per-worker``. With ``--tumbler-lockdep``, the session ends
    with an error if the lock-order checker found inversions or deadlocks."""
    config = request.config
    worker = _xdist_worker()
    mode = config.getoption("tumbler_xdist") or config.getini("tumbler_xdist") or "shared"
    if mode not in ("shared", "per-worker"):
        raise TumblerError(f"tumbler_xdist must be shared or per-worker, not {mode!r}")
    if worker is None or mode == "per-worker":
        with _server_from_config(config) as srv:
            config.stash[_SERVER] = srv
            yield srv
            if srv.lockdep and srv.running:
                srv.assert_no_lock_inversions()
        return
    shared = _SharedServer(tmp_path_factory.getbasetemp().parent)
    srv = shared.acquire(config, worker)
    config.stash[_SERVER] = srv
    try:
        yield srv
        if srv.lockdep and srv.running:
            srv.assert_no_lock_inversions()
    finally:
        shared.release(srv)


@pytest.fixture
def tumbler(request: pytest.FixtureRequest, tumbler_server: Server) -> Server:
    """The session's server with an empty keyspace (this worker's database, under xdist)
    and a running clock."""
    tumbler_server.reset()
    _seeds(request.config).at_seed = False
    return tumbler_server


@pytest.fixture(scope="session")
def tumbler_seed(tumbler_server: Server) -> None:
    """The data every ``tumbler_seeded`` test starts from: none. Override it in a
    conftest.py or a test module, at any scope, to write some through ``tumbler_server``."""


@pytest.fixture
def tumbler_seeded(request: pytest.FixtureRequest, tumbler_seed, tumbler_server: Server):
    """The session's server with the database as ``tumbler_seed`` left it. After the test,
    one ``TUMBLER.SNAPSHOT RESTORE`` brings it back, whatever the test changed (the clock
    is left as the test left it)."""
    seeds = _seeds(request.config)
    if not seeds.at_seed:  # a `tumbler` test emptied the database since
        seeds.restore(tumbler_server)
    yield tumbler_server
    if tumbler_server.running:
        seeds.restore(tumbler_server)
