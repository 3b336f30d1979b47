package dev.tumbler;

import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
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

    @SuppressWarnings("deprecation")
    static Config config(TumblerServer srv, int node) {
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
