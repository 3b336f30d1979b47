"""A module's own `tumbler_seed` extends the session's: its tests see both; once the
module is done the database goes back to the session's seed (test_isolation checks)."""

import os

import pytest


@pytest.fixture(scope="module")
def tumbler_seed(tumbler_seed, tumbler_server):
    tumbler_server.client().sadd("flags", "beta", "dark-mode")


@pytest.mark.parametrize("n", range(4))
def test_module_seed_on_top_of_the_session_seed(tumbler_seeded, n):
    r = tumbler_seeded.client(decode_responses=True)
    assert r.get("owner") == os.environ["PYTEST_XDIST_WORKER"]
    assert r.get("stock:apple") == "10"
    assert r.smembers("flags") == {"beta", "dark-mode"}
    r.srem("flags", "beta")
    r.incr("stock:apple", n + 1)
