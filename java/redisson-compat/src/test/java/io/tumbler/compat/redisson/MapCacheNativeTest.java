package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

import io.tumbler.compat.Resp;
import io.tumbler.compat.ServerProc;
import io.tumbler.compat.Servers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.api.RMapCacheNative;
import org.redisson.api.listener.MapExpiredListener;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Protocol;

/**
 * Redisson's RMapCacheNative: a hash whose fields expire on their own (HPEXPIRE, HPTTL, HSETEX
 * and HPERSIST inside Redisson's scripts; Redis 7.4+). Each scenario runs on
 * `tumbler --personality redis-8.0` and on redis8-server (Redis 8.0) with the same expectations.
 * Expiry is the servers' own clock, so both sides wait real time (TTL_MS, short).
 * Runs in the redis8 Maven profile only (scripts/ci/java-compat.sh, COMPAT_RUNS=... redis8).
 */
class MapCacheNativeTest extends TargetsBase {
    private static final long TTL_MS = 1000;
    /** How long past a TTL active expiry may take to reclaim a field (both servers run it 10 times a second). */
    private static final long RECLAIM_MS = 3000;

    @Override
    protected List<Target> createTargets() {
        List<Target> out = new ArrayList<>();
        ServerProc t = Servers.tumbler(1, "--personality", "redis-8.0");
        out.add(new Target("tumbler", true, List.of(t), t.ports, List.of(Topo.singleConfig(t.port(), Protocol.RESP3))));
        try {
            ServerProc r = Servers.redis8();
            out.add(new Target("redis8-server", false, List.of(r), r.ports, List.of(Topo.singleConfig(r.port(), Protocol.RESP3))));
        } catch (RuntimeException | Error e) {
            out.forEach(Target::close);
            throw e;
        }
        return out;
    }

    private RMapCacheNative<String, String> map(Target t, String what) {
        return t.client().getMapCacheNative(key(what), StringCodec.INSTANCE);
    }

    private static long msSince(long nanoTime) {
        return (System.nanoTime() - nanoTime) / 1_000_000;
    }

    private static void sleepUntil(long startNanos, long ms) throws InterruptedException {
        Thread.sleep(Math.max(0, ms - msSince(startNanos)));
    }

    /** Polls until `value` gives `want` or RECLAIM_MS passes; returns the last value. */
    private static int eventually(int want, IntSupplier value) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RECLAIM_MS);
        int v = value.getAsInt();
        while (v != want && System.nanoTime() < deadline) {
            Thread.sleep(50);
            v = value.getAsInt();
        }
        return v;
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void putWithTtlGetAndExpiry(Target t) throws Exception {
        RMapCacheNative<String, String> m = map(t, "put-ttl");
        assertNull(m.put("keep", "v0"));
        long put = System.nanoTime();
        assertNull(m.put("short", "v1", Duration.ofMillis(TTL_MS)));
        assertNull(m.put("short2", "x", Duration.ofMillis(TTL_MS)));
        assertEquals("x", m.put("short2", "y", Duration.ofMillis(TTL_MS)), "put gives the old value");
        String got = m.get("short");
        long ttl = m.remainTimeToLive("short");
        if (msSince(put) < TTL_MS - 200) {      // a loaded machine may stall past the TTL
            assertEquals("v1", got);
            assertTrue(ttl > 0 && ttl <= TTL_MS, "remainTimeToLive " + ttl);
            assertEquals(3, m.size());
            assertTrue(m.containsKey("short"));
        }
        assertEquals(-1, m.remainTimeToLive("keep"), "no TTL");
        assertEquals(-2, m.remainTimeToLive("missing"), "no field");
        sleepUntil(put, TTL_MS + 300);
        assertNull(m.get("short"));
        assertNull(m.get("short2"));
        assertFalse(m.containsKey("short"));
        assertEquals(-2, m.remainTimeToLive("short"));
        assertEquals("v0", m.get("keep"));
        assertEquals(Map.of("keep", "v0"), m.readAllMap());
        assertEquals(1, eventually(1, m::size), "size after expiry");
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void putAllWithTtl(Target t) throws Exception {
        RMapCacheNative<String, String> m = map(t, "putall");
        Map<String, String> batch = new LinkedHashMap<>();
        for (int i = 0; i < 5; i++) batch.put("f" + i, "v" + i);
        long put = System.nanoTime();
        m.putAll(batch, Duration.ofMillis(TTL_MS));
        Map<String, Long> ttls = m.remainTimeToLive(Set.of("f0", "f4", "nope"));
        if (msSince(put) < TTL_MS - 200) {
            assertEquals(batch, m.readAllMap());
            assertEquals(5, m.size());
            assertTrue(ttls.get("f0") > 0 && ttls.get("f0") <= TTL_MS, "f0 " + ttls);
            assertTrue(ttls.get("f4") > 0 && ttls.get("f4") <= TTL_MS, "f4 " + ttls);
        }
        assertEquals(-2L, ttls.get("nope"), String.valueOf(ttls));
        sleepUntil(put, TTL_MS + 300);
        assertEquals(Map.of(), m.readAllMap());
        assertEquals(0, eventually(0, m::size), "size after expiry");
        // the hash is gone with its last field
        assertFalse(m.isExists());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void fastPutAndPutIfAbsent(Target t) throws Exception {
        RMapCacheNative<String, String> m = map(t, "fastput");
        long put = System.nanoTime();
        assertTrue(m.fastPut("a", "1", Duration.ofMillis(TTL_MS)), "new field");
        assertFalse(m.fastPut("a", "2", Duration.ofMillis(TTL_MS)), "existing field");
        assertTrue(m.fastPutIfAbsent("b", "1", Duration.ofMillis(TTL_MS)));
        assertFalse(m.fastPutIfAbsent("b", "2", Duration.ofMillis(TTL_MS)));
        assertNull(m.putIfAbsent("c", "1", Duration.ofMillis(TTL_MS)));
        assertEquals("1", m.putIfAbsent("c", "2", Duration.ofMillis(TTL_MS)));
        assertNull(m.putIfExist("d", "1", Duration.ofMillis(TTL_MS)), "absent: not put");
        assertFalse(m.containsKey("d"));
        if (msSince(put) < TTL_MS - 200) {
            assertEquals(Map.of("a", "2", "b", "1", "c", "1"), m.readAllMap());
        }
        sleepUntil(put, TTL_MS + 300);
        assertNull(m.get("a"));
        assertTrue(m.fastPutIfAbsent("b", "3", Duration.ofMillis(TTL_MS)), "expired field counts as absent");
        assertEquals("3", m.get("b"));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void expireEntryAndClearExpire(Target t) throws Exception {
        RMapCacheNative<String, String> m = map(t, "expire-entry");
        m.put("a", "1");
        m.put("b", "2");
        m.put("c", "3");
        assertFalse(m.expireEntry("missing", Duration.ofSeconds(100)));
        assertTrue(m.expireEntry("a", Duration.ofSeconds(100)));
        assertFalse(m.expireEntryIfNotSet("a", Duration.ofSeconds(200)), "NX: has a TTL");
        assertTrue(m.expireEntryIfNotSet("b", Duration.ofSeconds(200)), "NX: had none");
        assertTrue(m.expireEntryIfGreater("a", Duration.ofSeconds(300)), "GT");
        assertFalse(m.expireEntryIfGreater("a", Duration.ofSeconds(50)), "GT: smaller");
        assertTrue(m.expireEntryIfLess("a", Duration.ofSeconds(50)), "LT");
        long a = m.remainTimeToLive("a");
        assertTrue(a > 40_000 && a <= 50_000, "a " + a);
        assertEquals(2, m.expireEntries(Set.of("a", "c", "missing"), Duration.ofSeconds(60)));
        assertTrue(m.clearExpire("a"));
        assertFalse(m.clearExpire("a"), "no TTL left");
        assertEquals(-1, m.remainTimeToLive("a"));
        Map<String, Boolean> cleared = m.clearExpire(Set.of("b", "c"));
        assertEquals(Map.of("b", true, "c", true), cleared);
        assertEquals(Map.of("a", "1", "b", "2", "c", "3"), m.readAllMap());
        // a TTL in the past deletes the field at once
        m.put("gone", "x");
        assertTrue(m.expireEntry("gone", Duration.ofMillis(1)));
        Thread.sleep(20);
        assertNull(m.get("gone"));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void expiredListener(Target t) throws Exception {
        // Redisson's MapExpiredListener subscribes to the hexpired keyevent, which needs E and h
        Resp.once(t.ports.get(0), "CONFIG", "SET", "notify-keyspace-events", "Eh");
        try {
            RMapCacheNative<String, String> m = map(t, "listener");
            BlockingQueue<String> names = new LinkedBlockingQueue<>();
            int id = m.addListener((MapExpiredListener) (name, field) -> names.add(name));
            try {
                Thread.sleep(200);   // the pattern subscriptions are in place
                m.put("f", "v", Duration.ofMillis(300));
                String name = names.poll(RECLAIM_MS + 2000, TimeUnit.MILLISECONDS);
                assertEquals(m.getName(), name, "hexpired event for the map");
                assertNull(m.get("f"));
            } finally {
                m.removeListener(id);
            }
        } finally {
            Resp.once(t.ports.get(0), "CONFIG", "SET", "notify-keyspace-events", "");
        }
    }
}
