package dev.tumbler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;

/**
 * A tumbler server process on free loopback ports, for tests.
 *
 * <pre>{@code
 * try (TumblerServer srv = TumblerServer.builder().timeControl(true).start()) {
 *     RedissonClient redisson = Redisson.create(srv.redissonConfig());
 *     ...
 *     srv.advance(Duration.ofSeconds(31));   // 31 s pass for the server, at once
 * }
 * }</pre>
 *
 * <p>The server runs with {@code --watch-stdin yes}: its stdin is a pipe this JVM holds and
 * never writes to, so when the JVM dies, even by {@code kill -9}, the server sees EOF and
 * exits. A shutdown hook also stops every server still running at a normal JVM exit.
 */
public final class TumblerServer implements AutoCloseable {
    private static final Pattern LISTENING =
            Pattern.compile("tumbler listening on (\\S+?):\\d+ (?:tls-)?port=(\\d+)(?: node=(\\d+))?(?: role=\\S+)?"
                    + "(?: sentinel=(\\d+))?");
    private static final Set<TumblerServer> LIVE = ConcurrentHashMap.newKeySet();
    private static volatile boolean hookInstalled;

    private final Builder config;
    private final Process process;
    private final OutputStream stdin;
    private final Path log;
    private final String host;
    private final List<Integer> ports;
    private final List<Integer> sentinelPorts;
    private final TlsMaterial tls;
    private final SSLContext sslContext;
    private final Set<Integer> down = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private volatile int databases; // 0 until asked

    private TumblerServer(Builder config, Process process, Path log, String host, List<Integer> ports,
                          List<Integer> sentinelPorts, TlsMaterial tls) {
        this.sentinelPorts = Collections.unmodifiableList(sentinelPorts);
        this.config = config;
        this.process = process;
        this.stdin = process.getOutputStream();
        this.log = log;
        this.host = host;
        this.ports = Collections.unmodifiableList(ports);
        this.tls = tls;
        this.sslContext = tls != null ? tls.sslContext() : null;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Starts a single server with the defaults (no time control). */
    public static TumblerServer start() {
        return builder().start();
    }

    // ---------------------------------------------------------------- topology

    public String host() {
        return host;
    }

    /** The port of node 0 (the only node unless {@link Builder#nodes}). */
    public int port() {
        return ports.get(0);
    }

    public int port(int node) {
        return ports.get(node);
    }

    /** Every node's port, node 0 first. */
    public List<Integer> ports() {
        return ports;
    }

    public int nodeCount() {
        return ports.size();
    }

    public boolean isCluster() {
        return config.cluster;
    }

    /** Cluster primaries (nodes 0 .. primaries-1 at start); the node count otherwise. */
    public int primaries() {
        return config.cluster ? config.primaries : ports.size();
    }

    public boolean isTls() {
        return tls != null;
    }

    // ---------------------------------------------------------------- replicas and sentinels

    /** A primary with replicas ({@link Builder#replicas}) and/or sentinels ({@link Builder#sentinels}). */
    public boolean isReplicated() {
        return config.replSetReplicas > 0 || config.sentinels > 0;
    }

    /** Replicas of the primary ({@link Builder#replicas}); data nodes are 0 (the first primary) .. this. */
    public int replicaCount() {
        return config.replSetReplicas;
    }

    /** The master name the sentinels monitor ({@code mymaster} unless {@link Builder#masterName}). */
    public String masterName() {
        return config.masterName;
    }

    public int sentinelCount() {
        return sentinelPorts.size();
    }

    public int sentinelPort(int sentinel) {
        return sentinelPorts.get(sentinel);
    }

    /** Every sentinel's port, sentinel 0 first. */
    public List<Integer> sentinelPorts() {
        return sentinelPorts;
    }

    /** {@code redis://127.0.0.1:PORT} of every sentinel (Redisson's addSentinelAddress). */
    public List<String> sentinelUrls() {
        List<String> u = new ArrayList<>();
        for (int p : sentinelPorts) {
            u.add("redis://" + host + ":" + p);
        }
        return u;
    }

    /** {@code 127.0.0.1:PORT} of every sentinel (Jedis' JedisSentinelPool, spring.data.redis.sentinel.nodes). */
    public List<String> sentinelAddresses() {
        List<String> u = new ArrayList<>();
        for (int p : sentinelPorts) {
            u.add(host + ":" + p);
        }
        return u;
    }

    /** Sends one command to a sentinel. */
    public Object commandOnSentinel(int sentinel, String... args) {
        return Resp.command(host, sentinelPorts.get(sentinel), sslContext, null, null, 10_000, args);
    }

    /**
     * The data node that is primary now: what the sentinels say ({@code SENTINEL
     * GET-MASTER-ADDR-BY-NAME} on sentinel 0) or, without sentinels, the node whose {@code ROLE}
     * is master. Node 0 at start; another after a failover.
     */
    @SuppressWarnings("unchecked")
    public int primary() {
        if (!sentinelPorts.isEmpty()) {
            List<Object> a = (List<Object>) commandOnSentinel(0, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", config.masterName);
            int port = Integer.parseInt(String.valueOf(a.get(1)));
            int node = ports.indexOf(port);
            if (node < 0) {
                throw new TumblerException("the sentinels name " + a + ", not a node of this server");
            }
            return node;
        }
        for (int i = 0; i < ports.size(); i++) {
            if (!down.contains(i) && "master".equals(((List<Object>) commandOn(i, "ROLE")).get(0))) {
                return i;
            }
        }
        throw new TumblerException("no data node is a primary");
    }

    /** {@code redis://127.0.0.1:PORT} of the primary now ({@link #primary()}). */
    public String primaryUrl() {
        return url(primary());
    }

    /** The data nodes that are not the primary now (replicas, or old primaries that are down). */
    public List<Integer> replicas() {
        int p = primary();
        List<Integer> r = new ArrayList<>();
        for (int i = 0; i < ports.size(); i++) {
            if (i != p) {
                r.add(i);
            }
        }
        return r;
    }

    /** {@code redis://} URLs of {@link #replicas()}. */
    public List<String> replicaUrls() {
        List<String> u = new ArrayList<>();
        for (int i : replicas()) {
            u.add(url(i));
        }
        return u;
    }

    /** {@code TUMBLER.REPL PAUSE}: replica {@code node}'s link stalls; writes queue on the primary. */
    public void replPause(int node) {
        needTestControl();
        command("TUMBLER.REPL", "PAUSE", Integer.toString(node));
    }

    /** {@code TUMBLER.REPL RESUME}: the replica catches up. */
    public void replResume(int node) {
        needTestControl();
        command("TUMBLER.REPL", "RESUME", Integer.toString(node));
    }

    /** {@code TUMBLER.REPL LAG}: the replica applies each write that long (of tumbler's time) after the primary. */
    public void replLag(int node, Duration lag) {
        needTestControl();
        command("TUMBLER.REPL", "LAG", Integer.toString(node), Long.toString(lag.toMillis()));
    }

    /** {@code TUMBLER.REPL BEHIND}: the replica stays {@code writes} writes behind. */
    public void replBehind(int node, int writes) {
        needTestControl();
        command("TUMBLER.REPL", "BEHIND", Integer.toString(node), Integer.toString(writes));
    }

    /** {@code TUMBLER.REPL LIST}: one line per data node (role, offsets, pending, lag). */
    public Object replList() {
        needTestControl();
        return command("TUMBLER.REPL", "LIST");
    }

    /** {@code SENTINEL FAILOVER} through sentinel 0; see {@link #awaitPrimaryOtherThan}. */
    public void sentinelFailover() {
        if (sentinelPorts.isEmpty()) {
            throw new TumblerException("no sentinels: TumblerServer.builder().replicas(2).sentinels(3)");
        }
        commandOnSentinel(0, "SENTINEL", "FAILOVER", config.masterName);
    }

    /**
     * Waits (real time, bounded) until every sentinel names a primary other than node
     * {@code old} and that node's ROLE is master; returns it. After {@link #sentinelFailover()},
     * or {@link #nodeDown} of the primary and {@link #advance} past down-after-milliseconds.
     */
    @SuppressWarnings("unchecked")
    public int awaitPrimaryOtherThan(int old, Duration timeout) {
        if (sentinelPorts.isEmpty()) {
            throw new TumblerException("no sentinels: TumblerServer.builder().replicas(2).sentinels(3)");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "";
        while (true) {
            int agreed = -1;
            boolean ok = true;
            for (int s = 0; s < sentinelPorts.size() && ok; s++) {
                List<Object> a = (List<Object>) commandOnSentinel(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", config.masterName);
                int node = ports.indexOf(Integer.parseInt(String.valueOf(a.get(1))));
                last = "sentinel " + s + " names " + a;
                ok = node >= 0 && node != old && (agreed < 0 || agreed == node);
                agreed = node;
            }
            if (ok && "master".equals(((List<Object>) commandOn(agreed, "ROLE")).get(0))) {
                return agreed;
            }
            if (System.nanoTime() > deadline) {
                throw new TumblerException("no failover away from node " + old + " within " + timeout.toMillis() + " ms: " + last);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TumblerException("interrupted", e);
            }
        }
    }

    /** The generated TLS material, or null without {@link Builder#tls()}. */
    public TlsMaterial tlsMaterial() {
        return tls;
    }

    /** {@code redis://127.0.0.1:PORT} ({@code rediss://} with TLS) of node 0. */
    public String url() {
        return url(0);
    }

    public String url(int node) {
        return (tls != null ? "rediss://" : "redis://") + host + ":" + ports.get(node);
    }

    public List<String> urls() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < ports.size(); i++) {
            out.add(url(i));
        }
        return out;
    }

    /** The user clients should log in as: the first {@link Builder#user} declared, else null (default). */
    public String username() {
        return config.users.isEmpty() ? null : config.users.get(0)[0];
    }

    /** The password clients should use: the first user's, else {@link Builder#password}'s, else null. */
    public String password() {
        return config.users.isEmpty() ? config.password : config.users.get(0)[1];
    }

    public boolean hasTimeControl() {
        return config.timeControl;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** The server's log (stderr) so far. */
    public String log() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    // ---------------------------------------------------------------- commands

    /** Sends one command to node 0 (or the first node that is up) and returns its reply. */
    public Object command(String... args) {
        return commandOn(controlNode(), args);
    }

    /** Sends one command to the given node: String, Long, List or null; an error reply throws. */
    public Object commandOn(int node, String... args) {
        return Resp.command(host, ports.get(node), sslContext, null, config.password, 10_000, args);
    }

    private int controlNode() {
        for (int i = 0; i < ports.size(); i++) {
            if (!down.contains(i)) {
                return i;
            }
        }
        throw new TumblerException("every node is down");
    }

    // ---------------------------------------------------------------- time

    private void needTime() {
        if (!config.timeControl) {
            throw new TumblerException(
                    "time control is off: start the server with TumblerServer.builder().timeControl(true)"
                            + " or @Tumbler(timeControl = true)");
        }
    }

    /**
     * Moves every (up) node's clock forward: TTLs, lock leases and timeouts that fall due fire at
     * once. Returns node 0's new time in Unix ms (of the first node up).
     */
    public long advance(Duration d) {
        return advance(d.toMillis());
    }

    public long advance(long millis) {
        needTime();
        if (isReplicated()) {
            // one clock for every node and sentinel of the set: advance it once
            String[] adv = {"TUMBLER.TIME", "ADVANCE", Long.toString(millis)};
            return (Long) (sentinelPorts.isEmpty() ? command(adv) : commandOnSentinel(0, adv));
        }
        long first = -1;
        for (int i = 0; i < ports.size(); i++) {
            if (!down.contains(i)) {
                long now = (Long) commandOn(i, "TUMBLER.TIME", "ADVANCE", Long.toString(millis));
                if (first < 0) {
                    first = now;
                }
            }
        }
        return first;
    }

    /** Stops every TTL and timeout until {@link #resume()}. */
    public void freeze() {
        needTime();
        forEachUp("TUMBLER.TIME", "FREEZE");
    }

    public void resume() {
        needTime();
        forEachUp("TUMBLER.TIME", "RESUME");
    }

    /** The server clock (node 0 or the first node up), Unix ms. */
    public long now() {
        needTime();
        return (Long) command("TUMBLER.TIME", "NOW");
    }

    private void forEachUp(String... args) {
        for (int i = 0; i < ports.size(); i++) {
            if (!down.contains(i)) {
                commandOn(i, args);
            }
        }
    }

    // ---------------------------------------------------------------- faults

    private void needTestControl() {
        if (!config.testControl) {
            throw new TumblerException("test control is off: leave TumblerServer.builder().testControl(true)");
        }
    }

    /** Node i closes its port (connections are refused) and drops its clients. */
    public void nodeDown(int node) {
        needTestControl();
        down.add(node);
        try {
            command("TUMBLER.NODE", "DOWN", Integer.toString(node));
        } catch (RuntimeException e) {
            down.remove(node);
            throw e;
        }
    }

    /** Node i listens again on the same port, with its data. */
    public void nodeUp(int node) {
        nodeUp(node, false);
    }

    /** Node i listens again; with {@code flush}, empty (a restart without persistence). */
    public void nodeUp(int node, boolean flush) {
        needTestControl();
        if (flush) {
            command("TUMBLER.NODE", "UP", Integer.toString(node), "FLUSH");
        } else {
            command("TUMBLER.NODE", "UP", Integer.toString(node));
        }
        down.remove(node);
    }

    /** Every reply of node i waits that long (zero: off). */
    public void nodeDelay(int node, Duration delay) {
        needTestControl();
        command("TUMBLER.NODE", "DELAY", Integer.toString(node), Long.toString(delay.toMillis()));
    }

    /** Cluster mode: replica i becomes its shard's primary, the old primary its replica. */
    public void failover(int replica) {
        needTestControl();
        if (!config.cluster) {
            throw new TumblerException("failover needs cluster mode: TumblerServer.builder().cluster(p, r)");
        }
        command("TUMBLER.CLUSTER", "FAILOVER", Integer.toString(replica));
    }

    /** The node that serves a key's slot as primary now (cluster mode), from CLUSTER SLOTS. */
    @SuppressWarnings("unchecked")
    public int primaryFor(String key) {
        long slot = (Long) command("CLUSTER", "KEYSLOT", key);
        for (Object range : (List<Object>) command("CLUSTER", "SLOTS")) {
            List<Object> r = (List<Object>) range;
            if ((Long) r.get(0) <= slot && slot <= (Long) r.get(1)) {
                int port = ((Long) ((List<Object>) r.get(2)).get(1)).intValue();
                return ports.indexOf(port);
            }
        }
        throw new TumblerException("no node serves slot " + slot);
    }

    // ---------------------------------------------------------------- lockdep

    /** The lock-order checker's report of node 0 (or the first node up), as JSON. */
    public String lockdepReportJson() {
        return (String) command("TUMBLER.LOCKDEP", "REPORT");
    }

    /** The report parsed: {@code mode}, {@code inversions}, {@code deadlocks} (docs/lockdep.md). */
    @SuppressWarnings("unchecked")
    public Map<String, Object> lockdepReport() {
        return (Map<String, Object>) Json.parse(lockdepReportJson());
    }

    /** Forgets every node's order graph and findings. */
    public void lockdepReset() {
        forEachUp("TUMBLER.LOCKDEP", "RESET");
    }

    /**
     * Throws a {@link LockOrderError} naming every order inversion and deadlock any node found;
     * the server must run with {@link Builder#lockdep}.
     */
    @SuppressWarnings("unchecked")
    public void assertNoLockInversions() {
        for (int i = 0; i < ports.size(); i++) {
            if (down.contains(i)) {
                continue;
            }
            Map<String, Object> report = (Map<String, Object>) Json.parse((String) commandOn(i, "TUMBLER.LOCKDEP", "REPORT"));
            if ("no".equals(report.get("mode"))) {
                throw new TumblerException(
                        "lockdep is off: start the server with builder().lockdep(\"yes\") or @Tumbler(lockdep = \"yes\")");
            }
            List<Object> inv = (List<Object>) report.getOrDefault("inversions", List.of());
            List<Object> dead = (List<Object>) report.getOrDefault("deadlocks", List.of());
            if (!inv.isEmpty() || !dead.isEmpty()) {
                throw new LockOrderError("the lock-order checker found"
                        + (ports.size() > 1 ? " on node " + i : "") + ":\n" + describe(report), report);
            }
        }
    }

    @SuppressWarnings("unchecked")
    static String describe(Map<String, Object> report) {
        StringBuilder b = new StringBuilder();
        for (String kind : new String[] {"inversions", "deadlocks"}) {
            for (Object f : (List<Object>) report.getOrDefault(kind, List.of())) {
                Map<String, Object> finding = (Map<String, Object>) f;
                List<Object> cycle = new ArrayList<>((List<Object>) finding.get("cycle"));
                if (!cycle.isEmpty()) {
                    cycle.add(cycle.get(0));
                }
                b.append(kind, 0, kind.length() - 1).append(": ");
                for (int i = 0; i < cycle.size(); i++) {
                    b.append(i > 0 ? " -> " : "").append(cycle.get(i));
                }
                b.append('\n');
                for (Object e : (List<Object>) finding.getOrDefault("edges", List.of())) {
                    Map<String, Object> edge = (Map<String, Object>) e;
                    Object held = edge.containsKey("held") ? edge.get("held") : edge.get("holds");
                    b.append("    ").append(edge.get("owner")).append(" held ").append(held)
                            .append(" and took ").append(edge.get("lock")).append(" at ").append(edge.get("time"))
                            .append(" (").append(edge.get("command")).append(")\n");
                }
            }
        }
        return b.toString();
    }

    /** FLUSHALL on every primary that is up (one node's FLUSHALL is that node's only). */
    public void flushAll() {
        for (int i = 0; i < ports.size(); i++) {
            if (!down.contains(i)) {
                try {
                    commandOn(i, "FLUSHALL");
                } catch (TumblerException e) {
                    if (!String.valueOf(e.getMessage()).contains("READONLY")) {
                        throw e;
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- snapshots and state

    /** The databases a snapshot covers: every one the server has (only 0 in cluster mode). */
    private int databases(int node) {
        if (config.cluster) {
            return 1;
        }
        int n = databases;
        if (n == 0) { // the server fixes the count at start, the same for every node
            Object reply = commandOn(node, "CONFIG", "GET", "databases");
            if (!(reply instanceof List<?> kv && kv.size() == 2)) {
                throw new TumblerException("CONFIG GET databases: unexpected reply " + reply);
            }
            databases = n = Integer.parseInt(String.valueOf(kv.get(1)));
        }
        return n;
    }

    /**
     * The server's name of snapshot {@code name} of database {@code db}: the name itself for
     * database 0, {@code name@db<N>} for the others (a server snapshot holds one database,
     * and its names are the node's, not the database's).
     */
    static String snapshotName(String name, int db) {
        return db == 0 ? name : name + "@db" + db;
    }

    private static final Pattern OTHER_DB = Pattern.compile(".*@db[1-9][0-9]*");

    /**
     * Sends {@code TUMBLER.SNAPSHOT sub name} in every database of every node that is up
     * ({@code SELECT db} first, each database under its own name), one connection per node,
     * and returns the replies node by node. A replica that refuses (READONLY) is skipped: it
     * follows its primary. With {@link Builder#replicas} only the primary now is asked.
     */
    private List<List<Object>> everyDatabase(String sub, String name) {
        return databases(sub, name, -1);
    }

    /** {@link #everyDatabase}, or database {@code only} alone (under {@code name}) if it is not -1. */
    private List<List<Object>> databases(String sub, String name, int only) {
        if (only > 0 && config.cluster) {
            throw new TumblerException("a cluster has database 0 only");
        }
        List<List<Object>> out = new ArrayList<>();
        // a primary with replicas: its snapshot alone; its restore reaches the replicas
        int onlyNode = isReplicated() ? primary() : -1;
        for (int i = 0; i < ports.size(); i++) {
            if (down.contains(i) || (onlyNode >= 0 && i != onlyNode)) {
                continue;
            }
            int n = databases(i);
            List<String[]> cmds = new ArrayList<>();
            for (int db = Math.max(only, 0); db < (only >= 0 ? only + 1 : n); db++) {
                if (!config.cluster) {
                    cmds.add(new String[] {"SELECT", Integer.toString(db)});
                }
                cmds.add(new String[] {"TUMBLER.SNAPSHOT", sub, only >= 0 ? name : snapshotName(name, db)});
            }
            List<Object> replies;
            try {
                replies = Resp.pipeline(host, ports.get(i), sslContext, null, config.password, 10_000, false, cmds);
            } catch (TumblerException e) {
                if (config.cluster && String.valueOf(e.getMessage()).contains("READONLY")) {
                    continue;
                }
                throw e;
            }
            List<Object> own = new ArrayList<>();
            for (int k = config.cluster ? 0 : 1; k < replies.size(); k += config.cluster ? 1 : 2) {
                own.add(replies.get(k));
            }
            out.add(own);
        }
        return out;
    }

    /**
     * Saves every database of every node that is up as the in-memory snapshot {@code name}
     * ({@code TUMBLER.SNAPSHOT SAVE} in each database, as {@code name} for database 0 and
     * {@code name@db<N>} for the others): keys, values and TTLs. Saving a name again replaces it.
     */
    public void snapshot(String name) {
        everyDatabase("SAVE", name);
    }

    /**
     * Puts every database of every node that is up back to what it was at
     * {@link #snapshot(String) snapshot(name)} ({@code TUMBLER.SNAPSHOT RESTORE}); the cost is
     * proportional to the keys changed since. An unknown name throws {@link TumblerException}.
     */
    public void restore(String name) {
        everyDatabase("RESTORE", name);
    }

    /**
     * Saves database {@code db} alone, of every node that is up, as snapshot {@code name}
     * (the server's name as it is): for tests that each use their own database of a shared
     * server, side by side.
     */
    public void snapshot(int db, String name) {
        databases("SAVE", name, db);
    }

    /** Restores database {@code db} alone, of every node that is up, from {@link #snapshot(int, String)}; the other databases stay as they are. */
    public void restore(int db, String name) {
        databases("RESTORE", name, db);
    }

    /** Forgets the snapshot {@code name}; false if no node had it. */
    public boolean dropSnapshot(String name) {
        boolean any = false;
        for (List<Object> node : everyDatabase("DROP", name)) {
            for (Object r : node) {
                any |= Long.valueOf(1).equals(r);
            }
        }
        return any;
    }

    /**
     * The names of node 0's snapshots ({@code TUMBLER.SNAPSHOT LIST}), sorted, without the
     * {@code name@db<N>} ones {@link #snapshot} adds for the databases after 0.
     */
    public List<String> snapshots() {
        List<String> names = new ArrayList<>();
        for (Object o : (List<?>) command("TUMBLER.SNAPSHOT", "LIST")) {
            String n = String.valueOf(o);
            if (!OTHER_DB.matcher(n).matches()) {
                names.add(n);
            }
        }
        Collections.sort(names);
        return names;
    }

    /**
     * A readable dump of node 0's state ({@code TUMBLER.STATE}): every database's keys, types,
     * TTLs and values, native-lock holders and waiters, the lock-order checker's report.
     */
    public String state() {
        return stateOf(controlNode());
    }

    /** {@link #state()} of one node. */
    public String stateOf(int node) {
        return (String) commandOn(node, "TUMBLER.STATE");
    }

    /** An RDB file of every database of node 0 ({@code TUMBLER.RDB SAVE}); the server writes nothing to disk. */
    public byte[] rdb() {
        return rdbOf(controlNode());
    }

    /** {@link #rdb()} of one node. */
    public byte[] rdbOf(int node) {
        return (byte[]) Resp.pipeline(host, ports.get(node), sslContext, null, config.password, 30_000, true,
                List.<String[]>of(new String[] {"TUMBLER.RDB", "SAVE"})).get(0);
    }

    /**
     * Writes the server's state to {@code dir} for a post-mortem: {@code <name>.rdb} (the RDB
     * file, {@code redis-server --dbfilename} or {@code redis-check-rdb} read it) and
     * {@code <name>.txt} ({@link #state()}, after a header of {@code note} lines) per node
     * that is up; nodes after the first get {@code <name>.node<i>.*}. Creates {@code dir}.
     * Returns the files written. The extension calls it when a test fails
     * ({@code @Tumbler(failureArtifacts = true)}).
     */
    public List<Path> writeArtifacts(Path dir, String name, String... note) {
        List<Path> written = new ArrayList<>();
        try {
            Files.createDirectories(dir);
            for (int i = 0; i < ports.size(); i++) {
                if (down.contains(i)) {
                    continue;
                }
                String base = i == 0 ? name : name + ".node" + i;
                StringBuilder txt = new StringBuilder();
                for (String line : note) {
                    txt.append("# ").append(line.replace("\n", "\n# ")).append('\n');
                }
                txt.append("# ").append(url(i)).append(nodeCount() > 1 ? " (node " + i + ")" : "").append('\n');
                txt.append(stateOf(i));
                Path t = dir.resolve(base + ".txt");
                Files.writeString(t, txt, StandardCharsets.UTF_8);
                written.add(t);
                Path r = dir.resolve(base + ".rdb");
                Files.write(r, rdbOf(i));
                written.add(r);
            }
        } catch (IOException e) {
            throw new TumblerException("cannot write the state of " + this + " to " + dir + ": " + e, e);
        }
        return written;
    }

    // ---------------------------------------------------------------- clients

    /**
     * A Redisson {@code Config} for this topology: single server, cluster (every primary as a
     * seed), with TLS stores and the user of {@link #username()}. Needs Redisson on the
     * classpath. For independent nodes it is node 0's; see {@link #redissonConfig(int)}.
     */
    public org.redisson.config.Config redissonConfig() {
        return RedissonSupport.config(this, 0);
    }

    /**
     * Redisson in sentinel mode: {@link #masterName()} and every sentinel (needs
     * {@link Builder#sentinels}); what {@link #redissonConfig()} is with sentinels.
     */
    public org.redisson.config.Config redissonSentinelConfig() {
        return RedissonSupport.sentinel(this);
    }

    /**
     * Redisson in master-slave mode: node 0 as master and the replicas as slaves (needs
     * {@link Builder#replicas}); what {@link #redissonConfig()} is with replicas and no sentinels.
     * It does not follow a failover: use the sentinel config for that.
     */
    public org.redisson.config.Config redissonMasterSlaveConfig() {
        return RedissonSupport.masterSlave(this);
    }

    /** A single-server Redisson {@code Config} for one node (RedLock / MultiLock: one client per node). */
    public org.redisson.config.Config redissonConfig(int node) {
        return RedissonSupport.config(this, node);
    }

    /**
     * The Redisson configuration of {@link #redissonConfig()} as YAML ({@code Config.fromYAML},
     * redisson-spring-boot-starter's {@code spring.redis.redisson.config}); only the settings
     * that differ from Redisson's defaults, so it reads back in Redisson 3.x and 4.x.
     */
    public String redissonYaml() {
        StringBuilder y = new StringBuilder();
        if (config.cluster) {
            y.append("clusterServersConfig:\n  nodeAddresses:\n");
            for (int i = 0; i < primaries(); i++) {
                y.append("  - ").append(quote(url(i))).append('\n');
            }
            y.append("  scanInterval: 200\n");
        } else if (!sentinelPorts.isEmpty()) {
            y.append("sentinelServersConfig:\n  masterName: ").append(quote(config.masterName)).append("\n  sentinelAddresses:\n");
            for (String u : sentinelUrls()) {
                y.append("  - ").append(quote(u)).append('\n');
            }
            y.append("  scanInterval: 200\n");
        } else if (isReplicated()) {
            y.append("masterSlaveServersConfig:\n  masterAddress: ").append(quote(url(0))).append("\n  slaveAddresses:\n");
            for (int i = 1; i < ports.size(); i++) {
                y.append("  - ").append(quote(url(i))).append('\n');
            }
        } else {
            y.append("singleServerConfig:\n  address: ").append(quote(url())).append('\n');
        }
        if (username() != null) {
            y.append("  username: ").append(quote(username())).append('\n');
        }
        if (password() != null) {
            y.append("  password: ").append(quote(password())).append('\n');
        }
        if (tls != null) {
            y.append("  sslTruststore: ").append(quote(tls.truststoreUrl().toString())).append('\n');
            y.append("  sslTruststorePassword: ").append(quote(TlsMaterial.STORE_PASSWORD)).append('\n');
            y.append("  sslKeystore: ").append(quote(tls.keystoreUrl().toString())).append('\n');
            y.append("  sslKeystorePassword: ").append(quote(TlsMaterial.STORE_PASSWORD)).append('\n');
        }
        return y.toString();
    }

    private static String quote(String v) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : v.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /**
     * Spring Boot properties for this server: {@code spring.data.redis.*} (host and port, or
     * cluster nodes, username, password, ssl) for spring-boot-starter-data-redis and
     * redisson-spring-boot-starter.
     */
    public Map<String, String> springProperties() {
        Map<String, String> p = new LinkedHashMap<>();
        if (config.cluster) {
            StringBuilder nodes = new StringBuilder();
            for (int i = 0; i < primaries(); i++) {
                nodes.append(i > 0 ? "," : "").append(host).append(':').append(ports.get(i));
            }
            p.put("spring.data.redis.cluster.nodes", nodes.toString());
        } else if (!sentinelPorts.isEmpty()) {
            p.put("spring.data.redis.sentinel.master", config.masterName);
            p.put("spring.data.redis.sentinel.nodes", String.join(",", sentinelAddresses()));
        } else {
            p.put("spring.data.redis.host", host);
            p.put("spring.data.redis.port", Integer.toString(port()));
        }
        if (username() != null) {
            p.put("spring.data.redis.username", username());
        }
        if (password() != null) {
            p.put("spring.data.redis.password", password());
        }
        if (tls != null) {
            p.put("spring.data.redis.ssl.enabled", "true");
        }
        return p;
    }

    // ---------------------------------------------------------------- lifecycle

    /** Stops the server (SIGTERM, then SIGKILL after 5 s) and deletes its files. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        LIVE.remove(this);
        try {
            stdin.close();
        } catch (IOException ignored) {
            // the server is going away anyway
        }
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        deleteQuietly(log);
        if (tls != null) {
            deleteTree(tls.dir());
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a temp file
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(TumblerServer::deleteQuietly);
        } catch (IOException ignored) {
            // a temp dir
        }
    }

    private static void installHook() {
        if (hookInstalled) {
            return;
        }
        synchronized (LIVE) {
            if (!hookInstalled) {
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    for (TumblerServer s : LIVE.toArray(new TumblerServer[0])) {
                        s.process.destroyForcibly();
                    }
                }, "tumbler-shutdown"));
                hookInstalled = true;
            }
        }
    }

    @Override
    public String toString() {
        return "TumblerServer" + (config.cluster ? "(cluster " : "(") + urls() + ", pid " + pid() + ")";
    }

    // ---------------------------------------------------------------- builder

    /** Options of a server; {@link #start()} runs it. Every option maps to a tumbler flag. */
    public static final class Builder {
        private Path binary;
        private boolean timeControl;
        private int nodes = 1;
        private boolean cluster;
        private int primaries;
        private int replicas;
        private boolean testControl = true;
        private int replSetReplicas;
        private int sentinels;
        private String masterName = "mymaster";
        private Duration sentinelDownAfter;
        private Duration sentinelFailoverTimeout;
        private String lockdep;
        private String personality;
        private boolean tls;
        private String tlsAuthClients = "yes";
        private String password;
        private final List<String[]> users = new ArrayList<>();
        private final List<String> args = new ArrayList<>();
        private Duration startupTimeout = Duration.ofSeconds(10);
        private boolean watchStdin = true;

        private Builder() {}

        /** The executable; default: $TUMBLER_BINARY, else the binary this jar carries. */
        public Builder binary(Path binary) {
            this.binary = binary;
            return this;
        }

        /** {@code --enable-time-control yes}: {@link #advance}, {@link #freeze}, {@link #resume}. */
        public Builder timeControl(boolean on) {
            this.timeControl = on;
            return this;
        }

        /** N independent nodes in one process (RedLock, MultiLock). */
        public Builder nodes(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("nodes must be >= 1");
            }
            this.nodes = n;
            this.cluster = false;
            return this;
        }

        /** One Redis Cluster of {@code primaries} primaries with {@code replicasPerPrimary} replicas each. */
        public Builder cluster(int primaries, int replicasPerPrimary) {
            if (primaries < 1 || replicasPerPrimary < 0) {
                throw new IllegalArgumentException("cluster needs >= 1 primary and >= 0 replicas");
            }
            this.cluster = true;
            this.primaries = primaries;
            this.replicas = replicasPerPrimary;
            this.nodes = primaries * (1 + replicasPerPrimary);
            return this;
        }

        /**
         * A primary (node 0) and {@code n} replicas of it (nodes 1..n), each with its own copy
         * ({@code --replicas n}): ROLE, INFO replication, READONLY on writes to a replica, WAIT,
         * and the {@code TUMBLER.REPL} faults. Not with {@link #cluster} or {@link #nodes}.
         */
        public Builder replicas(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("replicas must be >= 0");
            }
            this.replSetReplicas = n;
            return this;
        }

        /** {@code n} sentinels watching the primary ({@code --sentinels n}), with {@link #replicas}. */
        public Builder sentinels(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("sentinels must be >= 0");
            }
            this.sentinels = n;
            return this;
        }

        /** {@code --sentinel-master-name} (default {@code mymaster}). */
        public Builder masterName(String name) {
            this.masterName = name;
            return this;
        }

        /**
         * {@code --sentinel-down-after-milliseconds}: how long (of tumbler's time) the primary is
         * down before the sentinels say so (server default 30 s, as Redis; with time control an
         * {@link TumblerServer#advance} past it is instant).
         */
        public Builder sentinelDownAfter(Duration d) {
            this.sentinelDownAfter = d;
            return this;
        }

        /** {@code --sentinel-failover-timeout} (server default 180 s). */
        public Builder sentinelFailoverTimeout(Duration d) {
            this.sentinelFailoverTimeout = d;
            return this;
        }

        /** {@code --enable-test-control} (node faults, failover); on by default. */
        public Builder testControl(boolean on) {
            this.testControl = on;
            return this;
        }

        /** {@code --lockdep no|yes|strict}: the lock-order checker. */
        public Builder lockdep(String mode) {
            this.lockdep = mode;
            return this;
        }

        /**
         * {@code --personality}: the server release tumbler imitates, e.g. {@code "redis-8.0"} or
         * {@code "valkey-9.1"} (default {@code "redis-7.2"}; docs/personalities.md).
         */
        public Builder personality(String name) {
            this.personality = name;
            return this;
        }

        /** TLS only ({@code rediss://}) with material generated now; client certificates required. */
        public Builder tls() {
            this.tls = true;
            return this;
        }

        /** TLS; {@code authClients} is {@code yes}, {@code optional} or {@code no}. */
        public Builder tls(String authClients) {
            this.tls = true;
            this.tlsAuthClients = authClients;
            return this;
        }

        /** {@code requirepass}: the default user's password. */
        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /**
         * An ACL user: {@code user NAME on >PASSWORD RULES}; rules default to
         * {@code ~* &* +@all}. The first user is the one {@link #redissonConfig()} logs in as.
         */
        public Builder user(String name, String password, String... rules) {
            users.add(new String[] {name, password, rules.length == 0 ? "~* &* +@all" : String.join(" ", rules)});
            return this;
        }

        /** Extra command-line arguments, e.g. {@code "--maxmemory", "10mb"}. */
        public Builder args(String... extra) {
            args.addAll(Arrays.asList(extra));
            return this;
        }

        public Builder startupTimeout(Duration timeout) {
            this.startupTimeout = timeout;
            return this;
        }

        /** {@code --watch-stdin yes} (default): the server exits when this JVM does, even on kill -9. */
        public Builder watchStdin(boolean on) {
            this.watchStdin = on;
            return this;
        }

        public TumblerServer start() {
            Builder cfg = copy();
            boolean replicated = cfg.replSetReplicas > 0 || cfg.sentinels > 0;
            if (replicated) {
                if (cfg.cluster || cfg.nodes > 1) {
                    throw new TumblerException("replicas/sentinels are a topology of their own: not with cluster() or nodes()");
                }
                cfg.nodes = 1 + cfg.replSetReplicas;
            }
            if (cfg.tls && (cfg.nodes > 1 || cfg.sentinels > 0)) {
                // tumbler --nodes N --tls-port 0 listens in plaintext on every node, without a word.
                throw new TumblerException("TLS is supported for a single server only (tumbler --nodes N"
                        + " ignores tls-port)");
            }
            Path exe = Binary.resolve(cfg.binary);
            TlsMaterial material = cfg.tls ? TlsMaterial.generate() : null;
            List<String> cmd = new ArrayList<>();
            cmd.add(exe.toString());
            cmd.addAll(List.of("--bind", "127.0.0.1", "--port", "0"));
            if (material != null) {
                cmd.addAll(List.of("--tls-port", "0",
                        "--tls-cert-file", material.serverCertPem().toString(),
                        "--tls-key-file", material.serverKeyPem().toString(),
                        "--tls-ca-cert-file", material.caCertPem().toString(),
                        "--tls-auth-clients", cfg.tlsAuthClients));
            }
            if (cfg.watchStdin) {
                cmd.addAll(List.of("--watch-stdin", "yes"));
            }
            if (cfg.timeControl) {
                cmd.addAll(List.of("--enable-time-control", "yes"));
            }
            if (cfg.testControl) {
                cmd.addAll(List.of("--enable-test-control", "yes"));
            }
            if (cfg.cluster) {
                cmd.addAll(List.of("--cluster-enabled", "yes", "--nodes", Integer.toString(cfg.nodes),
                        "--cluster-replicas", Integer.toString(cfg.replicas)));
            } else if (replicated) {
                cmd.addAll(List.of("--replicas", Integer.toString(cfg.replSetReplicas)));
                if (cfg.sentinels > 0) {
                    cmd.addAll(List.of("--sentinels", Integer.toString(cfg.sentinels)));
                    if (!cfg.masterName.equals("mymaster")) {
                        cmd.addAll(List.of("--sentinel-master-name", cfg.masterName));
                    }
                    if (cfg.sentinelDownAfter != null) {
                        cmd.addAll(List.of("--sentinel-down-after-milliseconds", Long.toString(cfg.sentinelDownAfter.toMillis())));
                    }
                    if (cfg.sentinelFailoverTimeout != null) {
                        cmd.addAll(List.of("--sentinel-failover-timeout", Long.toString(cfg.sentinelFailoverTimeout.toMillis())));
                    }
                }
            } else if (cfg.nodes > 1) {
                cmd.addAll(List.of("--nodes", Integer.toString(cfg.nodes)));
            }
            if (cfg.personality != null) {
                cmd.addAll(List.of("--personality", cfg.personality));
            }
            if (cfg.lockdep != null) {
                cmd.addAll(List.of("--lockdep", cfg.lockdep));
            }
            if (cfg.password != null) {
                cmd.addAll(List.of("--requirepass", cfg.password));
            }
            for (String[] u : cfg.users) {
                cmd.addAll(List.of("--user", u[0] + " on >" + u[1] + " " + u[2]));
            }
            cmd.addAll(cfg.args);
            return launch(cfg, cmd, material);
        }

        private Builder copy() {
            Builder b = new Builder();
            b.binary = binary;
            b.timeControl = timeControl;
            b.nodes = nodes;
            b.cluster = cluster;
            b.primaries = primaries;
            b.replicas = replicas;
            b.testControl = testControl;
            b.replSetReplicas = replSetReplicas;
            b.sentinels = sentinels;
            b.masterName = masterName;
            b.sentinelDownAfter = sentinelDownAfter;
            b.sentinelFailoverTimeout = sentinelFailoverTimeout;
            b.lockdep = lockdep;
            b.personality = personality;
            b.tls = tls;
            b.tlsAuthClients = tlsAuthClients;
            b.password = password;
            b.users.addAll(users);
            b.args.addAll(args);
            b.startupTimeout = startupTimeout;
            b.watchStdin = watchStdin;
            return b;
        }
    }

    private static TumblerServer launch(Builder cfg, List<String> cmd, TlsMaterial material) {
        installHook();
        Path log;
        Process p;
        try {
            log = Files.createTempFile("tumbler-", ".log");
            ProcessBuilder pb = new ProcessBuilder(cmd)
                    .redirectInput(ProcessBuilder.Redirect.PIPE)
                    .redirectOutput(ProcessBuilder.Redirect.PIPE)
                    .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
            p = pb.start();
        } catch (IOException e) {
            throw new TumblerException("cannot run " + cmd.get(0) + ": " + e.getMessage(), e);
        }
        final Process proc = p;
        // Bounded start: a watchdog kills the process if the ports are not all announced in time,
        // which ends the blocking read below.
        Thread watchdog = new Thread(() -> {
            try {
                if (!proc.waitFor(cfg.startupTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    proc.destroyForcibly();
                }
            } catch (InterruptedException ignored) {
                // started in time
            }
        }, "tumbler-start-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        Integer[] ports = new Integer[cfg.nodes];
        Integer[] sentinelPorts = new Integer[cfg.sentinels];
        int found = 0;
        int want = cfg.nodes + cfg.sentinels;
        String host = "127.0.0.1";
        InputStream out = p.getInputStream();
        BufferedReader r = new BufferedReader(new InputStreamReader(out, StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        try {
            String line;
            while (found < want && (line = r.readLine()) != null) {
                seen.append(line).append('\n');
                Matcher m = LISTENING.matcher(line);
                if (!m.find()) {
                    continue;
                }
                if (m.group(4) != null) {
                    int sn = Integer.parseInt(m.group(4));
                    if (sn < sentinelPorts.length && sentinelPorts[sn] == null) {
                        sentinelPorts[sn] = Integer.parseInt(m.group(2));
                        found++;
                    }
                    continue;
                }
                int node = m.group(3) != null ? Integer.parseInt(m.group(3)) : 0;
                if (node < ports.length && ports[node] == null) {
                    ports[node] = Integer.parseInt(m.group(2));
                    host = m.group(1);
                    found++;
                }
            }
        } catch (IOException e) {
            // handled below: not every port was announced
        }
        watchdog.interrupt();
        if (found < want) {
            p.destroyForcibly();
            try {
                p.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            String err;
            try {
                err = Files.readString(log);
                Files.deleteIfExists(log);
            } catch (IOException e) {
                err = "";
            }
            throw new TumblerException(cmd.get(0) + " did not announce " + want + " port(s) within "
                    + cfg.startupTimeout.toMillis() + " ms (" + (p.isAlive() ? "killed" : "exit status " + p.exitValue())
                    + "); command: " + String.join(" ", cmd) + "\nstdout: " + seen + "log: " + err.trim());
        }
        // Drain stdout for the rest of the server's life (listener lines after nodeUp).
        Thread drain = new Thread(() -> {
            try {
                while (r.readLine() != null) {
                    // discard
                }
            } catch (IOException ignored) {
                // the server is gone
            }
        }, "tumbler-stdout");
        drain.setDaemon(true);
        drain.start();
        TumblerServer s = new TumblerServer(cfg, p, log, host, Arrays.asList(ports), Arrays.asList(sentinelPorts), material);
        LIVE.add(s);
        return s;
    }
}
