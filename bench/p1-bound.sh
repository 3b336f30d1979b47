#!/usr/bin/env bash
# What bounds plain commands at -P 1 on this machine: tumbler vs redis-server.
#
#   bash bench/p1-bound.sh [rounds]      # default 3 rounds
#   PIPELINE=16 bash bench/p1-bound.sh   # the same at -P 16 (600,000 requests per run)
#
# redis-benchmark, 50 clients, -P 1 (or PIPELINE), keys from 1M (after 300,000 SETs at
# -P 16, not timed), the two servers in turn within each round. For each run it prints the
# throughput, redis-benchmark's own CPU (user + system over wall time, from getrusage),
# the server's CPU over the same wall time, and the server's user and system time per
# request (/proc/PID/stat, clock ticks). A client near 100 % of one CPU is the bound on
# throughput, whichever server answers; the server's system time is the part of its CPU
# no user-space change removes. TUMBLER_BIN picks the binary (default: the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
. bench/lib.sh
tumbler=$(bench_tumbler)
bench_need redis-server redis-benchmark

exec python3 - "$tumbler" "$rounds" "${PIPELINE:-1}" <<'PY'
import os, resource, socket, statistics, subprocess, sys, time

tumbler, rounds, PIPE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
N = 150_000 if PIPE == "1" else 600_000
CASES = ["get", "set", "incr", "ping_mbulk"]
TICK = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p

def start(argv):
    port = free_port()
    p = subprocess.Popen(argv + ["--port", str(port)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(100):
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True)
        if r.stdout.strip() == b"PONG":
            return p, port
        time.sleep(0.05)
    p.kill()
    sys.exit(f"server did not start: {argv}")

def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]), int(f[12])  # utime, stime of every thread, exited ones included

def bench(port, case):
    args = ["redis-benchmark", "-p", str(port), "-t", case, "-r", "1000000", "-n", str(N),
            "-P", PIPE, "-c", "50", "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / wall
    rps = float(out.rsplit("requests per second", 1)[0].split()[-1])
    return rps, client, wall

servers = {
    "tumbler": start([tumbler]),
    "redis": start(["redis-server", "--save", "", "--appendonly", "no"]),
}
try:
    for _, port in servers.values():
        subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-r", "1000000",
                        "-n", "300000", "-P", "16", "-c", "50", "-q"], capture_output=True)
    rows = {}
    print("round case       server   rps     client_cpu server_cpu user_us/req sys_us/req")
    for r in range(rounds):
        for case in CASES:
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for name in order:
                proc, port = servers[name]
                u0, s0 = ticks(proc.pid)
                rps, client, wall = bench(port, case)
                u1, s1 = ticks(proc.pid)
                user = (u1 - u0) / TICK
                sys_ = (s1 - s0) / TICK
                row = (rps, client, (user + sys_) / wall, user / N * 1e6, sys_ / N * 1e6)
                rows.setdefault((case, name), []).append(row)
                print(f"{r + 1:<5} {case:<10} {name:<8} {rps:>7.0f} {client:>10.0%} "
                      f"{row[2]:>10.0%} {row[3]:>11.2f} {row[4]:>10.2f}", flush=True)
    print()
    print("medians (min-max) over the rounds")
    print("case       server   client_cpu       server_cpu       user_us/req        sys_us/req")
    fmt = lambda v, f: f"{statistics.median(v):{f}} ({min(v):{f}}-{max(v):{f}})"
    for case in CASES:
        for name in servers:
            v = list(zip(*rows[(case, name)]))
            print(f"{case:<10} {name:<8} {fmt(v[1], '.0%'):<16} {fmt(v[2], '.0%'):<16} "
                  f"{fmt(v[3], '.2f'):<18} {fmt(v[4], '.2f')}")
finally:
    for proc, _ in servers.values():
        proc.terminate()
        proc.wait()
PY
