package io.tumbler.compat.redisson;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import io.tumbler.compat.ServerProc;
import io.tumbler.compat.Servers;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.MasterSlaveServersConfig;
import org.redisson.config.ReplicatedServersConfig;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.Config;
import org.redisson.config.Protocol;
import org.redisson.config.ReadMode;
import org.redisson.config.SingleServerConfig;
import org.redisson.config.SslVerificationMode;

/** The topologies, each built once for tumbler and once for redis-server. */
public final class Topo {
    private Topo() {}

    /** Watchdog timeout for every client: small, so a test can hold a lock past it. */
    public static final long WATCHDOG_MS = 2000;

    public static Config base(Protocol protocol) {
        Config c = new Config();
        c.setLockWatchdogTimeout(WATCHDOG_MS);
        c.setThreads(4);
        c.setNettyThreads(8);
        if (protocol != null) c.setProtocol(protocol);
        return c;
    }

    public static SingleServerConfig single(Config c, String address) {
        return c.useSingleServer().setAddress(address)
                .setConnectionMinimumIdleSize(2).setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(8)
                .setTimeout(5000).setRetryAttempts(2).setRetryInterval(300);
    }

    public static Supplier<Config> singleConfig(int port, Protocol protocol) {
        return () -> {
            Config c = base(protocol);
            single(c, "redis://127.0.0.1:" + port);
            return c;
        };
    }

    public static Supplier<Config> clusterConfig(int port, ReadMode readMode, Protocol protocol) {
        return () -> {
            Config c = base(protocol);
            ClusterServersConfig cc = c.useClusterServers().addNodeAddress("redis://127.0.0.1:" + port)
                    .setReadMode(readMode).setScanInterval(2000)
                    .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(8)
                    .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(8)
                    .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(8)
                    .setTimeout(5000).setRetryAttempts(2).setRetryInterval(300);
            return c;
        };
    }

    /** Redisson in sentinel mode: master name mymaster, every sentinel's address. */
    public static Supplier<Config> sentinelConfig(io.tumbler.compat.ReplSet set, ReadMode readMode) {
        return sentinelConfig(set, readMode, null);
    }

    /** As sentinelConfig, with a last word on the Config (e.g. setCheckLockSyncedSlaves). */
    public static Supplier<Config> sentinelConfig(io.tumbler.compat.ReplSet set, ReadMode readMode,
                                                  java.util.function.Consumer<Config> tune) {
        return () -> {
            Config c = base(null);
            SentinelServersConfig sc = c.useSentinelServers().setMasterName(io.tumbler.compat.ReplSet.MASTER)
                    .setReadMode(readMode).setScanInterval(500)
                    .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(8)
                    .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(8)
                    .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(8)
                    .setTimeout(5000).setRetryAttempts(2).setRetryInterval(300);
            for (String a : set.sentinelAddresses()) sc.addSentinelAddress(a);
            if (tune != null) tune.accept(c);
            return c;
        };
    }

    /** Redisson master-slave mode: the primary's address and every replica's. */
    public static Supplier<Config> masterSlaveConfig(io.tumbler.compat.ReplSet set, ReadMode readMode) {
        return () -> {
            Config c = base(null);
            MasterSlaveServersConfig mc = c.useMasterSlaveServers()
                    .setMasterAddress("redis://127.0.0.1:" + set.primaryPort())
                    .setReadMode(readMode)
                    .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(8)
                    .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(8)
                    .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(8)
                    .setTimeout(5000).setRetryAttempts(2).setRetryInterval(300);
            for (int p : set.replicaPorts()) mc.addSlaveAddress("redis://127.0.0.1:" + p);
            return c;
        };
    }

    /** Redisson replicated mode: every node's address; Redisson finds the primary by INFO replication. */
    public static Supplier<Config> replicatedConfig(io.tumbler.compat.ReplSet set, ReadMode readMode) {
        return () -> {
            Config c = base(null);
            ReplicatedServersConfig rc = c.useReplicatedServers().setReadMode(readMode).setScanInterval(1000)
                    .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(8)
                    .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(8)
                    .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(8)
                    .setTimeout(5000).setRetryAttempts(2).setRetryInterval(300);
            for (int p : set.nodePorts) rc.addNodeAddress("redis://127.0.0.1:" + p);
            return c;
        };
    }

    /** A primary + 2 replicas (+ sentinels) on both sides, one Redisson client each from `config`. */
    public static List<Target> replSets(int sentinels, java.util.function.Function<io.tumbler.compat.ReplSet, Supplier<Config>> config) {
        List<io.tumbler.compat.ReplSet> sets = io.tumbler.compat.ReplSet.both(2, sentinels);
        List<Target> out = new ArrayList<>();
        try {
            for (io.tumbler.compat.ReplSet s : sets) out.add(new Target(s, List.of(config.apply(s))));
        } catch (RuntimeException e) {
            out.forEach(Target::close);
            sets.forEach(io.tumbler.compat.ReplSet::close);
            throw e;
        }
        return out;
    }

    /** Single server: tumbler --port 0 with time control; redis-server. */
    public static List<Target> single(Protocol protocol) {
        List<Target> out = new ArrayList<>();
        ServerProc t = Servers.tumbler(1, "--enable-time-control", "yes");
        out.add(new Target("tumbler", true, List.of(t), t.ports, List.of(singleConfig(t.port(), protocol))));
        ServerProc r = Servers.redis();
        out.add(new Target("redis-server", false, List.of(r), r.ports, List.of(singleConfig(r.port(), protocol))));
        return out;
    }

    /** The ACL user the TLS topology connects as: Redisson's own keys and ours, every channel. */
    public static final String ACL_USER = "compat", ACL_PASS = "compat-secret";

    public static Supplier<Config> tlsConfig(int tlsPort, io.tumbler.compat.Certs certs) {
        // Redisson's default, STRICT, sets the JDK's "HTTPS" endpoint identification, which needs a
        // subjectAltName IP:127.0.0.1 for rediss://127.0.0.1 (no CN fallback for IP addresses). For a
        // server certificate without SAN (v1 material) a Redisson user turns hostname verification
        // off and keeps the chain check: CA_ONLY (the 3.x setSslEnableEndpointIdentification(false)).
        // The same setting for both servers.
        return tlsConfig(tlsPort, certs, certs.serverCertHasSan() ? SslVerificationMode.STRICT : SslVerificationMode.CA_ONLY);
    }

    public static Supplier<Config> tlsConfig(int tlsPort, io.tumbler.compat.Certs certs, SslVerificationMode mode) {
        return tlsConfig(tlsPort, certs, mode, certs.clientP12);
    }

    /** With another client keystore (PKCS#12, Certs.STORE_PASSWORD). */
    public static Supplier<Config> tlsConfig(int tlsPort, io.tumbler.compat.Certs certs, SslVerificationMode mode,
                                             java.nio.file.Path clientP12) {
        return () -> {
            Config c = base(null);
            try {
                single(c, "rediss://127.0.0.1:" + tlsPort)
                        .setUsername(ACL_USER).setPassword(ACL_PASS)
                        .setSslVerificationMode(mode)
                        .setSslTruststore(certs.trustP12.toUri().toURL())
                        .setSslTruststorePassword(io.tumbler.compat.Certs.STORE_PASSWORD)
                        .setSslKeystore(clientP12.toUri().toURL())
                        .setSslKeystorePassword(io.tumbler.compat.Certs.STORE_PASSWORD);
            } catch (java.net.MalformedURLException e) {
                throw new IllegalStateException(e);
            }
            return c;
        };
    }

    private static void aclUser(int plainPort) {
        io.tumbler.compat.Resp.once(plainPort, "ACL", "SETUSER", ACL_USER, "reset", "on", ">" + ACL_PASS,
                "~compat:*", "~{compat:*", "~redisson*", "&*", "+@all");
    }

    /** rediss:// with a client certificate (tls-auth-clients yes) and an ACL user; a plain port for the harness. */
    public static List<Target> tls() {
        return tls(io.tumbler.compat.Certs.generate());
    }

    /** As tls(), with the given material on both servers and their clients. */
    public static List<Target> tls(io.tumbler.compat.Certs certs) {
        List<Target> out = new ArrayList<>();
        // as in redis-server, --port 0 beside a TLS port means "no plain port": the harness's plain port is explicit
        List<String> targs = new ArrayList<>(List.of("--port", String.valueOf(Servers.freePort(false)), "--tls-port", "0",
                "--enable-time-control", "yes"));
        targs.addAll(certs.serverArgs());
        ServerProc t = Servers.tumbler(1, targs.toArray(String[]::new));
        try {
            aclUser(t.port());
            out.add(new Target("tumbler", true, List.of(t), t.ports, List.of(tlsConfig(t.tlsPorts.get(0), certs))));
            List<String> rargs = new ArrayList<>(List.of("--tls-port", String.valueOf(Servers.freePort(false))));
            rargs.addAll(certs.serverArgs());
            ServerProc r = Servers.redis(rargs.toArray(String[]::new));
            aclUser(r.port());
            out.add(new Target("redis-server", false, List.of(r), r.ports, List.of(tlsConfig(r.tlsPorts.get(0), certs))));
        } catch (RuntimeException e) {
            t.close();
            out.forEach(Target::close);
            throw e;
        }
        return out;
    }

    /** Three independent servers: tumbler --nodes 3; three redis-servers. One client per node. */
    public static List<Target> nodes3() {
        List<Target> out = new ArrayList<>();
        ServerProc t = Servers.tumbler(3, "--nodes", "3", "--enable-time-control", "yes");
        out.add(new Target("tumbler", true, List.of(t), t.ports,
                t.ports.stream().map(p -> singleConfig(p, null)).collect(Collectors.toList())));
        List<ServerProc> rs = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) rs.add(Servers.redis());
        } catch (RuntimeException e) {
            rs.forEach(ServerProc::close);
            out.forEach(Target::close);
            throw e;
        }
        List<Integer> ports = rs.stream().map(ServerProc::port).collect(Collectors.toList());
        out.add(new Target("redis-server", false, rs, ports,
                ports.stream().map(p -> singleConfig(p, null)).collect(Collectors.toList())));
        return out;
    }

    /** Redis Cluster, 3 primaries + 3 replicas: tumbler in one process; 6 real redis-servers. */
    public static List<Target> cluster(ReadMode readMode) {
        List<Target> out = new ArrayList<>();
        ServerProc t = Servers.tumbler(6, "--cluster-enabled", "yes", "--nodes", "6", "--cluster-replicas", "1",
                "--enable-time-control", "yes");
        try {
            out.add(new Target("tumbler", true, List.of(t), t.ports, List.of(clusterConfig(t.port(), readMode, null))));
            List<ServerProc> rs = Servers.redisCluster(6, 1);
            List<Integer> ports = rs.stream().map(ServerProc::port).collect(Collectors.toList());
            out.add(new Target("redis-server", false, rs, ports, List.of(clusterConfig(ports.get(0), readMode, null))));
        } catch (RuntimeException e) {
            t.close();
            out.forEach(Target::close);
            throw e;
        }
        return out;
    }
}
