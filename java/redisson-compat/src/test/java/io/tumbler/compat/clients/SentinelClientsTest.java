package io.tumbler.compat.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import io.lettuce.core.ReadFrom;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.masterreplica.MasterReplica;
import io.lettuce.core.masterreplica.StatefulRedisMasterReplicaConnection;
import io.tumbler.compat.ReplSet;
import io.tumbler.compat.Resp;
import io.tumbler.compat.Servers;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisSentinelPool;

/**
 * Jedis' JedisSentinelPool and Lettuce's MasterReplica through sentinels, on a primary, 2 replicas
 * and 3 sentinels (tumbler --replicas 2 --sentinels 3; six real redis-server processes): connect
 * through the sentinels, write to the primary, WAIT for the replicas, read from a replica, then
 * follow a SENTINEL FAILOVER. Each test builds its own set (the failover changes it).
 */
class SentinelClientsTest {
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    static ReplSet set(String side) {
        String only = System.getProperty("compat.only", "");
        Assumptions.assumeTrue(only.isEmpty() || only.equals(side), "-Dcompat.only=" + only);
        return side.equals("tumbler") ? ReplSet.tumbler(2, 3) : ReplSet.redis(2, 3);
    }

    @ParameterizedTest(name = "on {0}") @ValueSource(strings = {"tumbler", "redis-server"})
    void jedisSentinelPool(String side) throws Exception {
        ReplSet set = set(side);
        Set<String> sentinels = new HashSet<>();
        for (int p : set.sentinelPorts) sentinels.add("127.0.0.1:" + p);
        String k = "jedis-sentinel:" + run;
        try (JedisSentinelPool pool = new JedisSentinelPool(ReplSet.MASTER, sentinels)) {
            assertEquals(new HostAndPort("127.0.0.1", set.primaryPort()), pool.getCurrentHostMaster());
            try (Jedis j = pool.getResource()) {
                assertEquals("OK", j.set(k, "v1"));
                assertEquals(2L, j.waitReplicas(2, 2000), "both replicas acknowledge");
                assertEquals("master", j.role().get(0));
            }
            try (Jedis s = new Jedis("127.0.0.1", set.sentinelPorts.get(0))) {
                List<Map<String, String>> replicas = s.sentinelReplicas(ReplSet.MASTER);
                assertEquals(2, replicas.size());
                for (Map<String, String> r : replicas) {
                    assertEquals("slave", r.get("flags"));
                    int port = Integer.parseInt(r.get("port"));
                    assertTrue(set.replicaPorts().contains(port), "replica " + r);
                    try (Jedis rj = new Jedis("127.0.0.1", port)) {
                        assertEquals("v1", rj.get(k), "read from replica " + port);
                        assertEquals("slave", rj.role().get(0));
                    }
                }
                int old = set.primaryPort();
                assertEquals("OK", s.sentinelFailover(ReplSet.MASTER));
                int now = set.awaitNewMaster(old, 30_000);
                long deadline = System.currentTimeMillis() + 20_000;
                while (pool.getCurrentHostMaster().getPort() != now && System.currentTimeMillis() < deadline) Thread.sleep(50);
                assertEquals(new HostAndPort("127.0.0.1", now), pool.getCurrentHostMaster(), "the pool follows +switch-master");
            }
            try (Jedis j = pool.getResource()) {
                assertEquals("v1", j.get(k), "the promoted replica had the write");
                assertEquals("OK", j.set(k, "v2"));
                assertEquals("master", j.role().get(0));
            }
            assertNotEquals(set.primaryPort(), pool.getCurrentHostMaster().getPort());
        } finally {
            set.close();
        }
    }

    /** GET calls the replicas served, from their INFO commandstats. */
    static long replicaGets(ReplSet set) {
        long n = 0;
        for (int p : set.replicaPorts()) {
            String info = String.valueOf(Resp.once(p, "INFO", "commandstats"));
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("cmdstat_get:calls=(\\d+)").matcher(info);
            if (m.find()) n += Long.parseLong(m.group(1));
        }
        return n;
    }

    @ParameterizedTest(name = "on {0}") @ValueSource(strings = {"tumbler", "redis-server"})
    void lettuceMasterReplica(String side) throws Exception {
        ReplSet set = set(side);
        RedisURI.Builder b = RedisURI.Builder.sentinel("127.0.0.1", set.sentinelPorts.get(0), ReplSet.MASTER);
        for (int p : set.sentinelPorts.subList(1, set.sentinelPorts.size())) b.withSentinel("127.0.0.1", p);
        RedisURI uri = b.withTimeout(Duration.ofSeconds(5)).build();
        RedisClient client = RedisClient.create();
        String k = "lettuce-sentinel:" + run;
        try (StatefulRedisMasterReplicaConnection<String, String> conn = MasterReplica.connect(client, StringCodec.UTF8, uri)) {
            conn.setReadFrom(ReadFrom.UPSTREAM);
            var r = conn.sync();
            assertEquals("OK", r.set(k, "v1"));
            assertEquals(2L, r.waitForReplication(2, 2000), "both replicas acknowledge");
            conn.setReadFrom(ReadFrom.REPLICA);
            long before = replicaGets(set);
            assertEquals("v1", r.get(k), "read from a replica");
            assertEquals(before + 1, replicaGets(set), "the GET went to a replica (INFO commandstats)");

            int old = set.primaryPort();
            set.sentinelFailover();
            int now = set.awaitNewMaster(old, 30_000);
            conn.setReadFrom(ReadFrom.UPSTREAM);
            long deadline = System.currentTimeMillis() + 20_000;
            String v = null;
            int n = 0;
            while (System.currentTimeMillis() < deadline) {
                v = "v" + (++n + 1);
                try {
                    r.set(k, v);
                    if (v.equals(Resp.once(now, "GET", k))) break;
                } catch (RuntimeException e) {
                    // READONLY from the old primary until Lettuce refreshes its topology
                }
                Servers.sleep(100);
            }
            assertEquals(v, Resp.once(now, "GET", k), "Lettuce writes to the new primary " + now);
            assertEquals("master", String.valueOf(r.role().get(0)));
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            set.close();
        }
    }
}
