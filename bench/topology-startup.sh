#!/usr/bin/env bash
# Start-up of a sentinel topology: 1 primary, 2 replicas and 3 sentinels, tumbler (one
# process: --replicas 2 --sentinels 3) against redis-server (six processes: a primary, two
# --replicaof replicas, three `redis-server conf --sentinel`), side by side in one run.
#
#   bash bench/topology-startup.sh [runs]      # default 10 runs per side
#
# "Ready" is what a sentinel client needs: both replicas report master_link_status:up, and
# every sentinel answers GET-MASTER-ADDR-BY-NAME with the primary, lists both replicas
# (SENTINEL REPLICAS, not s_down) and knows the two other sentinels (SENTINEL SENTINELS).
# Prints the median and p90 of exec-to-ready per side and their ratio. TUMBLER_BIN picks the
# binary (default: the release build, built if missing); REDIS_SERVER the reference.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
. bench/lib.sh
tumbler=$(bench_tumbler)
redis=${REDIS_SERVER:-redis-server}
bench_need "$redis"

exec python3 - "$runs" "$tumbler" "$(command -v "$redis")" <<'PY'
import os, re, socket, statistics, subprocess, sys, tempfile, time

runs, tumbler, redis = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks: s.close()
    return ports

def cmd(port, *args):
    """One command on a fresh connection; the raw reply text, or None."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
    except OSError:
        return None
    try:
        out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
        s.sendall(out)
        s.settimeout(1)
        data = b""
        while True:
            time.sleep(0.0005)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk: break
            data += chunk
            if len(chunk) < 65536: break
        return data.decode(errors="replace")
    except OSError:
        return None
    finally:
        s.close()

def ready(primary, replicas, sentinels):
    for r in replicas:
        info = cmd(r, "INFO", "replication")
        if not info or "master_link_status:up" not in info: return False
    for s in sentinels:
        a = cmd(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
        if not a or f"\r\n{primary}\r\n" not in a: return False
        reps = cmd(s, "SENTINEL", "REPLICAS", "mymaster")
        if not reps or not reps.startswith("*2\r\n") or "s_down" in reps: return False
        sens = cmd(s, "SENTINEL", "SENTINELS", "mymaster")
        if not sens or not sens.startswith("*2\r\n"): return False
    return True

def wait_ready(procs, primary, replicas, sentinels, t0, limit=60):
    while time.perf_counter() - t0 < limit:
        if ready(primary, replicas, sentinels):
            return time.perf_counter() - t0
        time.sleep(0.001)
    for p in procs: p.kill()
    raise SystemExit("topology not ready within %ds" % limit)

def run_tumbler():
    t0 = time.perf_counter()
    p = subprocess.Popen([tumbler, "--port", "0", "--replicas", "2", "--sentinels", "3",
                          "--loglevel", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ports = {}
    sent = []
    while len(ports) < 3 or len(sent) < 3:
        line = p.stdout.readline()
        if not line: raise SystemExit("tumbler exited")
        m = re.search(r"port=(\d+) node=(\d+)", line)
        if m: ports[int(m.group(2))] = int(m.group(1))
        m = re.search(r"port=(\d+) sentinel=", line)
        if m: sent.append(int(m.group(1)))
    dt = wait_ready([p], ports[0], [ports[1], ports[2]], sent, t0)
    p.terminate(); p.wait(5)
    return dt

def run_redis():
    d = tempfile.mkdtemp(prefix="topo-")
    pp, r1, r2, s1, s2, s3 = free_ports(6)
    base = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--loglevel", "warning", "--repl-diskless-sync-delay", "0"]
    procs = []
    t0 = time.perf_counter()
    procs.append(subprocess.Popen([redis, "--port", str(pp)] + base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for r in (r1, r2):
        procs.append(subprocess.Popen([redis, "--port", str(r), "--replicaof", "127.0.0.1", str(pp)] + base,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for s in (s1, s2, s3):
        conf = os.path.join(d, f"s{s}.conf")
        with open(conf, "w") as f:
            f.write(f"port {s}\nbind 127.0.0.1\ndir {d}\nloglevel warning\n"
                    f"sentinel monitor mymaster 127.0.0.1 {pp} 2\n"
                    "sentinel down-after-milliseconds mymaster 5000\n")
        procs.append(subprocess.Popen([redis, conf, "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    dt = wait_ready(procs, pp, [r1, r2], [s1, s2, s3], t0)
    for p in procs: p.terminate()
    for p in procs: p.wait(5)
    return dt

def stats(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.9))]

t, r = [], []
for i in range(runs):
    t.append(run_tumbler())
    r.append(run_redis())
tm, tp = stats(t)
rm, rp = stats(r)
print(f"# bench/topology-startup.sh, {runs} runs per side, 1 primary + 2 replicas + 3 sentinels, exec to ready")
print(f"tumbler (1 process)       median {tm*1000:9.1f} ms  p90 {tp*1000:9.1f} ms")
print(f"redis-server (6 processes) median {rm*1000:9.1f} ms  p90 {rp*1000:9.1f} ms")
print(f"ratio tumbler/redis (median) {tm/rm:.4f}")
PY
