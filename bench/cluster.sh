#!/usr/bin/env bash
# One process, many nodes (docs/cluster.md): startup, footprint, and the cost of slot checks.
#
#   bash bench/cluster.sh [runs] [requests]     # defaults: 30 startup runs, 200000 requests
#
# Measures:
#   - startup of a 3-node cluster: exec -> every node has answered PING on a fresh
#     connection (fixed consecutive ports, so no port line is needed; median / p90),
#   - RSS idle of 1, 3 and 6 nodes (cluster mode for 3 and 6; 6 = 3 primaries + 3 replicas)
#     and of 3 independent nodes,
#   - one-node throughput with cluster mode on vs off: redis-benchmark SET and GET with keys
#     from a 1M keyspace (-r 1000000), 50 clients, -P 1 and -P 16, rounds interleaved
#     (off, on, off, on, ...); a 1-node cluster owns every slot, so every command pays the
#     slot check and none is redirected. Reports the median on/off ratio per cell.
# TUMBLER_BIN picks the binary (default: the release build, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
requests=${2:-200000}
. bench/lib.sh
tumbler=$(bench_tumbler)
bench_need redis-benchmark

exec python3 - "$runs" "$requests" "$tumbler" <<'PY'
import os, socket, statistics, subprocess, sys, time

runs, requests, tumbler = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def free_base(n):
    """A port P with P..P+n-1 free."""
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
        if p + n > 65535:
            continue
        ok = True
        for i in range(n):
            t = socket.socket()
            try:
                t.bind(("127.0.0.1", p + i))
            except OSError:
                ok = False
            t.close()
        if ok:
            return p

def ping(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.sendall(b"PING\r\n")
        ok = s.recv(16).startswith(b"+PONG")
        s.close()
        return ok
    except OSError:
        return False

def start(n, extra):
    base = free_base(n)
    t0 = time.perf_counter()
    p = subprocess.Popen([tumbler, "--port", str(base), "--nodes", str(n), "--loglevel", "warning"] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pending = set(range(base, base + n))
    deadline = t0 + 10
    while pending and time.perf_counter() < deadline:
        for port in list(pending):
            if ping(port):
                pending.discard(port)
        if pending:
            time.sleep(0.0002)
    if pending:
        p.kill(); raise SystemExit("nodes did not start")
    return p, base, time.perf_counter() - t0

def stop(p):
    p.terminate()
    try: p.wait(5)
    except subprocess.TimeoutExpired: p.kill(); p.wait()

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

times = []
for _ in range(runs):
    p, _, dt = start(3, ["--cluster-enabled", "yes"])
    times.append(dt * 1000)
    stop(p)
times.sort()
print(f"startup, 3-node cluster (exec -> all 3 answer PING), {runs} runs: "
      f"median {statistics.median(times):.2f} ms, p90 {times[int(len(times) * 0.9) - 1]:.2f} ms")

for label, n, extra in [("1 node", 1, []),
                        ("3 independent nodes", 3, []),
                        ("3-node cluster", 3, ["--cluster-enabled", "yes"]),
                        ("6-node cluster (3 primaries + 3 replicas)", 6, ["--cluster-enabled", "yes", "--cluster-replicas", "1"])]:
    p, base, _ = start(n, extra)
    for i in range(n):
        ping(base + i)
    time.sleep(0.2)
    print(f"RSS idle, {label}: {rss_kib(p.pid) / 1024:.1f} MiB")
    stop(p)

def cpu_ns(pid):
    """Each live thread's CPU time so far in ns (schedstat), by thread id."""
    times = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                times[t] = int(f.read().split()[0])
        except OSError:
            pass
    return times

def cpu_s(before, after):
    """CPU seconds between two cpu_ns readings, per thread: a thread that exits in between
    drops out rather than taking its past run time out of the sum."""
    return sum(ns - before.get(t, 0) for t, ns in after.items()) / 1e9

def bench(pid, port, test, pipeline):
    """(requests/s, server CPU µs per request)."""
    c0 = cpu_ns(pid)
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", test, "-n", str(requests), "-c", "50",
                          "-P", str(pipeline), "-r", "1000000", "-q", "--csv"],
                         capture_output=True, text=True, timeout=300).stdout
    cpu = cpu_s(c0, cpu_ns(pid)) * 1e6 / requests
    for line in out.splitlines():
        parts = [x.strip('"') for x in line.split(",")]
        if parts and parts[0] == test.upper():
            return float(parts[1]), cpu
    raise SystemExit(f"no result: {out}")

rounds = int(os.environ.get("ROUNDS", "7"))
cells = [("set", 1), ("get", 1), ("set", 16), ("get", 16)]
raw = {c: {"off": [], "on": [], "cpu_off": [], "cpu_on": []} for c in cells}
servers = {}
for mode, extra in [("off", []), ("on", ["--cluster-enabled", "yes"])]:
    p, base, _ = start(1, extra)
    servers[mode] = (p, base)
for r in range(rounds):
    for c in cells:
        # Alternate which mode goes first, so a drift in machine load does not favour one.
        for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
            p, base = servers[mode]
            rps, cpu = bench(p.pid, base, *c)
            raw[c][mode].append(rps)
            raw[c]["cpu_" + mode].append(cpu)
for p, _ in servers.values():
    stop(p)
print(f"\none-node, cluster on / off ({rounds} interleaved rounds, {requests} requests, 50 clients, -r 1000000):")
for c in cells:
    d = raw[c]
    ratios = sorted(a / b for a, b in zip(d["on"], d["off"]))
    cpu_ratios = sorted(a / b for a, b in zip(d["cpu_on"], d["cpu_off"]))
    print(f"  {c[0].upper():3} -P {c[1]:2}: throughput off {statistics.median(d['off']):>9,.0f}/s on {statistics.median(d['on']):>9,.0f}/s"
          f" ratio {statistics.median(ratios):.3f} ({ratios[0]:.2f}..{ratios[-1]:.2f});"
          f" server CPU off {statistics.median(d['cpu_off']):.2f} us/req on {statistics.median(d['cpu_on']):.2f} us/req"
          f" ratio {statistics.median(cpu_ratios):.3f} ({cpu_ratios[0]:.2f}..{cpu_ratios[-1]:.2f})")
PY
