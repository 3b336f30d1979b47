"""Every test starts from the seed, changes the same keys as the tests of the other worker,
and finds only its own changes; after it, one restore puts the seed back."""

import os
import time

import pytest
import redis


def assert_seeded(r, worker):
    assert r.get("owner") == worker, "another worker's database, or a restore that missed"
    assert r.get("stock:apple") == "10"
    assert r.hgetall("user:1") == {"name": "ada", "plan": "free"}
    assert r.lrange("queue", 0, -1) == ["a", "b"]
    assert 0 < r.ttl("session:1") <= 3600
    assert not r.exists("flags"), "test_module_seed's extra seed outlived its module"
    assert r.dbsize() == 5


@pytest.mark.parametrize("n", range(8))
def test_same_keys_in_both_workers(tumbler_seeded, n):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    r = tumbler_seeded.client(decode_responses=True)
    assert r.connection_pool.connection_kwargs["db"] == int(worker[2:])
    assert_seeded(r, worker)
    mine = f"{worker}-{n}"
    r.set("stock:apple", mine)
    r.delete("user:1")
    r.rpush("queue", mine)
    r.persist("session:1")
    r.set(f"scratch:{n}", mine)
    # The other worker is writing these very keys, and restoring after its tests, now.
    for _ in range(10):
        time.sleep(0.01)
        assert r.get("stock:apple") == mine
        assert not r.exists("user:1")
        assert r.lrange("queue", 0, -1) == ["a", "b", mine]
        assert r.ttl("session:1") == -1
        assert r.get("owner") == worker


def test_flush_fixture_then_seeded_again(tumbler):
    # `tumbler` empties this worker's database; the next `tumbler_seeded` test restores
    # the seed before it starts (assert_seeded checks it).
    assert tumbler.client().dbsize() == 0
    tumbler.client().set("left-by-flush-test", 1)


def test_own_snapshot_restores_this_database_only(tumbler_seeded):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    srv = tumbler_seeded
    r = srv.client(decode_responses=True)
    other = srv.client(db=8 + srv.db, decode_responses=True)
    other.set("elsewhere", "before")
    name = f"mine-{worker}"
    srv.snapshot_save(name)
    assert name in srv.snapshot_list()
    r.set("stock:apple", 0)
    r.set("added", 1)
    other.set("elsewhere", "after")
    srv.snapshot_restore(name)
    assert r.get("stock:apple") == "10" and not r.exists("added")
    assert other.get("elsewhere") == "after", "a restore touched another database"
    assert srv.snapshot_drop(name) is True
    assert srv.snapshot_drop(name) is False
    with pytest.raises(redis.ResponseError, match="no such snapshot"):
        srv.snapshot_restore(name)
    other.flushdb()
