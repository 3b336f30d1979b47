"""redis-py's stream API against tumbler: a work queue on a consumer group.

    python streams.py <scenario> <port>

Producers XADD jobs (with approximate MAXLEN trimming), worker threads block in
XREADGROUP and XACK what they finish, a crashed worker's jobs are recovered with
XAUTOCLAIM once idle (the server clock is moved with TUMBLER.TIME ADVANCE instead of
sleeping), and redis-py parses XINFO/XPENDING into its dicts. Prints "ok <scenario>";
any failure raises.
"""

import sys
import threading


def entries_of(reply, key, protocol):
    """The entries of `key` in an XREAD/XREADGROUP reply: a list of [key, entries] pairs in
    RESP2, a map of key to [entries] in redis-py's RESP3 parsing."""
    if protocol == 2:
        return dict((k, v) for k, v in reply)[key]
    return reply[key][0]


def work_queue(ports, protocol):
    import redis

    r = redis.Redis(port=ports[0], protocol=protocol)
    r.delete("jobs")
    r.xgroup_create("jobs", "workers", id="$", mkstream=True)

    # A worker that takes two jobs and "crashes" before acknowledging them.
    r.xadd("jobs", {"n": "crash-1"})
    r.xadd("jobs", {"n": "crash-2"})
    got = r.xreadgroup("workers", "crasher", {"jobs": ">"}, count=2)
    assert [e[1][b"n"] for e in entries_of(got, b"jobs", protocol)] == [b"crash-1", b"crash-2"]

    done = []
    lock = threading.Lock()

    def worker(name):
        c = redis.Redis(port=ports[0], protocol=protocol)
        while True:
            # One entry per read: a worker that took two of the three "stop" entries in one
            # batch would leave another worker waiting for a stop that never comes.
            reply = c.xreadgroup("workers", name, {"jobs": ">"}, count=1, block=10000)
            assert reply, f"{name} timed out"
            for job_id, fields in entries_of(reply, b"jobs", protocol):
                if fields[b"n"] == b"stop":
                    c.xack("jobs", "workers", job_id)
                    return
                with lock:
                    done.append(fields[b"n"])
                c.xack("jobs", "workers", job_id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for i in range(300):
        r.xadd("jobs", {"n": str(i)}, maxlen=10000, approximate=True)
    for _ in threads:
        r.xadd("jobs", {"n": "stop"})
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert sorted(int(x) for x in done) == list(range(300)), len(done)

    # Only the crashed worker's two jobs are pending.
    summary = r.xpending("jobs", "workers")
    assert summary["pending"] == 2, summary
    assert summary["consumers"] == [{"name": b"crasher", "pending": 2}], summary

    # Not idle long enough: nothing is claimed. After a minute, the rescuer gets both.
    claimed = r.xautoclaim("jobs", "workers", "rescuer", min_idle_time=60000)
    assert claimed[1] == [], claimed
    r.execute_command("TUMBLER.TIME", "ADVANCE", 60001)
    claimed = r.xautoclaim("jobs", "workers", "rescuer", min_idle_time=60000)
    assert [e[1][b"n"] for e in claimed[1]] == [b"crash-1", b"crash-2"], claimed
    rows = r.xpending_range("jobs", "workers", "-", "+", 10)
    assert [(x["consumer"], x["times_delivered"]) for x in rows] == [(b"rescuer", 2)] * 2, rows
    assert r.xack("jobs", "workers", *[x["message_id"] for x in rows]) == 2

    info = r.xinfo_stream("jobs")
    assert info["length"] == 300 + 2 + 3, info
    assert info["groups"] == 1
    groups = r.xinfo_groups("jobs")
    assert groups[0]["name"] == b"workers" and groups[0]["pending"] == 0, groups
    assert groups[0]["lag"] == 0, groups
    consumers = {c["name"] for c in r.xinfo_consumers("jobs", "workers")}
    assert consumers == {b"crasher", b"rescuer", b"w0", b"w1", b"w2"}, consumers
    assert r.xtrim("jobs", maxlen=5) == 300
    assert r.xlen("jobs") == 5


def blocking_xread(ports, protocol):
    import redis

    r = redis.Redis(port=ports[0], protocol=protocol)
    r.delete("feed")
    r.xadd("feed", {"old": "1"}, id="1-0")
    result = {}

    def reader():
        c = redis.Redis(port=ports[0], protocol=protocol)
        result["r"] = c.xread({"feed": "$"}, block=10000)

    t = threading.Thread(target=reader)
    t.start()
    while int(r.info("clients")["blocked_clients"]) < 1:
        pass
    r.xadd("feed", {"new": "2"}, id="2-0")
    t.join(10)
    got = result["r"]
    assert entries_of(got, b"feed", protocol) == [(b"2-0", {b"new": b"2"})], got
    assert r.xread({"feed": "2-0"}, block=50) in ([], {}, None), "timeout must be empty"


SCENARIOS = {
    "work_queue": lambda ports: work_queue(ports, 2),
    "work_queue_resp3": lambda ports: work_queue(ports, 3),
    "blocking_xread": lambda ports: blocking_xread(ports, 2),
    "blocking_xread_resp3": lambda ports: blocking_xread(ports, 3),
}

if __name__ == "__main__":
    name = sys.argv[1]
    ports = [int(p) for p in sys.argv[2:]]
    SCENARIOS[name](ports)
    print(f"ok {name}")
