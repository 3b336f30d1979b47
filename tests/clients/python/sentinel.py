"""redis-py's Sentinel client against a primary, two replicas and three sentinels: one
scenario per invocation, the same code and assertions against tumbler and redis-server.

    python sentinel.py <scenario> <side> <sentinel ports> <data ports> <data pids>

<side> is `tumbler` (one process: faults are TUMBLER.NODE / TUMBLER.REPL commands and the
clock moves with TUMBLER.TIME ADVANCE) or `real` (redis-server processes: faults are
signals to the data node's own process, whose PID is given; time is the wall clock). Ports
and PIDs are comma-separated, the primary first. The sentinels watch `mymaster` with
down-after-milliseconds 1000 (tests/src/replset.rs).

Each scenario prints "ok <scenario>" on success; any failure raises (non-zero exit).
Lines starting "obs " are what the clients observed, ports replaced by names (node<i>,
promoted, sentinel<k>); tests/tests/clients_sentinel.rs runs both sides and asserts they
observed the same.
"""

import os
import signal
import sys
import threading
import time
import uuid

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, ReadOnlyError, ResponseError, TimeoutError
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel

NAME = "mymaster"
HOST = "127.0.0.1"

scenario, side, sentinel_csv, data_csv, pid_csv = sys.argv[1:6]
SENTINELS = [int(p) for p in sentinel_csv.split(",") if p]
DATA = [int(p) for p in data_csv.split(",")]
PIDS = [int(p) for p in pid_csv.split(",")]
TUMBLER = side == "tumbler"
assert side in ("tumbler", "real"), side

# Every client fails fast and lets the scenario's own bounded loops retry.
NO_RETRY = dict(socket_timeout=5, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0))


PROMOTED = None


def sym(port):
    """A port's name in observations: the same on both sides."""
    port = int(port)
    if port == PROMOTED:
        return "promoted"
    if PROMOTED is not None and port in DATA[1:]:
        return "other-replica"  # which replica is promoted may differ between runs
    if port in DATA:
        return f"node{DATA.index(port)}"
    if port in SENTINELS:
        return f"sentinel{SENTINELS.index(port)}"
    return f"unknown-port-{port}"


def obs(*parts):
    print("obs", *parts, flush=True)


def raw(client, *args):
    """The reply as the server sent it (no redis-py response callback)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def pairs(reply):
    """A field/value reply: a RESP3 map already, or a RESP2 flat array."""
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[0::2], reply[1::2]))


# Fields whose values differ from run to run (times, ids, offsets): only their names count.
VOLATILE = {"runid", "link-pending-commands", "link-refcount", "last-ping-sent",
            "last-ok-ping-reply", "last-ping-reply", "info-refresh", "role-reported-time",
            "slave-repl-offset", "replica-announced", "master-link-down-time",
            "last-hello-message", "voted-leader", "voted-leader-epoch", "config-epoch"}


def observe_sentinel_state(s, tag):
    """What SENTINEL MASTER / REPLICAS / SENTINELS answer (raw replies): field names in order
    and the values that do not vary."""
    sent = s.sentinels[0]
    obs(tag, "sentinel connection protocol", sent.connection_pool.get_connection().protocol)
    for what, reply in (("master", [raw(sent, "SENTINEL", "MASTER", NAME)]),
                        ("replicas", raw(sent, "SENTINEL", "REPLICAS", NAME)),
                        ("sentinels", raw(sent, "SENTINEL", "SENTINELS", NAME))):
        for entry in sorted((pairs(e) for e in reply), key=lambda d: sym(d["port"])):
            obs(tag, what, "fields", ",".join(k for k in entry))
            shown = []
            for k, v in entry.items():
                if k in VOLATILE:
                    continue
                if k in ("port", "master-port"):
                    v = sym(v)
                if k == "name" and what == "sentinels":
                    continue  # the sentinel's run id
                if k == "name" and what == "replicas":
                    host, port = v.rsplit(":", 1)
                    v = f"{host}:{sym(port)}"
                shown.append(f"{k}={v}")
            obs(tag, what, " ".join(shown))


def sentinel_client():
    return Sentinel(
        [(HOST, p) for p in SENTINELS],
        sentinel_kwargs=dict(NO_RETRY, decode_responses=True),
        decode_responses=True,
        **NO_RETRY,
    )


def direct(port):
    return redis.Redis(host=HOST, port=port, decode_responses=True, **NO_RETRY)


def control():
    """Where TUMBLER.* commands go: the last data node, which no scenario takes down."""
    return direct(DATA[-1])


def advance(ms):
    if TUMBLER:
        control().execute_command("TUMBLER.TIME", "ADVANCE", ms)


def while_time_passes(fn):
    """fn() while time passes: on tumbler a thread moves the clock 50 ms every 10 ms (a WAIT
    timeout is on Tumbler's clock there), on the real side the wall clock does."""
    if not TUMBLER:
        return fn()
    done = threading.Event()

    def tick():
        c = control()
        while not done.wait(0.01):
            c.execute_command("TUMBLER.TIME", "ADVANCE", 50)

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        return fn()
    finally:
        done.set()
        t.join()


def master_port(s):
    return s.discover_master(NAME)[1]


def await_master_change(s, old, seconds=30):
    """Polls the sentinels until the master is not `old` (moving Tumbler's clock meanwhile);
    returns the new master's port."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            port = master_port(s)
            if port != old:
                return port
        except MasterNotFoundError:
            pass
        advance(200)
        time.sleep(0.05)
    raise AssertionError(f"no failover away from {old} within {seconds}s")


def eventually(what, fn, seconds=30):
    """fn() until it returns a true value, retrying connection and READONLY errors (a
    client following a failover); moves Tumbler's clock between tries."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            v = fn()
            if v:
                return v
            last = v
        except (ConnectionError, TimeoutError, ReadOnlyError, MasterNotFoundError) as e:
            last = e
        advance(100)
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {seconds}s (last: {last!r})")


def primary_down(i):
    """Data node i's primary goes away: SIGKILL of its process, or TUMBLER.NODE DOWN."""
    if TUMBLER:
        assert control().execute_command("TUMBLER.NODE", "DOWN", i) == "OK"
    else:
        os.kill(PIDS[i], signal.SIGKILL)


def check_topology(s):
    assert s.discover_master(NAME) == (HOST, DATA[0]), s.discover_master(NAME)
    slaves = sorted(s.discover_slaves(NAME))
    assert slaves == sorted((HOST, p) for p in DATA[1:]), slaves


def basics_and_failover(by_command):
    global PROMOTED
    s = sentinel_client()
    check_topology(s)
    obs("discover_master", sym(s.discover_master(NAME)[1]))
    obs("discover_slaves", ",".join(sorted(sym(p) for _, p in s.discover_slaves(NAME))))
    observe_sentinel_state(s, "before")
    master = s.master_for(NAME, **NO_RETRY)
    replica = s.slave_for(NAME, **NO_RETRY)

    # The read-write split: writes on the master, reads on a replica, writes there refused.
    assert master.execute_command("ROLE")[0] == "master"
    assert replica.execute_command("ROLE")[0] == "slave"
    info = master.info("replication")
    assert info["role"] == "master" and info["connected_slaves"] == 2, info
    role = master.execute_command("ROLE")
    obs("master ROLE", role[0], sorted(sym(r[1]) for r in role[2]))
    role = replica.execute_command("ROLE")
    obs("replica ROLE", role[0], role[1], sym(role[2]), role[3])
    assert master.set("order:1", "paid")
    assert master.wait(2, 1000) == 2, "both replicas acknowledge a write"
    assert replica.get("order:1") == "paid"
    try:
        replica.set("order:1", "refunded")
        raise AssertionError("a replica accepted a write")
    except ReadOnlyError as e:
        assert "read only replica" in str(e), e
        obs("replica SET", type(e).__name__, e)
    assert replica.connection_pool.get_master_address() == (HOST, DATA[0])

    # redis.lock.Lock through master_for, replicated before the failover.
    lock = master.lock("lock:order:1", timeout=600)
    assert lock.acquire(blocking=False)
    other = master.lock("lock:order:1", timeout=600)
    assert not other.acquire(blocking=False)
    assert master.wait(2, 1000) == 2

    t0 = time.monotonic()
    if by_command:
        # SENTINEL FAILOVER: no agreement needed; the old primary becomes a replica.
        assert s.sentinels[0].sentinel_failover(NAME)
    else:
        primary_down(0)
    new = await_master_change(s, DATA[0])
    print(f"timing failover {time.monotonic() - t0:.3f}s", flush=True)
    assert new in DATA[1:], new
    PROMOTED = new
    obs("failover", "new master", sym(new))

    # The same client objects follow: master_for reconnects to the new master.
    # Until the sentinels demote it, the old primary (up after SENTINEL FAILOVER) still takes
    # the writes of a connection made before: they are lost when it resyncs. Only a write the
    # new master holds counts.
    new_master = direct(new)
    eventually("a write through master_for reaching the new master",
               lambda: master.set("order:2", "paid") and new_master.get("order:2") == "paid")
    assert master.connection_pool.get_master_address() == (HOST, new)
    assert master.execute_command("ROLE")[0] == "master"
    assert master.get("order:1") == "paid", "an acknowledged write survives the failover"
    # The lock held across the failover is still ours, and releases on the new master.
    assert lock.owned()
    assert not other.acquire(blocking=False)
    lock.release()
    assert other.acquire(blocking=False)
    other.release()

    # The other replica follows the new master; WAIT counts it.
    eventually("the other replica replicating from the new master",
               lambda: while_time_passes(lambda: master.wait(1, 200)) >= 1)
    if by_command:
        # The old primary is up: the sentinels turn it into a replica of the new master.
        eventually("the old primary listed as a replica",
                   lambda: (HOST, DATA[0]) in s.discover_slaves(NAME))
        old = direct(DATA[0])
        eventually("the old primary replicating", lambda: old.execute_command("ROLE")[0] == "slave")
        eventually("WAIT counting both replicas",
                   lambda: while_time_passes(lambda: master.wait(2, 200)) == 2)
        got = old.get("order:2")
        assert got == "paid", (got, old.info("replication"), master.info("replication"))
        role = old.execute_command("ROLE")
        obs("old primary ROLE", role[0], role[1], sym(role[2]))
    eventually("a replica serving reads after the failover",
               lambda: replica.get("order:2") == "paid")
    obs("discover_master", sym(s.discover_master(NAME)[1]))
    if by_command:
        eventually("the sentinels listing both replicas of the new master",
                   lambda: len(s.discover_slaves(NAME)) == 2)
        obs("discover_slaves", ",".join(sorted(sym(p) for _, p in s.discover_slaves(NAME))))
        eventually("the sentinels seeing both replicas' links up", lambda: all(
            pairs(e).get("master-link-status") == "ok"
            for e in raw(s.sentinels[0], "SENTINEL", "REPLICAS", NAME)))
        observe_sentinel_state(s, "after")


CAD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def acquire(client, key, token, use_wait):
    """SET key token NX PX; with use_wait the lock counts only if a replica acknowledged it
    (WAIT 1): otherwise it is released and treated as not acquired."""
    if not client.set(key, token, nx=True, px=600_000):
        return False
    if not use_wait:
        return True
    acked = while_time_passes(lambda: client.wait(1, 100))
    if acked >= 1:
        return True
    client.eval(CAD, 1, key, token)
    return False


def isolate_replicas():
    """The replicas stop receiving the primary's writes."""
    if TUMBLER:
        for i in range(1, len(DATA)):
            assert control().execute_command("TUMBLER.REPL", "PAUSE", i) == "OK"
    else:
        # Stopped replicas cannot reconnect, and with their links closed the primary sends
        # them nothing more (not even into the socket buffers).
        for pid in PIDS[1:]:
            os.kill(pid, signal.SIGSTOP)
        killed = direct(DATA[0]).execute_command("CLIENT", "KILL", "TYPE", "replica")
        assert killed == len(DATA) - 1, killed


def primary_down_replicas_back():
    primary_down(0)
    if TUMBLER:
        for i in range(1, len(DATA)):
            assert control().execute_command("TUMBLER.REPL", "RESUME", i) == "OK"
    else:
        for pid in PIDS[1:]:
            os.kill(pid, signal.SIGCONT)


def lock_across_lossy_failover(use_wait, sentinels=True):
    """Client A takes a lock on a primary whose replicas never receive it; the primary goes
    down and a replica is promoted: by the sentinels, or (sentinels=False, a topology
    without them) by hand as an operator would, REPLICAOF NO ONE on replica 1 and the other
    replica pointed at it. Client B then asks the new master for the same lock."""
    if sentinels:
        s = sentinel_client()
        check_topology(s)
        a = s.master_for(NAME, **NO_RETRY)
        b = s.master_for(NAME, **NO_RETRY)
    else:
        a = direct(DATA[0])
        assert a.execute_command("ROLE")[0] == "master"
    key = "lock:payment:7"
    ta, tb = "a-" + uuid.uuid4().hex, "b-" + uuid.uuid4().hex
    assert a.set("before", "1") and a.wait(2, 1000) == 2

    isolate_replicas()
    a_holds = acquire(a, key, ta, use_wait)
    # Client A got its SET NX answer from the primary; no replica has the key.
    assert a.get(key) == (None if use_wait else ta)

    primary_down_replicas_back()
    if sentinels:
        new = await_master_change(s, DATA[0])
        assert new in DATA[1:], new
    else:
        new = DATA[1]
        assert direct(new).execute_command("REPLICAOF", "NO", "ONE") == "OK"
        for port in DATA[2:]:
            assert direct(port).execute_command("REPLICAOF", HOST, new) == "OK"
        b = direct(new)
        assert b.execute_command("ROLE")[0] == "master"

    b_holds = eventually("client B acquiring after the failover",
                         lambda: acquire(b, key, tb, use_wait))
    assert b.get("before") == "1", "an acknowledged write survives"
    assert b.get(key) == tb
    holders = [n for n, held in (("A", a_holds), ("B", b_holds)) if held]
    obs("lock holders", holders)
    if use_wait:
        # WAIT answered 0: A never treated the lock as acquired; one holder.
        assert holders == ["B"], holders
    else:
        # The lock is lost: A's SET NX died with the primary, B got it too.
        assert holders == ["A", "B"], holders
        if sentinels:
            # A's compare-and-delete (its client follows the new master) finds B's token
            # and deletes nothing.
            released = eventually("A's release reaching the new master",
                                  lambda: ("answered", a.eval(CAD, 1, key, ta)))
            assert released == ("answered", 0), released
        assert b.get(key) == tb


def sentinel_auth():
    """Sentinels that require a password (SENTINEL_PASSWORD in the environment); the data
    nodes require none."""
    from redis.exceptions import AuthenticationError

    password = os.environ["SENTINEL_PASSWORD"]
    plain = redis.Redis(host=HOST, port=SENTINELS[0], decode_responses=True, **NO_RETRY)
    try:
        raw(plain, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME)
        raise AssertionError("a sentinel answered without AUTH")
    except (ResponseError, ConnectionError) as e:
        # redis-py 8 opens with HELLO 3: the sentinel refuses it before any command.
        obs("no AUTH", type(e).__name__, e)
    resp2 = redis.Redis(host=HOST, port=SENTINELS[0], decode_responses=True, protocol=2,
                        **NO_RETRY)
    try:
        resp2.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME)
        raise AssertionError("a sentinel answered without AUTH")
    except (ResponseError, ConnectionError) as e:  # redis-py maps NOAUTH to AuthenticationError
        obs("no AUTH, RESP2", type(e).__name__, e)
    wrong = redis.Redis(host=HOST, port=SENTINELS[0], password="wrong", decode_responses=True,
                        **NO_RETRY)
    try:
        wrong.ping()
        raise AssertionError("a sentinel took a wrong password")
    except AuthenticationError as e:
        obs("wrong password", type(e).__name__, e)
    # A Sentinel client without the password finds no master.
    try:
        sentinel_client().discover_master(NAME)
        raise AssertionError("discovered a master without the sentinels' password")
    except MasterNotFoundError:
        obs("discover_master without the password", "MasterNotFoundError")

    s = Sentinel([(HOST, p) for p in SENTINELS],
                 sentinel_kwargs=dict(NO_RETRY, decode_responses=True, password=password),
                 decode_responses=True, **NO_RETRY)
    obs("discover_master", sym(s.discover_master(NAME)[1]))
    obs("discover_slaves", ",".join(sorted(sym(p) for _, p in s.discover_slaves(NAME))))
    master = s.master_for(NAME, **NO_RETRY)
    replica = s.slave_for(NAME, **NO_RETRY)
    assert master.set("order:1", "paid")
    obs("WAIT", master.wait(2, 1000))
    obs("replica GET", replica.get("order:1"))
    # The sentinels' password is theirs: the data nodes take no AUTH.
    try:
        direct(DATA[0]).execute_command("AUTH", password)
        raise AssertionError("a data node took the sentinels' password")
    except (ResponseError, ConnectionError) as e:
        obs("AUTH on a data node", type(e).__name__, e)
    obs("sentinel ACL WHOAMI", raw(s.sentinels[0], "ACL", "WHOAMI"))


def main():
    if scenario == "redis_py_sentinel_failover_command":
        basics_and_failover(by_command=True)
    elif scenario == "redis_py_sentinel_primary_down":
        basics_and_failover(by_command=False)
    elif scenario == "lost_lock":
        lock_across_lossy_failover(use_wait=False)
    elif scenario == "wait_lock":
        lock_across_lossy_failover(use_wait=True)
    elif scenario == "redis_py_sentinel_auth":
        sentinel_auth()
    elif scenario == "lost_lock_manual_failover":
        lock_across_lossy_failover(use_wait=False, sentinels=False)
    elif scenario == "wait_lock_manual_failover":
        lock_across_lossy_failover(use_wait=True, sentinels=False)
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(f"ok {scenario}")


main()
