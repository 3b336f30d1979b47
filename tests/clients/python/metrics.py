"""Scrapes tumbler's /metrics with Prometheus' own Python parser while a scripted lock
contention scenario runs, and checks that each counter moves as the scenario dictates.

The endpoint serves OpenMetrics text (Content-Type application/openmetrics-text), so this
uses prometheus_client's OpenMetrics parser, the strict one: it rejects a missing `# EOF`,
misnamed counter samples, unordered or inconsistent histogram buckets.

    python metrics.py <redis port> <metrics port>

The server runs with --enable-time-control yes (a lease lapses through TUMBLER.TIME
ADVANCE). Prints "ok metrics" on success; any failure raises.
"""

import sys
import threading
import time
import urllib.request

import redis
from prometheus_client.openmetrics.parser import text_string_to_metric_families


def scrape(mport):
    with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
        text = resp.read().decode()
    samples = {}
    families = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = fam.type
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return families, samples


def value(samples, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    assert key in samples, f"no sample {key}; have {sorted(k for k in samples if k[0].startswith(name))}"
    return samples[key]


def lock_waiters(r, key):
    info = r.execute_command("LOCK.INFO", key)  # a map: a dict over RESP3, a list over RESP2
    return info["waiters"] if isinstance(info, dict) else info[info.index("waiters") + 1]


def wait_for(cond, what, timeout=10):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def main(port, mport):
    r = redis.Redis(port=port, decode_responses=True)
    fams, before = scrape(mport)
    for name, typ in [
        ("tumbler_connected_clients", "gauge"),
        ("tumbler_commands_processed", "counter"),
        ("tumbler_keyspace_hits", "counter"),
        ("tumbler_keyspace_misses", "counter"),
        ("tumbler_expired_keys", "counter"),
        ("tumbler_evicted_keys", "counter"),
        ("tumbler_memory_used_bytes", "gauge"),
        ("tumbler_locks_held", "gauge"),
        ("tumbler_lock_waiters", "gauge"),
        ("tumbler_lock_grants", "counter"),
        ("tumbler_lock_releases", "counter"),
        ("tumbler_lock_expiries", "counter"),
        ("tumbler_lock_fencing_rejections", "counter"),
        ("tumbler_lock_handoff_seconds", "histogram"),
        ("tumbler_lock_wait_seconds", "histogram"),
        ("tumbler_busy_scripts", "gauge"),
    ]:
        assert fams.get(name) == typ, f"{name}: {fams.get(name)} (want {typ})"
    assert value(before, "tumbler_memory_used_bytes") > 0
    assert value(before, "tumbler_locks_held", kind="lock") == 0
    assert value(before, "tumbler_lock_grants_total", kind="lock") == 0

    # Keyspace counters and per-command stats.
    r.set("k", "v")
    r.get("k")
    r.get("missing")
    _, s = scrape(mport)
    assert value(s, "tumbler_keyspace_hits_total") == value(before, "tumbler_keyspace_hits_total") + 1
    assert value(s, "tumbler_keyspace_misses_total") == value(before, "tumbler_keyspace_misses_total") + 1
    assert value(s, "tumbler_command_calls_total", cmd="get") == 2
    assert value(s, "tumbler_command_calls_total", cmd="set") == 1
    assert value(s, "tumbler_command_duration_seconds_total", cmd="get") >= 0
    assert value(s, "tumbler_connected_clients") >= 1

    # Contention: a holds the lock, b and c queue behind it.
    token_a = r.execute_command("LOCK.ACQUIRE", "orders", "a", 30_000)
    got = {}

    def wait(owner):
        c = redis.Redis(port=port, decode_responses=True)
        got[owner] = c.execute_command("LOCK.ACQUIRE", "orders", owner, 30_000, "WAIT", 60_000)

    tb = threading.Thread(target=wait, args=("b",))
    tb.start()
    wait_for(lambda: lock_waiters(r, "orders") == 1, "b to queue")
    tc = threading.Thread(target=wait, args=("c",))
    tc.start()
    wait_for(lambda: lock_waiters(r, "orders") == 2, "c to queue")
    _, s = scrape(mport)
    assert value(s, "tumbler_locks_held", kind="lock") == 1
    assert value(s, "tumbler_lock_waiters") == 2
    assert value(s, "tumbler_lock_grants_total", kind="lock") == 1
    assert value(s, "tumbler_blocked_clients") == 2

    # a releases: b gets it in the same step (one hand-off, one finished wait).
    assert r.execute_command("LOCK.RELEASE", "orders", "a") == 0
    tb.join(10)
    assert got["b"] > token_a
    _, s = scrape(mport)
    assert value(s, "tumbler_lock_releases_total", kind="lock") == 1
    assert value(s, "tumbler_lock_grants_total", kind="lock") == 2
    assert value(s, "tumbler_lock_waiters") == 1
    assert value(s, "tumbler_lock_handoff_seconds_count") == 1
    assert value(s, "tumbler_lock_wait_seconds_count") == 1
    assert value(s, "tumbler_lock_wait_seconds_bucket", le="+Inf") == 1

    # b stalls past its 30 s lease: it expires and c is granted.
    r.execute_command("TUMBLER.TIME", "ADVANCE", 30_001)
    tc.join(10)
    assert got["c"] > got["b"]
    _, s = scrape(mport)
    assert value(s, "tumbler_lock_expiries_total", kind="lock") == 1
    assert value(s, "tumbler_lock_grants_total", kind="lock") == 3
    assert value(s, "tumbler_lock_waiters") == 0
    assert value(s, "tumbler_lock_handoff_seconds_count") == 2
    assert value(s, "tumbler_lock_wait_seconds_count") == 2
    assert value(s, "tumbler_locks_held", kind="lock") == 1

    # The stale holders' tokens are refused.
    try:
        r.execute_command("FENCE.SET", "invoice", "x", "orders", token_a)
        raise AssertionError("a stale token wrote")
    except redis.ResponseError:
        pass
    assert r.execute_command("LOCK.CHECK", "orders", got["b"]) == 0
    assert r.execute_command("LOCK.CHECK", "orders", got["c"]) == 1
    _, s = scrape(mport)
    assert value(s, "tumbler_lock_fencing_rejections_total", command="fence.set") == 1
    assert value(s, "tumbler_lock_fencing_rejections_total", command="lock.check") == 1

    # A semaphore and an RW lock are counted under their own kinds.
    r.execute_command("SEM.ACQUIRE", "pool", "x", 2, 30_000)
    r.execute_command("RW.RLOCK", "doc", "reader", 30_000)
    _, s = scrape(mport)
    assert value(s, "tumbler_locks_held", kind="semaphore") == 1
    assert value(s, "tumbler_locks_held", kind="rwlock") == 1
    assert value(s, "tumbler_lock_grants_total", kind="semaphore") == 1
    assert value(s, "tumbler_lock_grants_total", kind="rwlock") == 1
    assert value(s, "tumbler_command_calls_total", cmd="lock.acquire") == 3
    assert value(s, "tumbler_busy_scripts") == 0
    print("ok metrics")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
