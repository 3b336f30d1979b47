package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/** TumblerServer.builder().replicas(2): one process, a primary and 2 replicas; see SentinelTest for sentinels. */
class ReplicationTest {

    @Test
    void replicasWithoutSentinelsGiveAMasterSlaveConfig() {
        try (TumblerServer srv = TumblerServer.builder().timeControl(true).replicas(2).start()) {
            assertEquals(0, srv.sentinelCount());
            assertEquals(0, srv.primary());
            Config cfg = srv.redissonConfig();
            assertFalse(cfg.isSentinelConfig() || cfg.isClusterConfig() || cfg.isSingleConfig(), "master-slave");
            assertTrue(srv.redissonYaml().startsWith("masterSlaveServersConfig:"), srv.redissonYaml());
            assertThrows(TumblerException.class, srv::redissonSentinelConfig);
            RedissonClient redisson = Redisson.create(srv.redissonMasterSlaveConfig());
            try {
                redisson.getBucket("k", StringCodec.INSTANCE).set("v");
                assertEquals("v", srv.commandOn(1, "GET", "k"));
                // one clock for the set: a TTL lapses on the primary and the replicas alike
                srv.command("SET", "t", "1", "PX", "5000");
                srv.advance(Duration.ofMillis(5001));
                assertEquals(0L, srv.command("EXISTS", "t"));
                assertEquals(0L, srv.commandOn(2, "EXISTS", "t"));
                // snapshots cover every node; the primary's restore reaches its replicas
                srv.snapshot("seed");
                srv.command("SET", "k", "changed");
                srv.restore("seed");
                assertEquals("v", srv.command("GET", "k"));
                assertEquals("v", srv.commandOn(1, "GET", "k"));
                assertEquals("v", srv.commandOn(2, "GET", "k"));
            } finally {
                redisson.shutdown();
            }
        }
    }

    @Test
    void replicasAreATopologyOfTheirOwn() {
        assertThrows(TumblerException.class, () -> TumblerServer.builder().cluster(3, 1).replicas(2).start());
        assertThrows(TumblerException.class, () -> TumblerServer.builder().nodes(3).sentinels(3).start());
    }
}
