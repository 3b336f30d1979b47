#!/usr/bin/env bash
# Bytes per key, tumbler against redis-server, side by side in one run (issue 40).
#
#   bash bench/memory.sh [rows-regex]
#
# For each row: a fresh server of each kind, N keys of one shape written with
# `redis-cli --pipe`, then the growth of INFO used_memory and of the process' RSS divided
# by N, and the mean MEMORY USAGE of 200 sampled keys (what each server says a key costs,
# to set against what its allocator shows). Prints a table with the tumbler/redis ratios.
# TUMBLER_BIN picks the binary (default: the release build); REDIS_SERVER the reference.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
tumbler=$(bench_tumbler)
redis=${REDIS_SERVER:-redis-server}
bench_need "$redis" redis-cli

exec python3 - "${1:-.}" "$tumbler" "$(command -v "$redis")" <<'PY'
import os, re, sys, tempfile, time
sys.path.insert(0, "bench")
from benchlib import Server, resp

pattern, tumbler, redis = re.compile(sys.argv[1]), sys.argv[2], sys.argv[3]
tmp = tempfile.mkdtemp(prefix="membench.")

def uuid(i):
    return "%08x-1a2b-4c3d-8e9f-%012x" % (i * 2654435761 % (1 << 32), i)

# name, keys, commands for key i
ROWS = [
    ("string SET key:%012d value-%d", 100000,
     lambda i: [("SET", "key:%012d" % i, "value-%d" % i)]),
    ("string of 200 bytes", 50000,
     lambda i: [("SET", "sv:%d" % i, "x" * 200)]),
    ("string of 1000 bytes", 20000,
     lambda i: [("SET", "sv:%d" % i, "x" * 1000)]),
    ("hash, 3 short fields", 100000,
     lambda i: [("HSET", "h:%d" % i, "a", "1", "b", "2", "c", "3")]),
    ("Redisson lock hash with PEXPIRE", 100000,
     lambda i: [("HSET", "lock:%d" % i, uuid(i) + ":1", "1"), ("PEXPIRE", "lock:%d" % i, "3600000")]),
    ("zset, 5 members", 100000,
     lambda i: [("ZADD", "z:%d" % i, "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")]),
    ("list, 5 short items", 100000,
     lambda i: [("RPUSH", "l:%d" % i, "a", "b", "c", "d", "e")]),
    ("set, 5 short strings", 100000,
     lambda i: [("SADD", "s:%d" % i, "alpha", "beta", "gamma", "delta", "epsilon")]),
    ("set, 5 small integers", 100000,
     lambda i: [("SADD", "si:%d" % i, "1", "2", "3", "4", "5")]),
    ("zset, 200 members", 2000,
     lambda i: [("ZADD", "zb:%d" % i, *sum(([str(j), "member-%d" % j] for j in range(200)), []))]),
    ("list, 200 items", 2000,
     lambda i: [("RPUSH", "lb:%d" % i, *["item-%d" % j for j in range(200)])]),
    ("set, 200 strings", 2000,
     lambda i: [("SADD", "sb:%d" % i, *["member-%d" % j for j in range(200)])]),
    ("hash, 200 fields", 2000,
     lambda i: [("HSET", "hb:%d" % i, *sum((["field-%d" % j, "value-%d" % j] for j in range(200)), []))]),
    ("hash, 1000 fields (hashtable)", 500,
     lambda i: [("HSET", "hh:%d" % i, *sum((["field-%d" % j, "value-%d" % j] for j in range(1000)), []))]),
    ("stream, 10 entries", 20000,
     lambda i: [("XADD", "x:%d" % i, "*", "f", str(j)) for j in range(10)]),
    ("HyperLogLog, 100 elements", 20000,
     lambda i: [("PFADD", "hll:%d" % i, *["e%d" % j for j in range(100)])]),
    ("geo, 10 members", 20000,
     lambda i: [("GEOADD", "g:%d" % i, *sum(([str(13 + j / 100), str(38 + j / 100), "p%d" % j] for j in range(10)), []))]),
]

def mixed(i):
    k = i % 5
    if k == 0:
        return [("SET", "m:%d" % i, "value-%d" % i)]
    if k == 1:
        return [("HSET", "m:%d" % i, "a", "1", "b", "2")]
    if k == 2:
        return [("ZADD", "m:%d" % i, "1", "a", "2", "b")]
    if k == 3:
        return [("RPUSH", "m:%d" % i, "a", "b", "c")]
    return [("SADD", "m:%d" % i, "1", "2", "3")]

ROWS.append(("1M mixed keys (string, hash, zset, list, set)", 1000000, mixed))

def used(s):
    return int(re.search(r"used_memory:(\d+)", s.cmd("INFO", "memory").decode()).group(1))

def measure(binary, path, n, first_key_of):
    s = Server(binary, "--save", "", "--appendonly", "no", "--dir", tmp)
    time.sleep(0.2)
    u0, r0 = used(s), s.rss()
    s.pipe(path)
    time.sleep(0.5)
    u1, r1 = used(s), s.rss()
    step = max(1, n // 200)
    sample = [first_key_of(i) for i in range(0, n, step)][:200]
    usage = sum(int(s.cmd("MEMORY", "USAGE", k)) for k in sample) / len(sample)
    enc = s.cmd("OBJECT", "ENCODING", sample[0]).decode()
    s.stop()
    return (u1 - u0) / n, (r1 - r0) / n, usage, enc

print("%-46s %9s %9s %9s %9s  %7s %7s  %9s %9s  %s" % (
    "value", "t used", "r used", "t RSS", "r RSS", "used x", "RSS x", "t MEMUSE", "r MEMUSE", "encoding t / r"))
for name, n, make in ROWS:
    if not pattern.search(name):
        continue
    path = os.path.join(tmp, "row.resp")
    with open(path, "wb") as f:
        buf = []
        for i in range(n):
            for c in make(i):
                buf.append(resp(*c))
            if len(buf) >= 10000:
                f.write(b"".join(buf)); buf = []
        f.write(b"".join(buf))
    key_of = lambda i: make(i)[0][1]
    t = measure(tumbler, path, n, key_of)
    r = measure(redis, path, n, key_of)
    print("%-46s %9.0f %9.0f %9.0f %9.0f  %6.2fx %6.2fx  %9.0f %9.0f  %s / %s" % (
        name, t[0], r[0], t[1], r[1], t[0] / r[0], t[1] / r[1], t[2], r[2], t[3], r[3]))
    sys.stdout.flush()
    os.remove(path)
for f in os.listdir(tmp):
    os.remove(os.path.join(tmp, f))
os.rmdir(tmp)
PY
