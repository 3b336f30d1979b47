"""Seed once, restore after each test, without xdist: this module's `tumbler_seed` runs
once, a snapshot is taken, and each `tumbler_seeded` test starts from it."""

import pytest


@pytest.fixture(scope="module")
def tumbler_seed(tumbler_server):
    r = tumbler_server.client()
    r.hset("product:1", mapping={"name": "kettle", "price": "25"})
    r.zadd("bestsellers", {"product:1": 120, "product:2": 80})
    r.set("promo", "SPRING", px=86_400_000)


@pytest.mark.parametrize("n", range(3))
def test_each_test_finds_the_seed_and_spoils_it(tumbler_seeded, n):
    r = tumbler_seeded.client(decode_responses=True)
    assert r.hgetall("product:1") == {"name": "kettle", "price": "25"}
    assert r.zrange("bestsellers", 0, -1) == ["product:2", "product:1"]
    assert 0 < r.pttl("promo") <= 86_400_000
    assert r.dbsize() == 3
    r.hset("product:1", "price", n)
    r.zincrby("bestsellers", 100, "product:2")
    r.delete("promo")
    r.set(f"cart:{n}", "full")


def test_a_flushing_test_in_between(tumbler):
    assert tumbler.client().dbsize() == 0


def test_seed_is_back_after_a_flushing_test(tumbler_seeded):
    r = tumbler_seeded.client(decode_responses=True)
    assert r.hget("product:1", "name") == "kettle"
    assert r.dbsize() == 3
