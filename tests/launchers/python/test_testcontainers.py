"""Testcontainers' Redis readiness checks against what each server prints (no Docker needed:
the container runtime is not under test, the server's output and replies are).

- testcontainers-python's RedisContainer waits with its PingWaitStrategy (a redis-py PING
  through the container's get_client()); it is run here, from the installed package, against
  a server we started.
- @testcontainers/redis (Node) waits for a log message: tests/launchers/node/launchers.mjs
  reads it from the installed package (test_node_launchers.py runs it).
- Testcontainers for Java has no Redis module: users write
  Wait.forLogMessage(".*Ready to accept connections.*\\n", 1), matched per frame by Java's
  String.matches; tests/launchers/java/LogRegex.java applies it with Java's regex engine.
"""

import os
import shutil
import subprocess

import pytest
import redis

from conftest import SERVER_NAMES, missing, free_port, start_server

HERE = os.path.dirname(os.path.abspath(__file__))
# As in Testcontainers' documentation and the Redis examples built on it (Java source text).
JAVA_REDIS_REGEX = ".*Ready to accept connections.*\\n"


class Target:
    """What PingWaitStrategy asks of a container: a client for the mapped port."""

    def __init__(self, port):
        self.port = port

    def get_client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_testcontainers_python_ping_wait_strategy(server, started):
    from testcontainers.community.redis import PingWaitStrategy, RedisContainer

    port = free_port()
    started.append(start_server(server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""))
    # RedisContainer's own strategy, as its constructor installs it.
    assert RedisContainer.__init__.__code__.co_names.count("PingWaitStrategy") == 1
    strategy = PingWaitStrategy().with_startup_timeout(10)
    strategy.wait_until_ready(Target(port))
    assert Target(port).get_client().ping() is True
    assert started[0].stop() == 0


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_testcontainers_java_log_regex(server, started, tmp_path):
    java = shutil.which("java")
    if not java:
        missing("java")
    port = free_port()
    s = start_server(server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", ready_port=port)
    started.append(s)
    assert s.stop() == 0
    # The whole log as the container would have printed it, stdout then stderr.
    (tmp_path / "log").write_text(s.stdout + s.stderr)
    with open(tmp_path / "log") as log:
        out = subprocess.run([java, os.path.join(HERE, "..", "java", "LogRegex.java"), JAVA_REDIS_REGEX],
                             stdin=log, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "matched 1", (out.stdout, s.stdout)
