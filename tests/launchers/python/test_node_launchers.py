"""npm `redis-server`, `redis-memory-server` and @testcontainers/redis' wait strategy, unchanged
from npm, each against redis-server (the control) and tumbler: tests/launchers/node/launchers.mjs
holds the scenarios and what each launcher reads from the server; this file runs them."""

import os
import shutil
import subprocess

import pytest

from conftest import SERVER_NAMES, SERVERS, missing

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "node", "launchers.mjs")
NODE = shutil.which("node")
NODE_DIR = os.environ.get("LAUNCHER_NODE_DIR", "")


def run_node(scenario, server, timeout=60):
    if not NODE or not os.path.isdir(os.path.join(NODE_DIR, "node_modules")):
        missing(f"node or the Node launchers (LAUNCHER_NODE_DIR={NODE_DIR!r})")
    env = dict(os.environ, LAUNCHER_NODE_DIR=NODE_DIR, REDISMS_SYSTEM_BINARY=SERVERS[server])
    out = subprocess.run([NODE, SCRIPT, scenario, SERVERS[server]], env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"exit {out.returncode}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}"
    assert out.stdout.startswith(f"ok {scenario} "), out.stdout
    return out.stdout


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_npm_redis_server(server):
    run_node("redis-server-npm", server)


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_npm_redis_server_port_in_use(server):
    run_node("redis-server-npm-busy", server)


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_redis_memory_server_system_binary(server):
    run_node("redis-memory-server", server)


@pytest.mark.parametrize("server", SERVER_NAMES)
def test_testcontainers_node_log_wait_strategy(server):
    run_node("testcontainers-log", server)
