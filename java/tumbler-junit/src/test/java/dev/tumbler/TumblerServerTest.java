package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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
import org.redisson.config.Config;

class TumblerServerTest {

    @Test
    void singleServerAdvanceExpiresKeys() {
        try (TumblerServer srv = TumblerServer.builder().timeControl(true).start()) {
            assertTrue(srv.port() > 0);
            assertEquals("redis://127.0.0.1:" + srv.port(), srv.url());
            assertEquals("PONG", srv.command("PING"));
            srv.command("SET", "k", "v", "PX", "30000");
            long before = srv.now();
            long after = srv.advance(Duration.ofMillis(30_001));
            assertTrue(after - before >= 30_001, "clock moved " + (after - before));
            assertNull(srv.command("GET", "k"));
            srv.freeze();
            srv.resume();
        }
    }

    @Test
    void personalityChoosesTheAnnouncedReleaseAndItsCommands() {
        try (TumblerServer valkey = TumblerServer.builder().personality("valkey-9.1").start();
                TumblerServer old = TumblerServer.builder().personality("redis-7.0").start()) {
            String info = (String) valkey.command("INFO", "server");
            assertTrue(info.contains("\r\nserver_name:valkey\r\n"), info);
            assertTrue(info.contains("\r\nvalkey_version:9.1.2\r\n"), info);
            assertTrue(((String) old.command("INFO", "server")).contains("\r\nredis_version:7.0.15\r\n"));
            valkey.command("ZADD", "z", "1", "a");
            assertEquals(List.of(0L, "1"), valkey.command("ZRANK", "z", "a", "WITHSCORE"));
            old.command("ZADD", "z", "1", "a");
            TumblerException e =
                    assertThrows(TumblerException.class, () -> old.command("ZRANK", "z", "a", "WITHSCORE"));
            assertTrue(e.getMessage().contains("wrong number of arguments"), e.getMessage());
        }
    }

    @Test
    void timeControlOffIsAClearError() {
        try (TumblerServer srv = TumblerServer.start()) {
            TumblerException e = assertThrows(TumblerException.class, () -> srv.advance(Duration.ofSeconds(1)));
            assertTrue(e.getMessage().contains("timeControl(true)"), e.getMessage());
        }
    }

    @Test
    void closeStopsTheProcess() throws Exception {
        TumblerServer srv = TumblerServer.start();
        ProcessHandle h = ProcessHandle.of(srv.pid()).orElseThrow();
        srv.close();
        assertFalse(h.isAlive());
        srv.close(); // idempotent
    }

    @Test
    void independentNodesHaveTheirOwnPortsAndClocks() {
        try (TumblerServer srv = TumblerServer.builder().nodes(3).timeControl(true).start()) {
            List<Integer> ports = srv.ports();
            assertEquals(3, ports.size());
            assertEquals(3, ports.stream().distinct().count());
            for (int i = 0; i < 3; i++) {
                srv.commandOn(i, "SET", "k", "node" + i, "PX", "1000");
            }
            srv.nodeDown(1);
            assertThrows(TumblerException.class, () -> srv.commandOn(1, "PING"));
            srv.advance(1001); // nodes 0 and 2
            assertNull(srv.commandOn(0, "GET", "k"));
            srv.nodeUp(1);
            assertEquals("node1", srv.commandOn(1, "GET", "k"));
        }
    }

    @Test
    void tlsWithAnAclUserAndAClientCertificate() throws Exception {
        try (TumblerServer srv = TumblerServer.builder().tls().user("alice", "s3cret").start()) {
            assertTrue(srv.url().startsWith("rediss://127.0.0.1:"), srv.url());
            assertEquals("PONG", srv.command("PING"));
            // the YAML form (redisson-spring-boot-starter's spring.redis.redisson.config) reads back
            RedissonClient r = Redisson.create(Config.fromYAML(srv.redissonYaml()));
            try {
                RBucket<String> b = r.getBucket("greeting");
                b.set("hello");
                assertEquals("hello", b.get());
                assertTrue(srv.command("CLIENT", "LIST").toString().contains("user=alice"), "Redisson logged in as alice");
            } finally {
                r.shutdown();
            }
        }
    }

    @Test
    void redissonInAClusterWithReplicas() throws Exception {
        try (TumblerServer srv = TumblerServer.builder().cluster(3, 1).timeControl(true).start()) {
            assertEquals(6, srv.nodeCount());
            assertEquals(3, srv.primaries());
            RedissonClient r = Redisson.create(srv.redissonConfig());
            try {
                assertTrue(Config.fromYAML(srv.redissonYaml()).isClusterConfig());
                RLock lock = r.getLock("{order:42}:lock");
                lock.lock(10, TimeUnit.SECONDS);
                assertTrue(lock.isLocked());
                srv.advance(Duration.ofSeconds(11));
                assertFalse(lock.isLocked());
            } finally {
                r.shutdown();
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void lockdepReportAndAssertion() {
        try (TumblerServer srv = TumblerServer.builder().lockdep("yes").start()) {
            Map<String, Object> report = srv.lockdepReport();
            assertEquals("yes", report.get("mode"));
            assertTrue(((List<Object>) report.get("inversions")).isEmpty());
            srv.assertNoLockInversions();
            // owner A: a then b; owner B: b then a (native locks)
            srv.command("LOCK.ACQUIRE", "a:{1}", "A", "10000");
            srv.command("LOCK.ACQUIRE", "b:{1}", "A", "10000");
            srv.command("LOCK.RELEASE", "b:{1}", "A");
            srv.command("LOCK.RELEASE", "a:{1}", "A");
            srv.command("LOCK.ACQUIRE", "b:{2}", "B", "10000");
            srv.command("LOCK.ACQUIRE", "a:{2}", "B", "10000");
            LockOrderError e = assertThrows(LockOrderError.class, srv::assertNoLockInversions);
            assertTrue(e.getMessage().contains("inversion: "), e.getMessage());
            assertFalse(((List<Object>) e.report().get("inversions")).isEmpty());
        }
    }

    @Test
    void tlsWithSeveralNodesIsRefusedBeforeStarting() {
        TumblerException e = assertThrows(TumblerException.class,
                () -> TumblerServer.builder().tls().nodes(3).start().close());
        assertTrue(e.getMessage().contains("single server"), e.getMessage());
    }

    @Test
    void tlsMaterialIsValid() throws Exception {
        TlsMaterial t = TlsMaterial.generate();
        t.caCertificate().checkValidity();
        t.caCertificate().verify(t.caCertificate().getPublicKey());
        assertTrue(java.nio.file.Files.readString(t.serverKeyPem()).startsWith("-----BEGIN PRIVATE KEY-----"));
    }
}
