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
            Pattern.compile("tumbler listening on (\\S+?):\\d+ (?:tls-)?port=(\\d+)(?: node=(\\d+))?");
    private static final Set<TumblerServer> LIVE = ConcurrentHashMap.newKeySet();
    private static volatile boolean hookInstalled;

    private final Builder config;
    private final Process process;
    private final OutputStream stdin;
    private final Path log;
    private final String host;
    private final List<Integer> ports;
    private final TlsMaterial tls;
    private final SSLContext sslContext;
    private final Set<Integer> down = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private volatile int databases; // 0 until asked

    private TumblerServer(Builder config, Process process, Path log, String host, List<Integer> ports,
                          TlsMaterial tls) {
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
     * follows its primary.
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
        for (int i = 0; i < ports.size(); i++) {
            if (down.contains(i)) {
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
            if (cfg.tls && cfg.nodes > 1) {
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
        int found = 0;
        String host = "127.0.0.1";
        InputStream out = p.getInputStream();
        BufferedReader r = new BufferedReader(new InputStreamReader(out, StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        try {
            String line;
            while (found < cfg.nodes && (line = r.readLine()) != null) {
                seen.append(line).append('\n');
                Matcher m = LISTENING.matcher(line);
                if (!m.find()) {
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
        if (found < cfg.nodes) {
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
            throw new TumblerException(cmd.get(0) + " did not announce " + cfg.nodes + " port(s) within "
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
        TumblerServer s = new TumblerServer(cfg, p, log, host, Arrays.asList(ports), material);
        LIVE.add(s);
        return s;
    }
}
