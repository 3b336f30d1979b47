package io.tumbler.compat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A primary, its replicas and the sentinels that watch it: tumbler in one process
 * (`--replicas R --sentinels S`), or real redis-server processes (a primary, replicas started with
 * `--replicaof`, sentinels `redis-server conf --sentinel`). The faults each side can do are here:
 * pausing the replication link, the primary going down, a forced failover.
 */
public final class ReplSet {
    public static final String MASTER = "mymaster";
    /** The sentinels' down-after-milliseconds (on tumbler: of Tumbler's time) and failover-timeout. */
    public static final long DOWN_AFTER_MS = 1000, FAILOVER_TIMEOUT_MS = 10_000;
    private static final long READY_MS = 30_000;
    private static final Pattern NODE_LINE = Pattern.compile("\\bport=(\\d+) node=(\\d+) role=(\\w+)");
    private static final Pattern SENTINEL_LINE = Pattern.compile("\\bport=(\\d+) sentinel=(\\d+)");

    public final String name;
    public final boolean tumbler;
    /** Every process this set started (tumbler: one). */
    public final List<ServerProc> procs;
    /** Data nodes in start order: [0] the first primary, then the replicas. */
    public final List<Integer> nodePorts;
    public final List<Integer> sentinelPorts;
    /** Real side: node i's process (for SIGSTOP/SIGKILL); tumbler: empty. */
    private final List<ServerProc> nodeProcs;
    private final List<Integer> paused = new ArrayList<>();

    private ReplSet(String name, boolean tumbler, List<ServerProc> procs, List<Integer> nodePorts,
                    List<Integer> sentinelPorts, List<ServerProc> nodeProcs) {
        this.name = name;
        this.tumbler = tumbler;
        this.procs = procs;
        this.nodePorts = nodePorts;
        this.sentinelPorts = sentinelPorts;
        this.nodeProcs = nodeProcs;
    }

    /** tumbler --port 0 --replicas R --sentinels S, time and test control on. */
    public static ReplSet tumbler(int replicas, int sentinels) {
        long t0 = System.nanoTime();
        List<String> args = new ArrayList<>(List.of("--replicas", String.valueOf(replicas),
                "--enable-time-control", "yes", "--enable-test-control", "yes"));
        if (sentinels > 0) {
            args.addAll(List.of("--sentinels", String.valueOf(sentinels),
                    "--sentinel-down-after-milliseconds", String.valueOf(DOWN_AFTER_MS),
                    "--sentinel-failover-timeout", String.valueOf(FAILOVER_TIMEOUT_MS)));
        }
        ServerProc p = Servers.tumbler(1 + replicas + sentinels, args.toArray(String[]::new));
        try {
            List<Integer> nodes = new ArrayList<>(), sentinelPorts = new ArrayList<>();
            for (String line : Files.readAllLines(p.log)) {
                if (!line.contains("listening")) continue;
                Matcher m = NODE_LINE.matcher(line);
                if (m.find()) nodes.add(Integer.parseInt(m.group(1)));
                m = SENTINEL_LINE.matcher(line);
                if (m.find()) sentinelPorts.add(Integer.parseInt(m.group(1)));
            }
            if (nodes.size() != 1 + replicas || sentinelPorts.size() != sentinels) {
                throw new IllegalStateException("tumbler announced nodes " + nodes + " sentinels " + sentinelPorts
                        + ", expected " + (1 + replicas) + " and " + sentinels + ":\n" + p.logTail());
            }
            ReplSet s = new ReplSet("tumbler", true, List.of(p), List.copyOf(nodes), List.copyOf(sentinelPorts), List.of());
            s.awaitReady(replicas, sentinels);
            s.report(t0);
            return s;
        } catch (IOException | RuntimeException e) {
            p.close();
            throw new IllegalStateException(e);
        }
    }

    /** A redis-server primary, `replicas` redis-server --replicaof it, `sentinels` real sentinels. */
    public static ReplSet redis(int replicas, int sentinels) {
        long t0 = System.nanoTime();
        List<ServerProc> all = new ArrayList<>();
        try {
            ServerProc primary = Servers.redis();
            all.add(primary);
            List<ServerProc> nodes = new ArrayList<>(List.of(primary));
            for (int i = 0; i < replicas; i++) {
                ServerProc r = Servers.redis("--replicaof", "127.0.0.1", String.valueOf(primary.port()));
                all.add(r);
                nodes.add(r);
            }
            List<Integer> sp = new ArrayList<>();
            for (int i = 0; i < sentinels; i++) {
                ServerProc s = Servers.redisSentinel(primary.port(), MASTER, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS);
                all.add(s);
                sp.add(s.port());
            }
            ReplSet s = new ReplSet("redis-server", false, all,
                    nodes.stream().map(ServerProc::port).toList(), List.copyOf(sp), nodes);
            s.awaitReady(replicas, sentinels);
            s.report(t0);
            return s;
        } catch (RuntimeException e) {
            all.forEach(ServerProc::close);
            throw e;
        }
    }

    /**
     * Both sides, tumbler first. `-Dcompat.only=redis-server` (or `tumbler`) builds one side only,
     * for working on a scenario; the runs in scripts/ci/java-compat.sh never set it.
     */
    public static List<ReplSet> both(int replicas, int sentinels) {
        String only = System.getProperty("compat.only", "");
        List<ReplSet> out = new ArrayList<>();
        if (!only.equals("redis-server")) out.add(tumbler(replicas, sentinels));
        if (only.equals("tumbler")) return out;
        try {
            out.add(redis(replicas, sentinels));
        } catch (RuntimeException e) {
            out.forEach(ReplSet::close);
            throw e;
        }
        return out;
    }

    /** Start to ready, in the test's output (target/surefire-reports/<run>/<class>-output.txt). */
    private void report(long t0) {
        System.out.printf("ReplSet %s: 1 primary, %d replicas, %d sentinels ready in %.0f ms%n",
                name, nodePorts.size() - 1, sentinelPorts.size(), (System.nanoTime() - t0) / 1e6);
    }

    /** Every replica's link is up and the primary counts them; every sentinel knows the replicas and the other sentinels. */
    private void awaitReady(int replicas, int sentinels) {
        long deadline = System.currentTimeMillis() + READY_MS;
        String why = "";
        while (System.currentTimeMillis() < deadline) {
            why = notReady(replicas, sentinels);
            if (why == null) return;
            Servers.sleep(50);
        }
        throw new IllegalStateException(name + " replication set not ready in " + READY_MS + " ms: " + why);
    }

    private String notReady(int replicas, int sentinels) {
        try {
            String info = String.valueOf(Resp.once(nodePorts.get(0), "INFO", "replication"));
            if (!info.contains("connected_slaves:" + replicas)) return "primary: " + info;
            for (int i = 1; i < nodePorts.size(); i++) {
                String ri = String.valueOf(Resp.once(nodePorts.get(i), "INFO", "replication"));
                if (!ri.contains("master_link_status:up")) return "replica " + i + ": " + ri;
            }
            for (int p : sentinelPorts) {
                List<?> reps = (List<?>) Resp.once(p, "SENTINEL", "REPLICAS", MASTER);
                long ok = reps.stream().filter(r -> "slave".equals(field((List<?>) r, "flags"))).count();
                if (ok != replicas) return "sentinel " + p + " replicas " + reps;
                List<?> sents = (List<?>) Resp.once(p, "SENTINEL", "SENTINELS", MASTER);
                if (sents.size() != sentinels - 1) return "sentinel " + p + " sentinels " + sents;
            }
            return null;
        } catch (RuntimeException e) {
            return e.toString();
        }
    }

    /** A field of a flat [name, value, ...] reply (SENTINEL MASTER/REPLICAS entries). */
    public static String field(List<?> flat, String key) {
        for (int i = 0; i + 1 < flat.size(); i += 2) if (key.equals(flat.get(i))) return String.valueOf(flat.get(i + 1));
        return null;
    }

    public int primaryPort() { return nodePorts.get(0); }

    public List<Integer> replicaPorts() { return nodePorts.subList(1, nodePorts.size()); }

    public List<String> sentinelAddresses() {
        return sentinelPorts.stream().map(p -> "redis://127.0.0.1:" + p).toList();
    }

    /** SENTINEL GET-MASTER-ADDR-BY-NAME on sentinel i: the port. */
    public int masterPort(int sentinel) {
        List<?> a = (List<?>) Resp.once(sentinelPorts.get(sentinel), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER);
        return Integer.parseInt(String.valueOf(a.get(1)));
    }

    /** Waits (real time, bounded) until every sentinel names a primary other than `oldPort`; returns it. */
    public int awaitNewMaster(int oldPort, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            boolean all = true;
            int port = -1;
            for (int i = 0; i < sentinelPorts.size(); i++) {
                int p = masterPort(i);
                if (p == oldPort || (port != -1 && p != port)) all = false;
                port = p;
            }
            if (all && port != -1) {
                String role = String.valueOf(Resp.once(port, "INFO", "replication"));
                if (role.contains("role:master")) return port;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(name + ": the sentinels still name " + oldPort + " after " + timeoutMs + " ms");
            }
            Servers.sleep(50);
        }
    }

    /** SENTINEL FAILOVER through sentinel 0. */
    public void sentinelFailover() {
        Object r = Resp.once(sentinelPorts.get(0), "SENTINEL", "FAILOVER", MASTER);
        if (!"OK".equals(r)) throw new AssertionError("SENTINEL FAILOVER: " + r);
    }

    /** Test control (tumbler) or a signal (redis-server): the replica's link stops applying writes. */
    public void pauseReplica(int node) {
        if (tumbler) Resp.once(controlPort(), "TUMBLER.REPL", "PAUSE", node);
        else signal(nodeProcs.get(node), "STOP");
        paused.add(node);
    }

    public void resumeReplica(int node) {
        if (tumbler) Resp.once(controlPort(), "TUMBLER.REPL", "RESUME", node);
        else signal(nodeProcs.get(node), "CONT");
        paused.remove(Integer.valueOf(node));
    }

    /**
     * Every replica's link stalls and nothing more reaches it, not even what the primary already
     * handed to the kernel: tumbler TUMBLER.REPL PAUSE; redis-server SIGSTOP of the replicas and
     * then CLIENT KILL TYPE replica on the primary (a stopped process still receives into its socket
     * buffer, which it would apply on SIGCONT; a closed link receives nothing). The replicas come
     * back with resumeReplica.
     */
    public void isolateReplicas() {
        for (int i = 1; i < nodePorts.size(); i++) pauseReplica(i);
        if (!tumbler) Resp.once(primaryPort(), "CLIENT", "KILL", "TYPE", "replica");
    }

    /**
     * The first primary goes down for good: tumbler TUMBLER.NODE DOWN 0 and its clock past
     * down-after-milliseconds; redis-server SIGKILL.
     */
    public void killPrimary() {
        if (tumbler) {
            Resp.once(controlPort(), "TUMBLER.NODE", "DOWN", 0);
        } else {
            signal(nodeProcs.get(0), "KILL");
        }
    }

    /** Tumbler: moves the one clock of the set (every node and sentinel). */
    public void advance(long ms) {
        if (!tumbler) throw new IllegalStateException("time control is tumbler's");
        Resp.once(controlPort(), "TUMBLER.TIME", "ADVANCE", ms);
    }

    /** Where tumbler's test and time control go: a sentinel, else the last node (not the primary that may go down). */
    public int controlPort() {
        return sentinelPorts.isEmpty() ? nodePorts.get(nodePorts.size() - 1) : sentinelPorts.get(0);
    }

    private static void signal(ServerProc p, String sig) {
        try {
            Process k = new ProcessBuilder("kill", "-" + sig, String.valueOf(p.process.pid())).inheritIO().start();
            if (!k.waitFor(5, TimeUnit.SECONDS) || k.exitValue() != 0) throw new IllegalStateException("kill -" + sig + " " + p);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public void close() {
        // a stopped process cannot handle SIGTERM: continue it first
        if (!tumbler) for (int n : List.copyOf(paused)) if (nodeProcs.get(n).process.isAlive()) signal(nodeProcs.get(n), "CONT");
        procs.forEach(ServerProc::close);
    }

    @Override public String toString() { return name; }
}
