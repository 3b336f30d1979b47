package io.tumbler.compat.redisson;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import io.tumbler.compat.Resp;
import io.tumbler.compat.ServerProc;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** One server side of a scenario (tumbler or redis-server, in some topology) with its Redisson clients. */
/** Not AutoCloseable on purpose: JUnit closes AutoCloseable arguments after each invocation. */
public final class Target {
    public final String name;
    public final boolean tumbler;
    public final List<ServerProc> procs;
    /** Every node's plain port, in node order. */
    public final List<Integer> ports;
    private final List<Supplier<Config>> configs;
    private final List<RedissonClient> clients = new ArrayList<>();
    private final List<RedissonClient> extra = new ArrayList<>();
    /** A primary/replicas/sentinels set (one clock on tumbler), or null. */
    public final io.tumbler.compat.ReplSet repl;

    /** configs: one per client to open at once (one for single/cluster, one per node for --nodes). */
    public Target(String name, boolean tumbler, List<ServerProc> procs, List<Integer> ports, List<Supplier<Config>> configs) {
        this(name, tumbler, procs, ports, configs, null);
    }

    /** A replication set's target: its data nodes' ports, its processes. */
    public Target(io.tumbler.compat.ReplSet set, List<Supplier<Config>> configs) {
        this(set.name, set.tumbler, set.procs, set.nodePorts, configs, set);
    }

    private Target(String name, boolean tumbler, List<ServerProc> procs, List<Integer> ports, List<Supplier<Config>> configs,
                   io.tumbler.compat.ReplSet repl) {
        this.repl = repl;
        this.name = name;
        this.tumbler = tumbler;
        this.procs = procs;
        this.ports = ports;
        this.configs = configs;
        try {
            for (Supplier<Config> c : configs) clients.add(Redisson.create(c.get()));
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    public RedissonClient client() { return clients.get(0); }

    public List<RedissonClient> clients() { return clients; }

    /** Another client to the same server (closed with the target). */
    public RedissonClient newClient() {
        RedissonClient c = Redisson.create(configs.get(0).get());
        synchronized (extra) {
            extra.add(c);
        }
        return c;
    }

    /** tumbler's TUMBLER.TIME ADVANCE on every node (each node has its own clock; a replication set has one). */
    public void advance(long ms) {
        if (!tumbler) throw new IllegalStateException("time control is tumbler's");
        if (repl != null) {
            repl.advance(ms);
            return;
        }
        for (int p : ports) Resp.once(p, "TUMBLER.TIME", "ADVANCE", ms);
    }

    public void close() {
        for (RedissonClient c : extra) c.shutdown();
        for (RedissonClient c : clients) c.shutdown();
        if (repl != null) repl.close();
        procs.forEach(ServerProc::close);
    }

    @Override public String toString() { return name; }
}
