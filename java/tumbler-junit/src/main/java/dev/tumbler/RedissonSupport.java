package dev.tumbler;

import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.MasterSlaveServersConfig;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.SingleServerConfig;

/** Redisson glue; loaded only when Redisson is on the classpath. */
final class RedissonSupport {
    private RedissonSupport() {}

    static boolean present() {
        try {
            Class.forName("org.redisson.config.Config", false, RedissonSupport.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Sentinel mode: the master name and every sentinel; the data nodes' user and password. */
    static Config sentinel(TumblerServer srv) {
        if (srv.sentinelCount() == 0) {
            throw new TumblerException("no sentinels: TumblerServer.builder().replicas(2).sentinels(3)");
        }
        Config c = new Config();
        SentinelServersConfig sc = c.useSentinelServers().setMasterName(srv.masterName()).setScanInterval(200);
        for (String u : srv.sentinelUrls()) {
            sc.addSentinelAddress(u);
        }
        if (srv.username() != null) {
            sc.setUsername(srv.username());
        }
        if (srv.password() != null) {
            sc.setPassword(srv.password());
        }
        return c;
    }

    /** Master-slave mode: node 0 and its replicas as they were started. */
    static Config masterSlave(TumblerServer srv) {
        if (srv.replicaCount() == 0) {
            throw new TumblerException("no replicas: TumblerServer.builder().replicas(2)");
        }
        Config c = new Config();
        MasterSlaveServersConfig mc = c.useMasterSlaveServers().setMasterAddress(srv.url(0));
        for (int i = 1; i <= srv.replicaCount(); i++) {
            mc.addSlaveAddress(srv.url(i));
        }
        if (srv.username() != null) {
            mc.setUsername(srv.username());
        }
        if (srv.password() != null) {
            mc.setPassword(srv.password());
        }
        return c;
    }

    @SuppressWarnings("deprecation")
    static Config config(TumblerServer srv, int node) {
        if (node == 0 && srv.sentinelCount() > 0) {
            return sentinel(srv);
        }
        if (node == 0 && srv.replicaCount() > 0) {
            return masterSlave(srv);
        }
        Config c = new Config();
        if (srv.isCluster() && node == 0) {
            ClusterServersConfig cc = c.useClusterServers().setScanInterval(200);
            for (int i = 0; i < srv.primaries(); i++) {
                cc.addNodeAddress(srv.url(i));
            }
            if (srv.username() != null) {
                cc.setUsername(srv.username());
            }
            if (srv.password() != null) {
                cc.setPassword(srv.password());
            }
            if (srv.isTls()) {
                TlsMaterial t = srv.tlsMaterial();
                cc.setSslTruststore(t.truststoreUrl()).setSslTruststorePassword(TlsMaterial.STORE_PASSWORD)
                        .setSslKeystore(t.keystoreUrl()).setSslKeystorePassword(TlsMaterial.STORE_PASSWORD);
            }
        } else {
            SingleServerConfig sc = c.useSingleServer().setAddress(srv.url(node));
            if (srv.username() != null) {
                sc.setUsername(srv.username());
            }
            if (srv.password() != null) {
                sc.setPassword(srv.password());
            }
            if (srv.isTls()) {
                TlsMaterial t = srv.tlsMaterial();
                sc.setSslTruststore(t.truststoreUrl()).setSslTruststorePassword(TlsMaterial.STORE_PASSWORD)
                        .setSslKeystore(t.keystoreUrl()).setSslKeystorePassword(TlsMaterial.STORE_PASSWORD);
            }
        }
        return c;
    }
}
