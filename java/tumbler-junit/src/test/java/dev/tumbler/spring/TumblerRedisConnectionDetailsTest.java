package dev.tumbler.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.TumblerServer;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.service.connection.ConnectionDetails;
import org.springframework.boot.autoconfigure.service.connection.ConnectionDetailsFactories;
import org.springframework.boot.ssl.SslBundle;

class TumblerRedisConnectionDetailsTest {

    @Test
    void bootFindsTheFactoryForATumblerServer() {
        try (TumblerServer srv = TumblerServer.builder().start()) {
            Map<Class<?>, ConnectionDetails> found = new ConnectionDetailsFactories().getConnectionDetails(srv, true);
            RedisConnectionDetails d = (RedisConnectionDetails) found.get(RedisConnectionDetails.class);
            assertNotNull(d, "spring.factories registers the factory");
            assertEquals("127.0.0.1", d.getStandalone().getHost());
            assertEquals(srv.port(), d.getStandalone().getPort());
            assertNull(d.getCluster());
            assertNull(d.getUsername());
        }
    }

    @Test
    void clusterNodesAreThePrimaries() {
        try (TumblerServer srv = TumblerServer.builder().cluster(3, 1).start()) {
            RedisConnectionDetails d = new TumblerRedisConnectionDetails(srv);
            assertNull(d.getStandalone());
            assertEquals(3, d.getCluster().getNodes().size());
            assertEquals(srv.port(2), d.getCluster().getNodes().get(2).port());
        }
    }

    @Test
    void tlsAndAUserGiveAnSslBundleAndCredentials() throws Exception {
        try (TumblerServer srv = TumblerServer.builder().tls().user("app", "pw").start()) {
            RedisConnectionDetails d = new TumblerRedisConnectionDetails(srv);
            assertEquals("app", d.getUsername());
            assertEquals("pw", d.getPassword());
            SslBundle ssl = d.getStandalone().getSslBundle();
            assertNotNull(ssl);
            assertTrue(ssl.getStores().getTrustStore().containsAlias("ca"));
            assertTrue(ssl.getStores().getKeyStore().isKeyEntry("client"));
            assertNotNull(ssl.createSslContext());
        }
    }
}
