package io.tumbler.compat.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.Side;
import io.tumbler.compat.SidesBase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.params.SetParams;

/** Jedis (pinned) on tumbler and on redis-server. */
class JedisTest extends SidesBase {
    static final String UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    @ParameterizedTest(name = ON) @MethodSource("sides")
    void basics(Side s) throws Exception {
        try (Jedis j = new Jedis("127.0.0.1", s.port())) {
            String k = "jedis:" + run + ":basics";
            assertEquals("PONG", j.ping());
            assertEquals("OK", j.set(k, "v"));
            assertEquals("v", j.get(k));
            assertEquals(3, j.incrBy(k + ":n", 3));
            j.hset(k + ":h", Map.of("a", "1", "b", "2"));
            assertEquals(Map.of("a", "1", "b", "2"), j.hgetAll(k + ":h"));
            j.rpush(k + ":l", "x", "y", "z");
            assertEquals(List.of("y", "z"), j.lrange(k + ":l", 1, -1));
            assertEquals(1, j.expire(k, 100));
            assertTrue(j.ttl(k) > 90);
            Pipeline p = j.pipelined();
            var r1 = p.incr(k + ":n");
            var r2 = p.get(k + ":n");
            p.sync();
            assertEquals(4L, r1.get());
            assertEquals("4", r2.get());
            Transaction tx = j.multi();
            tx.incr(k + ":n");
            tx.get(k + ":n");
            assertEquals(List.of(5L, "5"), tx.exec());
        }
    }

    @ParameterizedTest(name = ON) @MethodSource("sides")
    void pubSub(Side s) throws Exception {
        String ch = "jedis:" + run + ":ch";
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        JedisPubSub sub = new JedisPubSub() {
            @Override public void onMessage(String channel, String message) { got.add(message); }
        };
        Thread t = new Thread(() -> {
            try (Jedis j = new Jedis("127.0.0.1", s.port())) {
                j.subscribe(sub, ch);
            }
        });
        t.setDaemon(true);
        t.start();
        try (Jedis j = new Jedis("127.0.0.1", s.port())) {
            long deadline = System.currentTimeMillis() + 5000;
            while (j.pubsubNumSub(ch).getOrDefault(ch, 0L) < 1 && System.currentTimeMillis() < deadline) Thread.sleep(20);
            assertEquals(1, j.publish(ch, "hello"));
        }
        assertEquals("hello", got.poll(5, TimeUnit.SECONDS));
        sub.unsubscribe();
        t.join(5000);
    }

    /** The classic lock: SET NX PX, then a Lua compare-and-delete. */
    @ParameterizedTest(name = ON) @MethodSource("sides")
    void setNxPxLock(Side s) {
        try (Jedis j = new Jedis("127.0.0.1", s.port())) {
            String k = "jedis:" + run + ":lock";
            long lease = s.tumbler ? 30_000 : 500;
            assertEquals("OK", j.set(k, "owner-1", SetParams.setParams().nx().px(lease)));
            assertNull(j.set(k, "owner-2", SetParams.setParams().nx().px(lease)), "held");
            assertEquals(0L, j.eval(UNLOCK, List.of(k), List.of("owner-2")), "not the owner");
            assertEquals(1L, j.eval(UNLOCK, List.of(k), List.of("owner-1")));
            assertEquals("OK", j.set(k, "owner-2", SetParams.setParams().nx().px(lease)));
            s.lapse(lease);
            assertNull(j.get(k), "the lease lapsed");
            assertEquals("OK", j.set(k, "owner-3", SetParams.setParams().nx().px(lease)));
            String sha = j.scriptLoad(UNLOCK);
            assertEquals(1L, j.evalsha(sha, List.of(k), List.of("owner-3")));
        }
    }
}
