"""Python helpers for the bench scripts that drive servers from Python (bench/snapshot.sh,
bench/memory.sh): RESP encoding, a free port, and a server process with one connection,
its CPU time, RSS and `redis-cli --pipe` loading. The scripts run from the repository root
and import it with `sys.path.insert(0, "bench")`."""

import os, socket, subprocess, time


def resp(*args):
    """One command as RESP: an array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    """`binary --port P args...` in the background, with one connection to it."""

    def __init__(self, binary, *args, kind=""):
        self.kind, self.port = kind, free_port()
        self.p = subprocess.Popen([binary, "--port", str(self.port), *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.s = socket.create_connection(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.05)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        """Sends a command; returns a bulk string's bytes (None for nil), or a simple
        string's or an integer's text as bytes. An error reply raises."""
        self.s.sendall(resp(*args))
        line = self.f.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if line[:1] == b"-":
            raise RuntimeError(line.decode().strip())
        return line[1:].strip()

    def cpu_ns(self):
        """The server's CPU time: its threads' schedstat run time (ns resolution)."""
        total = 0
        for t in os.listdir("/proc/%d/task" % self.p.pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (self.p.pid, t)) as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
        return total

    def rss(self):
        """Resident set size in bytes."""
        with open("/proc/%d/status" % self.p.pid) as f:
            for l in f:
                if l.startswith("VmRSS:"):
                    return int(l.split()[1]) * 1024

    def pipe(self, path):
        """Sends the RESP commands in `path` through `redis-cli --pipe`; none may fail."""
        with open(path, "rb") as f:
            r = subprocess.run(["redis-cli", "-p", str(self.port), "--pipe"], stdin=f,
                               capture_output=True, text=True)
        assert "errors: 0" in r.stdout, r.stdout + r.stderr

    def stop(self):
        self.p.kill()
        self.p.wait()
