package dev.tumbler.spring;

import dev.tumbler.TlsMaterial;
import dev.tumbler.TumblerServer;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslStoreBundle;

/** {@code RedisConnectionDetails} (Spring Boot 3) of a tumbler server: standalone or cluster, user, TLS. */
public final class TumblerRedisConnectionDetails implements RedisConnectionDetails {
    private final TumblerServer server;
    private final SslBundle ssl;

    public TumblerRedisConnectionDetails(TumblerServer server) {
        this.server = server;
        this.ssl = server.isTls() ? sslBundle(server.tlsMaterial()) : null;
    }

    private static KeyStore load(Path p) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(p)) {
            ks.load(in, TlsMaterial.STORE_PASSWORD.toCharArray());
        }
        return ks;
    }

    static SslBundle sslBundle(TlsMaterial t) {
        try {
            return SslBundle.of(SslStoreBundle.of(load(t.keystore()), TlsMaterial.STORE_PASSWORD, load(t.truststore())));
        } catch (Exception e) {
            throw new IllegalStateException("cannot load the tumbler TLS stores", e);
        }
    }

    public TumblerServer server() {
        return server;
    }

    @Override
    public String getUsername() {
        return server.username();
    }

    @Override
    public String getPassword() {
        return server.password();
    }

    @Override
    public Standalone getStandalone() {
        return server.isCluster() ? null : Standalone.of(server.host(), server.port(), 0, ssl);
    }

    @Override
    public Cluster getCluster() {
        if (!server.isCluster()) {
            return null;
        }
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < server.primaries(); i++) {
            nodes.add(new Node(server.host(), server.port(i)));
        }
        return new Cluster() {
            @Override
            public List<Node> getNodes() {
                return nodes;
            }

            @Override
            public SslBundle getSslBundle() {
                return ssl;
            }
        };
    }
}
