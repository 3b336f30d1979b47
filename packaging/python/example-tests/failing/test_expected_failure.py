"""Fails on purpose: ci.sh runs it alone with --tumbler-artifacts and checks that the
failure left <test id>.rdb and .txt with this test's keys. Not part of the normal suite."""

import pytest


@pytest.fixture(scope="session")
def tumbler_seed(tumbler_server):
    tumbler_server.client().set("order:42:status", "paid")


def test_shipment_is_delivered(tumbler_seeded):
    r = tumbler_seeded.client(decode_responses=True)
    r.hset("shipment:42", mapping={"carrier": "post", "state": "lost"})
    r.execute_command("LOCK.ACQUIRE", "lock:shipment:42", "courier-7", 30_000)
    assert r.hget("shipment:42", "state") == "delivered"  # the expected failure


def test_a_passing_test_leaves_no_artifacts(tumbler_seeded):
    r = tumbler_seeded.client(decode_responses=True)
    assert r.get("order:42:status") == "paid"
    assert not r.exists("shipment:42"), "the failed test's keys outlived its restore"
