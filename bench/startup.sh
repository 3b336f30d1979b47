#!/usr/bin/env bash
# Startup and footprint: tumbler vs redis-server, side by side in the same run.
#
#   bash bench/startup.sh [runs]        # default 30 startup runs per server
#
# Measures, for each server:
#   - startup: exec -> first +PONG on a fresh TCP connection (median / p90 of `runs`),
#   - RSS idle (fresh server, one client),
#   - RSS after 100k string keys (SET key:N <16-byte value>, pipelined),
#   - RSS after 10k held Redisson-style locks (HSET lock:N <uuid>:<thread> 1 + PEXPIRE 30000),
#   - tumbler only: RSS after 10k held native locks (LOCK.ACQUIRE lock:N <uuid> 30000),
# and prints the tumbler/redis ratios. TUMBLER_BIN picks the binary (default: the release
# build, built if missing); REDIS_SERVER the reference (default: redis-server on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
. bench/lib.sh
tumbler=$(bench_tumbler)
redis=${REDIS_SERVER:-redis-server}
bench_need "$redis"

exec python3 - "$runs" "$tumbler" "$(command -v "$redis")" <<'PY'
import os, socket, statistics, subprocess, sys, time

runs, tumbler, redis = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def argv(kind, port):
    if kind == "tumbler":
        return [tumbler, "--port", str(port), "--loglevel", "warning"]
    return [redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--loglevel", "warning"]

def start(kind):
    """Starts a server; returns (proc, port, seconds from exec to first PONG)."""
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen(argv(kind, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = t0 + 10
    while time.perf_counter() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                dt = time.perf_counter() - t0
                s.close()
                return p, port, dt
            s.close()
        except OSError:
            pass
        time.sleep(0.0002)
    p.kill(); raise SystemExit(f"{kind} did not start")

def stop(p):
    p.terminate()
    try: p.wait(5)
    except subprocess.TimeoutExpired: p.kill(); p.wait()

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

def load(port, payload, replies):
    """Sends a pipelined payload and waits until `replies` replies (all simple) arrive."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    got, buf = 0, b""
    while got < replies:
        chunk = s.recv(1 << 20)
        if not chunk: raise SystemExit("connection closed while loading")
        if b"\n-" in b"\n" + chunk:
            raise SystemExit("error reply while loading: %r" % chunk[:200])
        got += chunk.count(b"\n")  # one per simple reply; never split across chunks
    s.close()

def keys_payload(n):
    return b"".join(cmd("SET", f"key:{i:08d}", "v" * 16) for i in range(n))

def locks_payload(n):
    return b"".join(cmd("HSET", f"lock:{i}", f"6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b{i:04x}:1", 1)
                    + cmd("PEXPIRE", f"lock:{i}", 30000) for i in range(n))

def native_locks_payload(n):
    return b"".join(cmd("LOCK.ACQUIRE", f"lock:{i}", f"6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b{i:04x}:1", 30000)
                    for i in range(n))

def settle(pid):
    time.sleep(0.3)
    return rss_kib(pid)

res = {}
for kind in ("tumbler", "redis"):
    r = {}
    times = []
    for i in range(runs):
        p, port, dt = start(kind)
        times.append(dt * 1000)
        stop(p)
    times.sort()
    r["startup_median_ms"] = statistics.median(times)
    r["startup_p90_ms"] = times[int(len(times) * 0.9) - 1]
    p, port, _ = start(kind)
    r["rss_idle_kib"] = settle(p.pid)
    load(port, keys_payload(100_000), 100_000)
    r["rss_100k_keys_kib"] = settle(p.pid)
    stop(p)
    p, port, _ = start(kind)
    base = settle(p.pid)
    load(port, locks_payload(10_000), 20_000)
    r["rss_10k_locks_kib"] = settle(p.pid)
    r["rss_10k_locks_delta_kib"] = r["rss_10k_locks_kib"] - base
    stop(p)
    if kind == "tumbler":
        p, port, _ = start(kind)
        base = settle(p.pid)
        load(port, native_locks_payload(10_000), 10_000)
        native = settle(p.pid)
        r_native = (native, native - base)
        stop(p)
    res[kind] = r

print(f"startup/footprint, {runs} startup runs each; tumbler={tumbler}")
print(f"{'metric':28} {'tumbler':>12} {'redis-server':>14} {'ratio t/r':>10}")
for k in res["tumbler"]:
    t, r = res["tumbler"][k], res["redis"][k]
    ratio = t / r if r else float("nan")
    fmt = "{:12.2f}" if "ms" in k else "{:12d}"
    print(f"{k:28} {fmt.format(t)} {fmt.format(r):>14} {ratio:10.2f}")
print(f"{'rss_10k_native_locks_kib':28} {r_native[0]:12d} {'-':>14} {'':>10}"
      f"   (delta {r_native[1]} KiB; LOCK.ACQUIRE, no Redis equivalent)")
size = os.path.getsize(tumbler)
print(f"tumbler binary: {size} bytes ({size / 1048576:.2f} MiB); "
      f"redis-server binary: {os.path.getsize(redis)} bytes (dynamically linked)")
PY
