package io.tumbler.compat;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/** Starts tumbler and redis-server processes on free loopback ports. */
public final class Servers {
    private Servers() {}

    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final Pattern PORT_LINE = Pattern.compile("\\b(tls-)?port=(\\d+)");
    private static final long START_TIMEOUT_MS = 15_000;

    /** TUMBLER_SKIP_MISSING=1: a test whose server or tool is missing skips instead of failing. */
    public static boolean skipMissing() { return "1".equals(System.getenv("TUMBLER_SKIP_MISSING")); }

    /** A missing server or tool fails the test, or skips it under TUMBLER_SKIP_MISSING=1. */
    public static void require(boolean present, String what) {
        if (present) return;
        if (!skipMissing()) Assertions.fail("missing: " + what + " (TUMBLER_SKIP_MISSING=1 skips instead)");
        Assumptions.abort("missing: " + what + " (TUMBLER_SKIP_MISSING=1)");
    }

    public static Path workdir() {
        Path d = Path.of(System.getProperty("compat.workdir", "target/servers")).toAbsolutePath();
        try {
            Files.createDirectories(d);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
        return d;
    }

    public static Path tumblerBinary() {
        String env = System.getenv("TUMBLER_BINARY");
        String p = env != null && !env.isEmpty() ? env : System.getProperty("tumbler.binary", "../../target/release/tumbler");
        Path path = Path.of(p).toAbsolutePath().normalize();
        require(Files.isExecutable(path), "tumbler binary at " + path + " (set TUMBLER_BINARY)");
        return path;
    }

    public static String which(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(File.pathSeparator)) {
            Path p = Path.of(dir, tool);
            if (Files.isExecutable(p)) return p.toString();
        }
        return null;
    }

    public static String redisServerBinary() {
        String p = which("redis-server");
        require(p != null, "redis-server on PATH (apt-get install redis-server)");
        return p;
    }

    /**
     * The Redis 8.0 control for hash-field expiry scenarios: $REDIS8_SERVER, else redis8-server on
     * PATH (the wrapper /work/shared/refservers/install.sh makes; `source /work/tmp/env.sh`).
     */
    public static String redis8ServerBinary() {
        String env = System.getenv("REDIS8_SERVER");
        String p = env != null && !env.isEmpty() ? env : which("redis8-server");
        require(p != null && Files.isExecutable(Path.of(p)),
                "redis8-server on PATH or REDIS8_SERVER (Redis 8.0; scripts/ci/java-compat.sh says where from)");
        return p;
    }

    public static String redisCliBinary() {
        String p = which("redis-cli");
        require(p != null, "redis-cli on PATH (apt-get install redis-tools)");
        return p;
    }

    /** tumbler --port 0 ARGS; waits for `expected` plain-port lines (one per node). */
    public static ServerProc tumbler(int expected, String... args) {
        Path bin = tumblerBinary();
        List<String> cmd = new ArrayList<>();
        cmd.add(bin.toString());
        if (!Arrays.asList(args).contains("--port")) {
            cmd.add("--port");
            cmd.add("0");
        }
        cmd.addAll(Arrays.asList(args));
        int n = SEQ.incrementAndGet();
        Path out = workdir().resolve("tumbler-" + n + ".out");
        Process p = start(cmd, out);
        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        boolean wantTls = cmd.contains("--tls-port");
        while (true) {
            List<Integer> ports = new ArrayList<>(), tls = new ArrayList<>();
            try {
                for (String line : Files.readAllLines(out)) {
                    if (!line.contains("listening")) continue;
                    Matcher m = PORT_LINE.matcher(line);
                    while (m.find()) (m.group(1) != null ? tls : ports).add(Integer.parseInt(m.group(2)));
                }
            } catch (IOException ignored) {
                // not written yet
            }
            if (ports.size() >= expected && (!wantTls || tls.size() >= 1)) {
                ServerProc sp = new ServerProc("tumbler", p, List.copyOf(ports), List.copyOf(tls), out);
                for (int port : ports) waitPing(sp, port);
                return sp;
            }
            if (!p.isAlive() || System.currentTimeMillis() > deadline) {
                p.destroyForcibly();
                throw new IllegalStateException("tumbler did not start: " + cmd + "\n" + read(out));
            }
            sleep(10);
        }
    }

    /** One redis-server on a free port (and a free port+10000 for a cluster bus). */
    public static ServerProc redis(String... extra) {
        return redis(false, extra);
    }

    public static ServerProc redis(boolean cluster, String... extra) {
        return redisWith(redisServerBinary(), "redis-server", cluster, extra);
    }

    /** One redis8-server (Redis 8.0) on a free port. */
    public static ServerProc redis8(String... extra) {
        return redisWith(redis8ServerBinary(), "redis8-server", false, extra);
    }

    private static ServerProc redisWith(String bin, String name, boolean cluster, String... extra) {
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort(cluster);
            List<String> cmd = new ArrayList<>(List.of(bin, "--port", String.valueOf(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
                    "--dir", workdir().toString(),
                    // its own file: a replica stores the RDB of each full sync there, and a server
                    // started later in the same --dir would load it (and a cluster node refuse to join)
                    "--dbfilename", "dump-" + port + "-" + SEQ.incrementAndGet() + ".rdb"));
            if (cluster) {
                cmd.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file",
                        workdir().resolve("nodes-" + port + "-" + SEQ.incrementAndGet() + ".conf").toString(),
                        "--cluster-node-timeout", "5000"));
            }
            cmd.addAll(Arrays.asList(extra));
            Path out = workdir().resolve("redis-" + port + "-" + SEQ.incrementAndGet() + ".out");
            Process p = start(cmd, out);
            List<Integer> tls = new ArrayList<>();
            for (int i = 0; i + 1 < extra.length; i++) if (extra[i].equals("--tls-port")) tls.add(Integer.parseInt(extra[i + 1]));
            ServerProc sp = new ServerProc(name, p, List.of(port), tls, out);
            try {
                waitPing(sp, port);
                return sp;
            } catch (IllegalStateException e) {
                sp.close();
                if (attempt == 4) throw e;
            }
        }
        throw new IllegalStateException("unreachable");
    }

    /**
     * A real sentinel, `redis-server conf --sentinel`, watching the primary on `primaryPort` as
     * `master` (quorum 2), on a free port. The conf file is its own (sentinel rewrites it).
     */
    public static ServerProc redisSentinel(int primaryPort, String master, long downAfterMs, long failoverTimeoutMs) {
        String bin = redisServerBinary();
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort(false);
            int n = SEQ.incrementAndGet();
            Path conf = workdir().resolve("sentinel-" + port + "-" + n + ".conf");
            String text = String.join("\n",
                    "port " + port,
                    "bind 127.0.0.1",
                    "daemonize no",
                    "protected-mode no",
                    "dir " + workdir(),
                    "sentinel monitor " + master + " 127.0.0.1 " + primaryPort + " 2",
                    "sentinel down-after-milliseconds " + master + " " + downAfterMs,
                    "sentinel failover-timeout " + master + " " + failoverTimeoutMs,
                    "");
            try {
                Files.writeString(conf, text);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
            Path out = workdir().resolve("sentinel-" + port + "-" + n + ".out");
            Process p = start(List.of(bin, conf.toString(), "--sentinel"), out);
            ServerProc sp = new ServerProc("redis-sentinel", p, List.of(port), List.of(), out);
            try {
                waitPing(sp, port);
                return sp;
            } catch (IllegalStateException e) {
                sp.close();
                if (attempt == 4) throw e;
            }
        }
        throw new IllegalStateException("unreachable");
    }

    /** A real 6-process Redis Cluster, 3 primaries + 3 replicas, made by redis-cli --cluster create. */
    public static List<ServerProc> redisCluster(int nodes, int replicas) {
        String cli = redisCliBinary();
        List<ServerProc> procs = new ArrayList<>();
        try {
            for (int i = 0; i < nodes; i++) procs.add(redis(true));
            List<String> cmd = new ArrayList<>(List.of(cli, "--cluster", "create"));
            for (ServerProc sp : procs) cmd.add("127.0.0.1:" + sp.port());
            cmd.addAll(List.of("--cluster-replicas", String.valueOf(replicas), "--cluster-yes"));
            Path out = workdir().resolve("cluster-create-" + SEQ.incrementAndGet() + ".out");
            Process p = start(cmd, out);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("redis-cli --cluster create failed:\n" + read(out));
            }
            long deadline = System.currentTimeMillis() + 30_000;
            while (!clusterReady(procs, nodes / (replicas + 1))) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("redis cluster not ready");
                sleep(100);
            }
            return procs;
        } catch (RuntimeException | InterruptedException e) {
            procs.forEach(ServerProc::close);
            throw new IllegalStateException(e);
        }
    }

    private static boolean clusterReady(List<ServerProc> procs, int primaries) {
        for (ServerProc sp : procs) {
            String info = String.valueOf(Resp.once(sp.port(), "CLUSTER", "INFO"));
            if (!info.contains("cluster_state:ok") || !info.contains("cluster_known_nodes:" + procs.size())) return false;
            String repl = String.valueOf(Resp.once(sp.port(), "INFO", "replication"));
            if (repl.contains("role:slave") && !repl.contains("master_link_status:up")) return false;
        }
        String nodes = String.valueOf(Resp.once(procs.get(0).port(), "CLUSTER", "NODES"));
        long masters = nodes.lines().filter(l -> l.contains("master") && !l.contains("fail")).count();
        long slaves = nodes.lines().filter(l -> l.contains("slave")).count();
        return masters == primaries && slaves == procs.size() - primaries;
    }

    public static int freePort(boolean withBus) {
        for (int i = 0; i < 50; i++) {
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                int port = s.getLocalPort();
                if (!withBus) return port;
                if (port + 10000 > 65535) continue;
                try (ServerSocket bus = new ServerSocket(port + 10000, 1, InetAddress.getLoopbackAddress())) {
                    return port;
                } catch (IOException busy) {
                    // try another
                }
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }
        throw new IllegalStateException("no free port");
    }

    private static Process start(List<String> cmd, Path out) {
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
            return pb.start();
        } catch (IOException e) {
            throw new RuntimeException("cannot start " + cmd + ": " + e, e);
        }
    }

    private static void waitPing(ServerProc sp, int port) {
        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        while (true) {
            try {
                Object r = Resp.once(port, "PING");
                if ("PONG".equals(r)) return;
            } catch (RuntimeException e) {
                // not yet
            }
            if (!sp.process.isAlive() || System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(sp.name + " on " + port + " did not answer PING:\n" + sp.logTail());
            }
            sleep(10);
        }
    }

    static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";
        }
    }

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeException(e);
        }
    }
}
