"""Python lock libraries against tumbler: one scenario per invocation.

    python locks.py <scenario> <port> [<port> ...]

Each scenario asserts the lock's observable behaviour (mutual exclusion, ownership, lease
expiry, release) and prints "ok <scenario>" on success; any failure raises, so the exit
status is non-zero. The servers must run with --enable-time-control yes: instead of
sleeping through a lease, the scenario moves the server clock with TUMBLER.TIME ADVANCE.
"""

import sys


def advance(clients, ms):
    for c in clients:
        c.execute_command("TUMBLER.TIME", "ADVANCE", ms)


def redis_py_lock(ports, protocol):
    import redis
    from redis.exceptions import LockNotOwnedError

    r = redis.Redis(port=ports[0], protocol=protocol, decode_responses=True)
    other = redis.Redis(port=ports[0], protocol=protocol, decode_responses=True)
    assert r.ping()
    if protocol == 3:
        assert r.connection_pool.get_connection().protocol in (3, "3")

    a = r.lock("lock:invoice:1", timeout=30)
    b = other.lock("lock:invoice:1", timeout=30)
    assert a.acquire(blocking=False)
    assert a.owned() and a.locked()
    assert not b.acquire(blocking=False), "second owner got a held lock"
    assert not b.acquire(blocking=True, blocking_timeout=0.05)

    # extend / reacquire run Lua scripts too.
    assert a.extend(10)  # 40 s left
    assert 39_000 <= r.pttl("lock:invoice:1") <= 40_000
    assert a.reacquire()  # back to 30 s
    assert 29_000 <= r.pttl("lock:invoice:1") <= 30_000

    # The holder stalls past its lease: the lock lapses, another client takes it.
    advance([r], 30_001)
    assert not a.locked()
    assert b.acquire(blocking=False)
    try:
        a.release()
        raise AssertionError("released a lock owned by someone else")
    except LockNotOwnedError:
        pass
    assert b.owned()
    b.release()
    assert not r.exists("lock:invoice:1")

    # Context manager form, as most code uses it.
    with r.lock("lock:ctx", timeout=5, blocking_timeout=1):
        assert r.exists("lock:ctx")
    assert not r.exists("lock:ctx")


def pottery_redlock(ports):
    from redis import Redis
    from pottery import Redlock

    masters = {Redis(port=p) for p in ports}
    others = {Redis(port=p) for p in ports}
    a = Redlock(key="printer", masters=masters, auto_release_time=30)
    b = Redlock(key="printer", masters=others, auto_release_time=30)
    assert a.acquire(blocking=False)
    assert a.locked() > 0
    assert not b.acquire(blocking=False)
    assert not b.acquire(timeout=0.05)
    a.extend()
    # One master lapsing early does not free a lock held on a majority.
    advance([Redis(port=ports[0])], 30_001)
    assert not b.acquire(blocking=False)
    # All masters past the lease: a new owner gets it.
    advance([Redis(port=p) for p in ports[1:]], 30_001)
    assert b.acquire(blocking=False)
    assert b.locked() > 0
    b.release()
    with a:
        assert a.locked() > 0
    assert a.locked() == 0


def python_redis_lock(ports):
    import redis
    import redis_lock

    conn = redis.Redis(port=ports[0])
    other = redis.Redis(port=ports[0])
    a = redis_lock.Lock(conn, "report", expire=30, id=b"worker-a")
    b = redis_lock.Lock(other, "report", expire=30, id=b"worker-b")
    assert a.acquire(blocking=False)
    assert a.locked()
    assert a.get_owner_id() in ("worker-a", b"worker-a")
    assert not b.acquire(blocking=False)
    a.extend(expire=60)
    assert 59_000 <= conn.pttl("lock:report") <= 60_000
    advance([conn], 60_001)
    assert not a.locked()
    assert b.acquire(blocking=False)
    try:
        a.release()
        raise AssertionError("released a lock owned by someone else")
    except redis_lock.NotAcquired:
        pass
    b.release()
    # A waiter blocked on the lock is woken by the release (BLPOP on the signal list).
    a = redis_lock.Lock(conn, "report", expire=30, id=b"worker-a2")
    b = redis_lock.Lock(other, "report", expire=30, id=b"worker-b2")
    assert a.acquire(blocking=False)
    import threading

    got = []
    t = threading.Thread(target=lambda: got.append(b.acquire(blocking=True, timeout=10)))
    t.start()
    a.release()
    t.join(15)
    assert got == [True], got
    b.release()


def contended(ports):
    """Four threads each take a redis-py Lock and a python-redis-lock 50 times around a
    non-atomic read-modify-write; any lost update means two holders at once."""
    import threading

    import redis
    import redis_lock

    pool = redis.ConnectionPool(port=ports[0], protocol=3)
    errors = []

    def worker():
        c = redis.Redis(connection_pool=pool)
        try:
            for _ in range(50):
                with c.lock("lock:counted", timeout=30, sleep=0.001, blocking_timeout=60):
                    c.set("counted", int(c.get("counted") or 0) + 1)
                with redis_lock.Lock(c, "counted2", expire=30):
                    c.set("counted2", int(c.get("counted2") or 0) + 1)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors, errors
    r = redis.Redis(connection_pool=pool)
    assert r.get("counted") == b"200", r.get("counted")
    assert r.get("counted2") == b"200", r.get("counted2")
    assert not r.exists("lock:counted", "lock:counted2")


SCENARIOS = {
    "contended": contended,
    "redis_py_lock": lambda ports: redis_py_lock(ports, 2),
    "redis_py_lock_resp3": lambda ports: redis_py_lock(ports, 3),
    "pottery_redlock": pottery_redlock,
    "python_redis_lock": python_redis_lock,
}

if __name__ == "__main__":
    name = sys.argv[1]
    ports = [int(p) for p in sys.argv[2:]]
    SCENARIOS[name](ports)
    print(f"ok {name}")
