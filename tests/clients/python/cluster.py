"""Python clients against tumbler's nodes and emulated cluster: one scenario per invocation.

    python cluster.py <scenario> <port> [<port> ...]

The server runs with --enable-test-control yes (TUMBLER.NODE / TUMBLER.CLUSTER). Each
scenario asserts what the client observes and prints "ok <scenario>"; a failure raises.
"""

import sys


def redis_py_cluster(ports):
    from redis import Redis
    from redis.cluster import RedisCluster
    from redis.exceptions import ClusterCrossSlotError

    rc = RedisCluster(host="127.0.0.1", port=ports[0], socket_timeout=5)
    other = RedisCluster(host="127.0.0.1", port=ports[1], socket_timeout=5)
    assert len(rc.get_primaries()) == 3
    assert sorted(n.port for n in rc.get_primaries()) == sorted(ports)

    # Redisson-style names: the hash tag keeps a lock and its channel in one slot; the
    # locks themselves spread over every node.
    names = [f"{{order:{i}}}:lock" for i in range(12)]
    owners = {rc.get_node_from_key(n).port for n in names}
    assert len(owners) == 3, owners
    locks = [rc.lock(n, timeout=30) for n in names]
    for lk in locks:
        assert lk.acquire(blocking=False)
    for n in names:
        assert not other.lock(n, timeout=30).acquire(blocking=False), n
    for lk in locks:
        assert lk.owned()
        lk.release()
    assert rc.exists(*names[:1]) == 0

    # A slot moves while a lock is held: the client follows -MOVED, and the lock (with its
    # TTL) is on the new owner.
    name = "{moving}:lock"
    lk = rc.lock(name, timeout=30)
    assert lk.acquire(blocking=False)
    slot = rc.keyslot(name)
    before = rc.get_node_from_key(name).port
    target = (ports.index(before) + 1) % len(ports)
    ctl = Redis(port=ports[0])
    assert ctl.execute_command("TUMBLER.CLUSTER", "MOVESLOT", slot, target) == 1
    assert lk.owned()
    assert rc.get_node_from_key(name).port == ports[target]
    assert 0 < rc.pttl(name) <= 30_000
    lk.release()
    assert not rc.exists(name)

    # Server-side CROSSSLOT when a multi-key command is sent to one node.
    node = rc.get_node_from_key("{a}x")
    try:
        rc.execute_command("MSET", "{a}x", 1, "{b}y", 2, target_nodes=node)
        raise AssertionError("MSET across slots succeeded")
    except ClusterCrossSlotError as e:
        # redis-py maps the -CROSSSLOT error code to this exception.
        assert "don't hash to the same slot" in str(e), e
    # Same slot through hash tags: fine.
    assert rc.mset({"{a}x": 1, "{a}y": 2})
    assert rc.mget("{a}x", "{a}y") == [b"1", b"2"]

    # PUBLISH on one node reaches a subscriber connected to another.
    sub = Redis(port=ports[2]).pubsub()
    sub.subscribe("events")
    assert sub.get_message(timeout=2)["type"] == "subscribe"
    Redis(port=ports[0]).publish("events", "hello")
    msg = sub.get_message(timeout=2)
    assert msg and msg["data"] == b"hello", msg


def redis_py_cluster_replicas(ports):
    """Six nodes: three primaries, each with one replica."""
    from redis import Redis
    from redis.cluster import RedisCluster
    from redis.exceptions import ReadOnlyError

    ro = RedisCluster(host="127.0.0.1", port=ports[0], read_from_replicas=True, socket_timeout=5)
    rc = RedisCluster(host="127.0.0.1", port=ports[0], socket_timeout=5)
    assert len(ro.get_primaries()) == 3
    replicas = ro.get_replicas()
    assert sorted(n.port for n in replicas) == sorted(ports[3:]), replicas
    name = "{invoice:9}:lock"
    lk = rc.lock(name, timeout=30)
    assert lk.acquire(blocking=False)
    # Reads alternate between the primary and its replica (READONLY); each sees the lock.
    for _ in range(6):
        assert ro.exists(name) == 1
    # A script that writes, sent to a replica, is refused as by a Redis replica.
    replica_port = ports[3 + ports.index(rc.get_node_from_key(name).port)]
    r = Redis(port=replica_port)
    r.execute_command("READONLY")
    try:
        r.eval("return redis.call('del', KEYS[1])", 1, name)
        raise AssertionError("a replica ran a write")
    except ReadOnlyError:
        pass
    # The replica of the lock's primary takes over; the client follows MOVED.
    primary = rc.get_node_from_key(name)
    idx = ports.index(primary.port)
    replica = 3 + idx
    Redis(port=ports[(idx + 1) % 3]).execute_command("TUMBLER.CLUSTER", "FAILOVER", replica)
    lk.release()
    assert rc.exists(name) == 0
    assert rc.get_node_from_key(name).port == ports[replica]


def pottery_redlock_faults(ports):
    from redis import Redis
    from pottery import Redlock

    ctl = Redis(port=ports[0])
    masters = {Redis(port=p, socket_timeout=1, socket_connect_timeout=1) for p in ports}
    lock = Redlock(key="printer", masters=masters, auto_release_time=30)
    # One of three nodes down: two is a quorum.
    ctl.execute_command("TUMBLER.NODE", "DOWN", 2)
    assert lock.acquire(blocking=False)
    assert lock.locked() > 0
    lock.release()
    # Two down: no quorum.
    ctl.execute_command("TUMBLER.NODE", "DOWN", 1)
    assert not lock.acquire(blocking=False)
    # Back up (with their data): a quorum again.
    ctl.execute_command("TUMBLER.NODE", "UP", 1)
    ctl.execute_command("TUMBLER.NODE", "UP", 2)
    import time
    deadline = time.time() + 10
    while not lock.acquire(blocking=False):
        assert time.time() < deadline, "no quorum after the nodes came back"
        time.sleep(0.05)
    lock.release()


SCENARIOS = {
    "redis_py_cluster": redis_py_cluster,
    "pottery_redlock_faults": pottery_redlock_faults,
    "redis_py_cluster_replicas": redis_py_cluster_replicas,
}

if __name__ == "__main__":
    name = sys.argv[1]
    ports = [int(p) for p in sys.argv[2:]]
    SCENARIOS[name](ports)
    print(f"ok {name}")
