"""pytest-redis, unchanged from PyPI, starting tumbler as it starts redis-server.

Its `redis_proc` fixture factory builds the command line itself (RedisExecutor): it runs
`<exec> --version` and parses a version out of it (>= 2.6), passes --daemonize no,
--rdbcompression, --rdbchecksum, --appendonly no, --databases 8, --timeout 15, --pidfile,
--unixsocket, --dbfilename, --logfile, --loglevel notice, --syslog-enabled no, --bind,
--port, --dir (and "--save <points>" as one argument when set), waits for the TCP port
(mirakuru's TCPExecutor), connects its `redisdb` client over the unix socket, and stops
the server with SIGTERM to its process group, failing unless the exit code is 0 or -15.
Each test runs against redis-server (the control) and tumbler with the same assertions.
"""

import os
import re
import subprocess
import sys

import pytest
import redis
from pytest_redis import factories
from pytest_redis.executor.process import extract_version

from conftest import SERVER_NAMES, SERVERS, free_port, pid_alive, port_open, start_server

HERE = os.path.dirname(os.path.abspath(__file__))

# One process fixture and one client fixture per server, from pytest-redis' own factories,
# with the executable given as the factory's argument.
for _name, _path in SERVERS.items():
    _key = _name.replace("-", "_")
    globals()[f"proc_{_key}"] = factories.redis_proc(executable=_path)
    globals()[f"db_{_key}"] = factories.redisdb(f"proc_{_key}")

# The noproc fixture connects to a server someone else started, on a port fixed when the
# factory is called: the ports are chosen here and the servers started by `noproc_server`.
NOPROC_PORTS = {name: free_port() for name in SERVERS}
for _name in SERVERS:
    globals()[f"noproc_{_name.replace('-', '_')}"] = factories.redis_noproc(
        host="127.0.0.1", port=NOPROC_PORTS[_name]
    )

# Redis' log line: "pid:role dd Mon yyyy HH:MM:SS.mmm <level> message".
LOG_LINE = re.compile(r"^\d+:[XCSM] \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}\.\d{3} [.\-*#] .+$")


def key(name):
    return name.replace("-", "_")


def round_trip(client):
    """SET/GET and a redis-py Lock acquire/release (its Lua scripts) on one client."""
    assert client.ping() is True
    assert client.set("launcher:k", "v") is True
    assert client.get("launcher:k") == b"v"
    lock = client.lock("launcher:lock", timeout=5, blocking_timeout=2)
    assert lock.acquire() is True
    assert lock.owned() is True
    other = client.lock("launcher:lock", timeout=5, blocking_timeout=0.1)
    assert other.acquire() is False
    lock.release()
    assert client.exists("launcher:lock") == 0
    assert other.acquire() is True
    other.release()


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_version_line_as_pytest_redis_parses_it(server):
    """RedisExecutor.version parses `--version`; it must name the Redis version served."""
    out = subprocess.run([SERVERS[server], "--version"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out
    assert out.stdout.startswith("Redis server v="), out.stdout
    version = extract_version(out.stdout)
    assert version >= factories.proc.RedisExecutor.MIN_SUPPORTED_VERSION
    # `-v` is the same line.
    short = subprocess.run([SERVERS[server], "-v"], capture_output=True, text=True, timeout=10)
    assert short.stdout == out.stdout


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_redis_proc_round_trip(server, request):
    proc = request.getfixturevalue(f"proc_{key(server)}")
    db = request.getfixturevalue(f"db_{key(server)}")
    # pytest-redis' client goes through the unix socket it asked for.
    assert db.connection_pool.connection_kwargs.get("path") == proc.unixsocket
    round_trip(db)
    # The version pytest-redis parsed is the one the server reports.
    assert str(proc.version) == db.info("server")["redis_version"]
    assert db.config_get("databases") == {"databases": "8"}


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_redis_proc_files_and_log(server, request):
    proc = request.getfixturevalue(f"proc_{key(server)}")
    datadir = os.path.dirname(proc.unixsocket)
    port = proc.port
    pidfile = os.path.join(datadir, f"redis-server.{port}.pid")
    logfile = os.path.join(datadir, f"redis-server.{port}.log")
    with open(pidfile) as f:
        assert int(f.read().strip()) == proc.process.pid
    assert os.path.exists(proc.unixsocket)
    with open(logfile) as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    assert any("Ready to accept connections" in line for line in lines), lines
    bad = [line for line in lines if not LOG_LINE.match(line)]
    assert not bad, f"lines not in Redis' log format: {bad}"
    # Nothing on stdout when a logfile is set: mirakuru pipes stdout and never reads it.
    fd = proc.process.stdout.fileno()
    os.set_blocking(fd, False)
    try:
        early = os.read(fd, 65536)
    except BlockingIOError:
        early = b""
    finally:
        os.set_blocking(fd, True)
    assert early == b"", early


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_redis_proc_stop_and_start_again(server, request):
    """mirakuru's stop(): SIGTERM to the process group, exit code 0 or -15, then start()."""
    proc = request.getfixturevalue(f"proc_{key(server)}")
    datadir = os.path.dirname(proc.unixsocket)
    port = proc.port
    pid = proc.process.pid
    proc.stop()  # raises ProcessFinishedWithError on any other exit code
    assert not pid_alive(pid)
    assert not port_open(port)
    left = sorted(os.listdir(datadir))
    # redis-server removes its pidfile and unix socket on shutdown.
    assert f"redis-server.{port}.pid" not in left, left
    assert os.path.basename(proc.unixsocket) not in left, left
    with open(os.path.join(datadir, f"redis-server.{port}.log")) as f:
        log = f.read()
    assert "Received SIGTERM scheduling shutdown" in log, log
    assert "ready to exit, bye bye" in log, log
    proc.start()
    client = redis.Redis(unix_socket_path=proc.unixsocket)
    round_trip(client)
    client.close()


@pytest.fixture
def noproc_server(request, started):
    server = request.param
    port = NOPROC_PORTS[server]
    started.append(start_server(server, "--port", str(port), "--bind", "127.0.0.1",
                                "--save", "", ready_port=port))
    yield server
    for s in started:
        assert s.stop() == 0


@pytest.mark.parametrize("noproc_server", SERVER_NAMES, indirect=True)
def test_redis_noproc_round_trip(noproc_server, request):
    noproc = request.getfixturevalue(f"noproc_{key(noproc_server)}")
    client = redis.Redis(host=noproc.host, port=noproc.port)
    round_trip(client)
    client.close()


@pytest.mark.parametrize("how", ["--redis-exec", "ini redis_exec"])
@pytest.mark.parametrize("server", SERVER_NAMES)
def test_plugin_default_fixtures(server, how, tmp_path):
    """A user's own pytest run: the plugin's default `redis_proc`/`redisdb` fixtures, with
    the executable given as `--redis-exec` or as the `redis_exec` ini option."""
    opt = [f"--redis-exec={SERVERS[server]}"] if how == "--redis-exec" else [
        "-o", f"redis_exec={SERVERS[server]}"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--basetemp", str(tmp_path / "t"),
         "--confcutdir", os.path.join(HERE, "user_suite"), *opt, os.path.join(HERE, "user_suite", "check_default_fixtures.py")],
        capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
    )
    assert out.returncode == 0 and re.search(r"^2 passed in ", out.stdout, re.M), out.stdout + out.stderr
