"""pytest plugin (entry point ``pytest11``): a tumbler server for the test session.

Fixtures:
  ``tumbler_server``  session scope: one server for the whole run.
  ``tumbler``         the same server, FLUSHALL'd (and its clock resumed) before each test.

Options (command line, or the ini keys in brackets):
  --tumbler-no-time-control   start without TUMBLER.TIME [tumbler_time_control = false]
  --tumbler-binary PATH       the server executable [tumbler_binary]
  --tumbler-lockdep yes|strict  run the lock-order checker and fail the run (an error at
                              the session's end) if it found lock order inversions or
                              deadlocks [tumbler_lockdep]
  --tumbler-args "..."        extra server arguments, e.g. "--requirepass s3cret"; this is
                              also how to pass node or cluster options the server supports
                              [tumbler_args]
"""

from __future__ import annotations

import pytest

from . import Server


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
    parser.addini(
        "tumbler_time_control", "enable TUMBLER.TIME (default true)", type="bool", default=True
    )
    group.addoption(
        "--tumbler-lockdep",
        default=None,
        choices=["yes", "strict"],
        help="run the lock-order checker; fail the run if it finds inversions",
    )
    parser.addini("tumbler_binary", "tumbler executable to run", default="")
    parser.addini("tumbler_lockdep", "lock-order checker: yes or strict", default="")
    parser.addini("tumbler_args", "extra tumbler server arguments", default="")


def _server_from_config(config: pytest.Config) -> Server:
    time_control = bool(config.getini("tumbler_time_control"))
    if config.getoption("tumbler_no_time_control"):
        time_control = False
    binary = config.getoption("tumbler_binary") or config.getini("tumbler_binary") or None
    args = config.getoption("tumbler_args") or config.getini("tumbler_args") or ""
    lockdep = config.getoption("tumbler_lockdep") or config.getini("tumbler_lockdep") or None
    return Server(time_control=time_control, binary=binary, args=args, lockdep=lockdep)


@pytest.fixture(scope="session")
def tumbler_server(request: pytest.FixtureRequest):
    """One tumbler server for the whole session. With ``--tumbler-lockdep``, the session
    ends with an error if the lock-order checker found inversions or deadlocks."""
    with _server_from_config(request.config) as srv:
        yield srv
        if srv.lockdep and srv.running:
            srv.assert_no_lock_inversions()


@pytest.fixture
def tumbler(tumbler_server: Server) -> Server:
    """The session's server with an empty keyspace and a running clock."""
    tumbler_server.reset()
    return tumbler_server
