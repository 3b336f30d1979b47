package io.tumbler.compat.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.ClientOptions;
import io.tumbler.compat.Side;
import io.tumbler.compat.SidesBase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Lettuce (pinned) on tumbler and on redis-server, RESP3 (its default) and RESP2. */
class LettuceTest extends SidesBase {
    static final String UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    private static RedisClient client(Side s, ProtocolVersion v) {
        RedisClient c = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(s.port())
                .withTimeout(Duration.ofSeconds(5)).build());
        c.setOptions(ClientOptions.builder().protocolVersion(v).build());
        return c;
    }

    @ParameterizedTest(name = ON) @MethodSource("sides")
    void basicsResp3AndResp2(Side s) {
        for (ProtocolVersion v : List.of(ProtocolVersion.RESP3, ProtocolVersion.RESP2)) {
            RedisClient c = client(s, v);
            try (StatefulRedisConnection<String, String> conn = c.connect()) {
                RedisCommands<String, String> r = conn.sync();
                String k = "lettuce:" + run + ":" + v;
                assertEquals("PONG", r.ping());
                assertEquals("OK", r.set(k, "v"));
                assertEquals("v", r.get(k));
                r.hset(k + ":h", Map.of("a", "1", "b", "2"));
                assertEquals(Map.of("a", "1", "b", "2"), r.hgetall(k + ":h"));
                r.zadd(k + ":z", 1.0, "one");
                r.zadd(k + ":z", 2.0, "two");
                assertEquals(List.of("one", "two"), r.zrange(k + ":z", 0, -1));
                assertEquals(2.0, r.zscore(k + ":z", "two"));
                r.multi();
                r.incr(k + ":n");
                r.incrby(k + ":n", 4);
                var res = r.exec();
                assertEquals(5L, (Long) res.get(1));
                assertEquals(List.of(1L, "two"), r.eval("return {1, 'two'}", ScriptOutputType.MULTI));
            } finally {
                c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    @ParameterizedTest(name = ON) @MethodSource("sides")
    void pubSub(Side s) throws Exception {
        RedisClient c = client(s, ProtocolVersion.RESP3);
        try (StatefulRedisPubSubConnection<String, String> sub = c.connectPubSub();
             StatefulRedisConnection<String, String> pub = c.connect()) {
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            sub.addListener(new RedisPubSubAdapter<>() {
                @Override public void message(String channel, String message) { got.add(message); }
            });
            String ch = "lettuce:" + run + ":ch";
            sub.sync().subscribe(ch);
            assertEquals(1L, pub.sync().publish(ch, "hello"));
            assertEquals("hello", got.poll(5, TimeUnit.SECONDS));
        } finally {
            c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** SET NX PX, then a Lua compare-and-delete. */
    @ParameterizedTest(name = ON) @MethodSource("sides")
    void setNxPxLock(Side s) {
        RedisClient c = client(s, ProtocolVersion.RESP3);
        try (StatefulRedisConnection<String, String> conn = c.connect()) {
            RedisCommands<String, String> r = conn.sync();
            String k = "lettuce:" + run + ":lock";
            long lease = s.tumbler ? 30_000 : 500;
            assertEquals("OK", r.set(k, "owner-1", SetArgs.Builder.nx().px(lease)));
            assertNull(r.set(k, "owner-2", SetArgs.Builder.nx().px(lease)));
            Long notOwner = r.eval(UNLOCK, ScriptOutputType.INTEGER, new String[] {k}, "owner-2");
            assertEquals(0L, notOwner);
            Long owner = r.eval(UNLOCK, ScriptOutputType.INTEGER, new String[] {k}, "owner-1");
            assertEquals(1L, owner);
            assertEquals("OK", r.set(k, "owner-2", SetArgs.Builder.nx().px(lease)));
            assertTrue(r.pttl(k) > 0);
            s.lapse(lease);
            assertNull(r.get(k));
            assertEquals("OK", r.set(k, "owner-3", SetArgs.Builder.nx().px(lease)));
            String sha = r.scriptLoad(UNLOCK);
            Long viaSha = r.evalsha(sha, ScriptOutputType.INTEGER, new String[] {k}, "owner-3");
            assertEquals(1L, viaSha);
        } finally {
            c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }
}
