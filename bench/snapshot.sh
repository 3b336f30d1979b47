#!/usr/bin/env bash
# Resetting a seeded keyspace between tests: TUMBLER.SNAPSHOT RESTORE against FLUSHALL plus
# re-seeding, side by side in one run (docs/snapshots.md).
#
#   bash bench/snapshot.sh [rounds]        # default 3 rounds
#
# The keyspace: KEYS (default 1,000,000) strings `key:%07d` -> `value-%d`, seeded with
# `redis-cli --pipe`. Per round, for each fraction of keys changed (1 % and 100 %, the
# changed keys spread over the whole keyspace, by SET of another value through
# `redis-cli --pipe`, not timed):
#   - tumbler: TUMBLER.SNAPSHOT RESTORE of the snapshot saved after seeding;
#   - tumbler and redis-server: FLUSHALL, then the seed again through `redis-cli --pipe`
#     (what a suite without snapshots pays), on a second tumbler, since a FLUSHALL on the
#     first would make its next restore a whole copy.
# Each is timed as wall time seen by the client and as the server's CPU time (the growth of
# its threads' /proc/PID/task/*/schedstat run time). Prints medians with min-max over the
# rounds, and the ratios. Also the cost of the SAVE itself and the servers' RSS.
# TUMBLER_BIN picks the binary (default: the release build); REDIS_SERVER the reference.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
. bench/lib.sh
tumbler=$(bench_tumbler)
redis=${REDIS_SERVER:-redis-server}
bench_need "$redis" redis-cli

exec python3 - "$rounds" "$tumbler" "$(command -v "$redis")" "${KEYS:-1000000}" <<'PY'
import os, random, statistics, sys, tempfile, time
sys.path.insert(0, "bench")
from benchlib import Server, resp

rounds, tumbler, redis, nkeys = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
tmp = tempfile.mkdtemp(prefix="snapbench.")

def write_sets(path, keys, tag):
    with open(path, "wb") as f:
        buf = []
        for i in keys:
            buf.append(resp("SET", "key:%07d" % i, "%s-%d" % (tag, i)))
            if len(buf) == 10000:
                f.write(b"".join(buf)); buf = []
        f.write(b"".join(buf))

seed = os.path.join(tmp, "seed.resp")
write_sets(seed, range(nkeys), "value")
fractions = [0.01, 1.0]
changes = {}
rng = random.Random(7)
for fr in fractions:
    n = int(nkeys * fr)
    keys = sorted(rng.sample(range(nkeys), n)) if fr < 1 else range(nkeys)
    changes[fr] = os.path.join(tmp, "change-%g.resp" % fr)
    write_sets(changes[fr], keys, "changed")

def timed(s, fn):
    """Wall time and the server's CPU time of fn(), in seconds."""
    c0, t0 = s.cpu_ns(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, (s.cpu_ns() - c0) / 1e9

def reload(s):
    s.cmd("FLUSHALL")
    s.pipe(seed)

# The restoring tumbler sees only the tests' writes and its restores, as in a suite; the
# FLUSHALL + reload runs on a second tumbler, since a FLUSHALL would make every restore
# after it a whole copy.
args = ["--save", "", "--appendonly", "no", "--dir", tmp]
t, t2, r = (Server(tumbler, *args, kind="tumbler"), Server(tumbler, *args, kind="tumbler"),
            Server(redis, *args, kind="redis"))
rows = {}
def add(name, v):
    rows.setdefault(name, []).append(v)

for s in (t, t2, r):
    s.pipe(seed)
    assert int(s.cmd("DBSIZE")) == nkeys
wall, cpu = timed(t, lambda: t.cmd("TUMBLER.SNAPSHOT", "SAVE", "seed"))
add("tumbler SNAPSHOT SAVE", (wall, cpu))
for rnd in range(rounds):
    for fr in fractions:
        t.pipe(changes[fr])
        add("tumbler RESTORE, %g%% changed" % (fr * 100),
            timed(t, lambda: t.cmd("TUMBLER.SNAPSHOT", "RESTORE", "seed")))
        assert t.cmd("GET", "key:%07d" % (nkeys - 1)) == b"value-%d" % (nkeys - 1)
        assert int(t.cmd("DBSIZE")) == nkeys
        for s in (t2, r):
            s.pipe(changes[fr])
            add("%s FLUSHALL + reload, %g%% changed" % (s.kind, fr * 100), timed(s, lambda: reload(s)))
            assert int(s.cmd("DBSIZE")) == nkeys
            assert s.cmd("GET", "key:%07d" % (nkeys - 1)) == b"value-%d" % (nkeys - 1)
    if rnd == 0:
        rss = (t.rss() / 2**20, r.rss() / 2**20)

def med(xs):
    return statistics.median(xs), min(xs), max(xs)

print("keys: %d strings; rounds: %d; tumbler %s, %s" % (nkeys, rounds, tumbler, redis))
print("RSS with the keys (tumbler also holds the snapshot): tumbler %.0f MB, redis %.0f MB" % rss)
print("%-42s %22s %22s" % ("operation", "wall ms (min-max)", "server CPU ms (min-max)"))
for name, vs in rows.items():
    w, c = med([v[0] * 1e3 for v in vs]), med([v[1] * 1e3 for v in vs])
    print("%-42s %8.1f (%.1f-%.1f) %10.1f (%.1f-%.1f)" % (name, *w, *c))
for fr in fractions:
    pct = "%g%% changed" % (fr * 100)
    rest = [v[0] for v in rows["tumbler RESTORE, " + pct]]
    for who in ("tumbler", "redis"):
        rl = [v[0] for v in rows["%s FLUSHALL + reload, %s" % (who, pct)]]
        ratios = [a / b for a, b in zip(rl, rest)]
        print("%s: %s FLUSHALL + reload takes %.0fx the wall time of a restore (%.0f-%.0f)"
              % (pct, who, *med(ratios)))
t.stop(); t2.stop(); r.stop()
for f in os.listdir(tmp):
    os.remove(os.path.join(tmp, f))
os.rmdir(tmp)
PY
