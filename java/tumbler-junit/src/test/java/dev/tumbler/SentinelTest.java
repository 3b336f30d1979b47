package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/** TumblerServer.builder().replicas(2).sentinels(3): one process, a primary, 2 replicas and 3 sentinels. */
class SentinelTest {

    @Test
    void sentinelTopologyAccessorsAndFailover() throws Exception {
        try (TumblerServer srv = TumblerServer.builder().timeControl(true).replicas(2).sentinels(3).start()) {
            assertTrue(srv.isReplicated());
            assertEquals(3, srv.nodeCount());
            assertEquals(2, srv.replicaCount());
            assertEquals(3, srv.sentinelCount());
            assertEquals("mymaster", srv.masterName());
            assertEquals(3, srv.sentinelPorts().stream().distinct().count());
            for (int p : srv.sentinelPorts()) {
                assertFalse(srv.ports().contains(p), "a sentinel has its own port");
            }
            assertEquals("redis://127.0.0.1:" + srv.sentinelPort(0), srv.sentinelUrls().get(0));
            assertEquals("127.0.0.1:" + srv.sentinelPort(2), srv.sentinelAddresses().get(2));
            assertEquals(0, srv.primary());
            assertEquals(srv.url(0), srv.primaryUrl());
            assertEquals(List.of(1, 2), srv.replicas());
            assertEquals(List.of(srv.url(1), srv.url(2)), srv.replicaUrls());
            assertEquals("PONG", srv.commandOnSentinel(1, "PING"));

            srv.command("SET", "k", "v");
            assertEquals("v", srv.commandOn(1, "GET", "k"), "the replica has the write");
            TumblerException ro = assertThrows(TumblerException.class, () -> srv.commandOn(2, "SET", "k", "w"));
            assertTrue(ro.getMessage().contains("READONLY"), ro.getMessage());

            Map<String, String> spring = srv.springProperties();
            assertEquals("mymaster", spring.get("spring.data.redis.sentinel.master"));
            assertEquals(String.join(",", srv.sentinelAddresses()), spring.get("spring.data.redis.sentinel.nodes"));
            assertTrue(Config.fromYAML(srv.redissonYaml()).isSentinelConfig(), srv.redissonYaml());

            Config cfg = srv.redissonConfig();
            assertTrue(cfg.isSentinelConfig());
            RedissonClient redisson = Redisson.create(cfg);
            try {
                RLock lock = redisson.getLock("order:{1}");
                assertTrue(lock.tryLock(1, 60, TimeUnit.SECONDS));
                srv.sentinelFailover();
                int now = srv.awaitPrimaryOtherThan(0, Duration.ofSeconds(20));
                assertNotEquals(0, now);
                assertEquals(now, srv.primary());
                assertEquals(1L, srv.commandOn(now, "EXISTS", "order:{1}"), "the promoted replica had the lock");
                RBucket<String> b = redisson.getBucket("after", StringCodec.INSTANCE);
                long deadline = System.currentTimeMillis() + 20_000;
                while (true) {
                    try {
                        b.set("x");
                        if ("x".equals(srv.commandOn(now, "GET", "after"))) {
                            break;
                        }
                    } catch (RuntimeException e) {
                        // Redisson still on the old primary
                    }
                    assertTrue(System.currentTimeMillis() < deadline, "Redisson follows the new primary");
                    Thread.sleep(100);
                }
                assertTrue(lock.isHeldByCurrentThread());
                lock.unlock();
            } finally {
                redisson.shutdown();
            }
        }
    }

    /** The lost write: replicas paused, the primary goes down, the sentinels promote a replica without it. */
    @Test
    void lossyFailoverLosesTheLock() throws Exception {
        try (TumblerServer srv = TumblerServer.builder().timeControl(true).replicas(2).sentinels(3)
                .sentinelDownAfter(Duration.ofSeconds(1)).start()) {
            srv.replPause(1);
            srv.replPause(2);
            srv.command("SET", "lock", "owner-1", "PX", "60000");
            assertEquals(0L, srv.commandOn(1, "EXISTS", "lock"), "the paused replica does not have it");
            srv.nodeDown(0);
            srv.replResume(1);
            srv.replResume(2);
            srv.advance(Duration.ofMillis(1001));
            int now = srv.awaitPrimaryOtherThan(0, Duration.ofSeconds(20));
            assertEquals(0L, srv.commandOn(now, "EXISTS", "lock"), "the write was lost");
            assertEquals("OK", srv.commandOn(now, "SET", "lock", "owner-2", "NX", "PX", "60000"), "a second owner");
        }
    }

}
