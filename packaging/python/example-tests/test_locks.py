"""Lock libraries against the fixture server; leases lapse through advance()."""

import threading

import pytest
from redis.exceptions import LockNotOwnedError


def test_redis_py_lock_30s_lease_expires_through_advance(tumbler):
    tumbler.freeze()  # only advance() moves time: the lease is exactly 30 s
    r = tumbler.client()
    worker_a = r.lock("lock:invoice:1", timeout=30)
    worker_b = tumbler.client().lock("lock:invoice:1", timeout=30)
    assert worker_a.acquire(blocking=False)
    assert not worker_b.acquire(blocking=False)
    tumbler.advance(29_999)
    assert not worker_b.acquire(blocking=False), "lease ended early"
    tumbler.advance(2)  # 30 s and 1 ms: the lease is over
    assert worker_b.acquire(blocking=False)
    with pytest.raises(LockNotOwnedError):
        worker_a.release()
    worker_b.release()


def test_pottery_redlock(tumbler):
    from pottery import Redlock

    a = Redlock(key="printer", masters={tumbler.client()}, auto_release_time=30)
    b = Redlock(key="printer", masters={tumbler.client()}, auto_release_time=30)
    assert a.acquire(blocking=False)
    assert not b.acquire(blocking=False)
    tumbler.advance(30_001)
    assert b.acquire(blocking=False)
    b.release()


def test_python_redis_lock_handoff_and_expiry(tumbler):
    import redis_lock

    a = redis_lock.Lock(tumbler.client(), "report", expire=30, id=b"worker-a")
    b = redis_lock.Lock(tumbler.client(), "report", expire=30, id=b"worker-b")
    assert a.acquire(blocking=False)
    got = []
    t = threading.Thread(target=lambda: got.append(b.acquire(blocking=True, timeout=10)))
    t.start()
    a.release()  # wakes the blocked waiter
    t.join(15)
    assert got == [True]
    c = redis_lock.Lock(tumbler.client(), "report", expire=30, id=b"worker-c")
    assert not c.acquire(blocking=False)
    tumbler.advance(30_001)  # b stalls past its lease
    assert c.acquire(blocking=False)
    c.release()


def test_native_lock_with_fencing_token(tumbler):
    r = tumbler.client()
    token = r.execute_command("LOCK.ACQUIRE", "lock:native", "worker-a", 30_000)
    assert token >= 1
    assert r.execute_command("LOCK.ACQUIRE", "lock:native", "worker-b", 30_000) is None
    tumbler.advance(30_001)
    newer = r.execute_command("LOCK.ACQUIRE", "lock:native", "worker-b", 30_000)
    assert newer > token
