package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.Servers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.api.BatchOptions;
import org.redisson.api.BatchResult;
import org.redisson.api.FunctionMode;
import org.redisson.api.FunctionResult;
import org.redisson.api.LocalCachedMapOptions;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RBatch;
import org.redisson.api.RBitSet;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RBloomFilter;
import org.redisson.api.RBucket;
import org.redisson.api.RBuckets;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RDeque;
import org.redisson.api.RFunction;
import org.redisson.api.RGeo;
import org.redisson.api.RHyperLogLog;
import org.redisson.api.RIdGenerator;
import org.redisson.api.RKeys;
import org.redisson.api.RList;
import org.redisson.api.RLocalCachedMap;
import org.redisson.api.RLongAdder;
import org.redisson.api.RMap;
import org.redisson.api.RMapCache;
import org.redisson.api.RPatternTopic;
import org.redisson.api.RPriorityQueue;
import org.redisson.api.RQueue;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RReliableTopic;
import org.redisson.api.RRingBuffer;
import org.redisson.api.RScoredSortedSet;
import org.redisson.api.RScript;
import org.redisson.api.RSetCache;
import org.redisson.api.RShardedTopic;
import org.redisson.api.RStream;
import org.redisson.api.RTopic;
import org.redisson.api.RTransaction;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.api.TransactionOptions;
import org.redisson.api.stream.StreamAddArgs;
import org.redisson.api.stream.StreamCreateGroupArgs;
import org.redisson.api.stream.StreamReadGroupArgs;
import org.redisson.client.codec.StringCodec;

/**
 * Redisson's objects beyond locks; each runs on tumbler and on redis-server.
 * (RMapCacheNative, hash-field expiry: MapCacheNativeTest, against a Redis 8 control.)
 */
public abstract class ObjectScenarios extends TargetsBase {

    /** Keys that must share a slot in cluster mode get one hash tag. */
    private String tag(String what) { return "{" + key(what) + "}"; }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void bucketAndBuckets(Target t) {
        RedissonClient c = t.client();
        RBucket<String> b = c.getBucket(key("bucket"), StringCodec.INSTANCE);
        assertNull(b.get());
        assertTrue(b.setIfAbsent("one"));
        assertFalse(b.setIfAbsent("two"));
        assertEquals("one", b.getAndSet("two"));
        assertTrue(b.compareAndSet("two", "three"));
        assertFalse(b.compareAndSet("two", "four"));
        b.set("ttl", Duration.ofSeconds(30));
        long ttl = b.remainTimeToLive();
        assertTrue(ttl > 25_000 && ttl <= 30_000, "ttl " + ttl);
        assertEquals("ttl", b.getAndDelete());
        assertFalse(b.isExists());

        String tg = tag("buckets");
        RBuckets bs = c.getBuckets(StringCodec.INSTANCE);
        bs.set(Map.of(tg + "a", "1", tg + "b", "2"));
        Map<String, String> got = bs.get(tg + "a", tg + "b", tg + "missing");
        assertEquals(Map.of(tg + "a", "1", tg + "b", "2"), got);
        assertFalse(bs.trySet(Map.of(tg + "a", "x", tg + "c", "3")));
        assertNull(c.getBucket(tg + "c").get());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void map(Target t) {
        RMap<String, String> m = t.client().getMap(key("map"), StringCodec.INSTANCE);
        assertNull(m.put("a", "1"));
        assertEquals("1", m.put("a", "2"));
        assertNull(m.putIfAbsent("b", "3"));
        assertTrue(m.fastPut("c", "4"));
        assertEquals("12", String.valueOf((Object) m.addAndGet("c", 8)));
        assertEquals(Map.of("a", "2", "b", "3", "c", "12"), m.readAllMap());
        assertEquals(Set.of("a", "b", "c"), m.readAllKeySet());
        assertEquals(Map.of("a", "2", "c", "12"), m.getAll(Set.of("a", "c", "zz")));
        assertTrue(m.replace("a", "2", "5"));
        assertEquals(1, m.fastRemove("b"));
        int n = 0;
        for (Map.Entry<String, String> e : m.entrySet()) n += Integer.parseInt(e.getValue());
        assertEquals(17, n);
        assertEquals(2, m.size());
        RMap<String, Integer> objects = t.client().getMap(key("map-codec"));
        objects.put("x", 42);
        assertEquals(42, objects.get("x"));
    }

    /** The short entries' time to live in mapCache and setCache. */
    private static final long TTL_MS = 1000;

    private static long msSince(long nanoTime) {
        return (System.nanoTime() - nanoTime) / 1_000_000;
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void mapCache(Target t) throws Exception {
        // RMapCache expires entries by the client's clock, passed into its scripts: real time on both sides
        RMapCache<String, String> m = t.client().getMapCache(key("mapcache"));
        m.put("keep", "v");
        long put = System.nanoTime();
        m.put("short", "v", TTL_MS, TimeUnit.MILLISECONDS);
        m.putIfAbsent("idle", "v", 0, TimeUnit.MILLISECONDS, TTL_MS, TimeUnit.MILLISECONDS);
        int size = m.size();
        String still = m.get("short");
        // Present while well inside the TTL; a loaded machine may stall past it, and then
        // only the expiry below is checked.
        if (msSince(put) < TTL_MS - 200) {
            assertEquals(3, size);
            assertEquals("v", still);
        }
        Thread.sleep(Math.max(0, TTL_MS + 300 - msSince(put)));
        assertNull(m.get("short"));
        assertNull(m.get("idle"));
        assertEquals("v", m.get("keep"));
        assertTrue(m.remainTimeToLive("keep") < 0);
        assertEquals(Set.of("keep"), m.readAllKeySet());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void setCache(Target t) throws Exception {
        RSetCache<String> s = t.client().getSetCache(key("setcache"));
        assertTrue(s.add("keep"));
        long put = System.nanoTime();
        assertTrue(s.add("short", TTL_MS, TimeUnit.MILLISECONDS));
        assertFalse(s.add("keep"));
        boolean still = s.contains("short");
        if (msSince(put) < TTL_MS - 200) assertTrue(still, "present inside its TTL");
        Thread.sleep(Math.max(0, TTL_MS + 300 - msSince(put)));
        assertFalse(s.contains("short"));
        assertEquals(Set.of("keep"), s.readAll());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    @SuppressWarnings("deprecation")
    void localCachedMapTwoClients(Target t) throws Exception {
        String name = key("lcm");
        LocalCachedMapOptions<String, String> opts = LocalCachedMapOptions.<String, String>defaults()
                .syncStrategy(LocalCachedMapOptions.SyncStrategy.INVALIDATE);
        RLocalCachedMap<String, String> a = t.client().getLocalCachedMap(name, opts);
        RLocalCachedMap<String, String> b = t.newClient().getLocalCachedMap(name, opts);
        a.put("k", "1");
        assertEquals("1", b.get("k"));
        // a's put also publishes an invalidation, which can reach b after b cached the value
        // (seen on a loaded machine against both servers): read again until the copy has
        // stayed for 300 ms, bounded.
        long cachedBy = System.currentTimeMillis() + 10000;
        long stableSince = -1;
        while (System.currentTimeMillis() < cachedBy) {
            if (!b.getCachedMap().containsKey("k")) {
                stableSince = -1;
                assertEquals("1", b.get("k"));
            } else if (stableSince < 0) {
                stableSince = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - stableSince >= 300) {
                break;
            }
            Thread.sleep(20);
        }
        assertTrue(b.getCachedMap().containsKey("k"), "b cached it");
        a.put("k", "2"); // invalidates b's copy over pub/sub
        long deadline = System.currentTimeMillis() + 5000;
        while (b.getCachedMap().containsKey("k") && "1".equals(b.getCachedMap().get("k"))
                && System.currentTimeMillis() < deadline) Thread.sleep(20);
        assertEquals("2", b.get("k"), "b sees the new value");
        a.fastRemove("k");
        deadline = System.currentTimeMillis() + 5000;
        while (b.getCachedMap().containsKey("k") && System.currentTimeMillis() < deadline) Thread.sleep(20);
        assertNull(b.get("k"));
        a.put("x", "1");
        a.clearLocalCache();
        assertTrue(a.getCachedMap().isEmpty());
        assertEquals("1", a.get("x"));
        a.destroy();
        b.destroy();
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void scoredSortedSet(Target t) {
        RScoredSortedSet<String> z = t.client().getScoredSortedSet(key("zset"), StringCodec.INSTANCE);
        assertTrue(z.add(3, "c"));
        z.add(1, "a");
        z.add(2, "b");
        assertEquals(0, z.rank("a"));
        assertEquals(List.of("a", "b"), new ArrayList<>(z.valueRange(0, 1)));
        assertEquals(7.0, z.addScore("a", 6));
        assertEquals(List.of("b", "c", "a"), new ArrayList<>(z.readAll()));
        assertEquals(2, z.count(2, true, 3, true));
        assertEquals("b", z.pollFirst());
        assertEquals(2, z.size());
        assertEquals(7.0, z.getScore("a"));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void list(Target t) {
        RList<String> l = t.client().getList(key("list"), StringCodec.INSTANCE);
        l.addAll(List.of("a", "b", "c", "d"));
        assertEquals("c", l.get(2));
        l.add(1, "x");
        assertEquals(List.of("a", "x", "b", "c", "d"), l.readAll());
        assertTrue(l.remove("x"));
        assertEquals("B", l.set(1, "B") == null ? "B" : l.get(1));
        assertEquals(List.of("B", "c"), l.range(1, 2));
        l.trim(0, 1);
        assertEquals(List.of("a", "B"), l.readAll());
        assertEquals(1, l.indexOf("B"));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void queueAndDeque(Target t) {
        RQueue<String> q = t.client().getQueue(key("queue"));
        assertTrue(q.offer("1"));
        q.offer("2");
        assertEquals("1", q.peek());
        assertEquals("1", q.poll());
        assertEquals(List.of("2"), q.readAll());
        RDeque<String> d = t.client().getDeque(key("deque"));
        d.addFirst("b");
        d.addFirst("a");
        d.addLast("c");
        assertEquals("a", d.peekFirst());
        assertEquals("c", d.pollLast());
        assertEquals(List.of("a", "b"), d.readAll());
        assertEquals("b", d.removeLast());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void blockingQueue(Target t) throws Exception {
        RBlockingQueue<String> q = t.client().getBlockingQueue(key("bq"));
        long start = System.nanoTime();
        assertNull(q.poll(300, TimeUnit.MILLISECONDS));
        assertTrue(System.nanoTime() - start >= 250_000_000L, "poll waited");
        Future<String> taker = async(q::take);
        Thread.sleep(200);
        q.offer("hello");
        assertEquals("hello", taker.get(10, TimeUnit.SECONDS));
        q.addAll(List.of("a", "b", "c"));
        List<String> drained = new ArrayList<>();
        assertEquals(3, q.drainTo(drained));
        assertEquals(List.of("a", "b", "c"), drained);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void delayedQueue(Target t) throws Exception {
        String tg = tag("delayed");
        RBlockingQueue<String> dest = t.client().getBlockingQueue(tg + "dest");
        RDelayedQueue<String> delayed = t.client().getDelayedQueue(dest);
        try {
            delayed.offer("later", 400, TimeUnit.MILLISECONDS);
            delayed.offer("sooner", 100, TimeUnit.MILLISECONDS);
            assertEquals(2, delayed.size());
            assertNull(dest.poll());
            assertEquals("sooner", dest.poll(5, TimeUnit.SECONDS));
            assertEquals("later", dest.poll(5, TimeUnit.SECONDS));
            assertEquals(0, delayed.size());
        } finally {
            delayed.destroy();
        }
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void priorityQueue(Target t) {
        RPriorityQueue<Integer> q = t.client().getPriorityQueue(key("pq"));
        q.add(3);
        q.add(1);
        q.add(2);
        assertEquals(1, q.peek());
        assertEquals(1, q.poll());
        assertEquals(2, q.poll());
        assertEquals(List.of(3), q.readAll());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void ringBuffer(Target t) {
        RRingBuffer<Integer> r = t.client().getRingBuffer(key("ring"));
        assertTrue(r.trySetCapacity(3));
        r.addAll(List.of(1, 2, 3, 4, 5));
        assertEquals(List.of(3, 4, 5), r.readAll());
        assertEquals(0, r.remainingCapacity());
        assertEquals(3, r.poll());
        assertEquals(3, r.capacity());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void topic(Target t) throws Exception {
        RTopic topic = t.client().getTopic(key("topic"), StringCodec.INSTANCE);
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        int id = topic.addListener(String.class, (ch, msg) -> got.add(ch + "=" + msg));
        RTopic pub = t.newClient().getTopic(topic.getChannelNames().get(0), StringCodec.INSTANCE);
        assertTrue(pub.publish("hi") >= 1, "one subscriber");
        assertEquals(topic.getChannelNames().get(0) + "=hi", got.poll(5, TimeUnit.SECONDS));
        topic.removeListener(id);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void patternTopic(Target t) throws Exception {
        String prefix = key("ptopic");
        RPatternTopic pt = t.client().getPatternTopic(prefix + ".*", StringCodec.INSTANCE);
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        int id = pt.addListener(String.class, (pattern, ch, msg) -> got.add(pattern + "|" + ch + "|" + msg));
        t.client().getTopic(prefix + ".x", StringCodec.INSTANCE).publish("m1");
        assertEquals(prefix + ".*|" + prefix + ".x|m1", got.poll(5, TimeUnit.SECONDS));
        pt.removeListener(id);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void reliableTopic(Target t) throws Exception {
        RReliableTopic rt = t.client().getReliableTopic(key("rtopic"));
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        String id = rt.addListener(String.class, (ch, msg) -> got.add(msg));
        assertEquals(1, rt.countListeners());
        rt.publish("r1");
        rt.publish("r2");
        // Delivery is at least once: Redisson's poller may hand a message over twice when
        // its poll races a publish (seen once against the real redis-server on the loaded CI
        // machine). Both arrive, in order, within the bound; a repeat is skipped.
        List<String> order = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 5000;
        while (order.size() < 2 && System.currentTimeMillis() < deadline) {
            String m = got.poll(100, TimeUnit.MILLISECONDS);
            if (m != null && !order.contains(m)) order.add(m);
        }
        assertEquals(List.of("r1", "r2"), order);
        rt.removeListener(id);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void shardedTopic(Target t) throws Exception {
        RShardedTopic st = t.client().getShardedTopic(key("stopic"), StringCodec.INSTANCE);
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        int id = st.addListener(String.class, (ch, msg) -> got.add(msg));
        assertEquals(1, st.publish("s1"));
        assertEquals("s1", got.poll(5, TimeUnit.SECONDS));
        st.removeListener(id);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void stream(Target t) {
        RStream<String, String> s = t.client().getStream(key("stream"), StringCodec.INSTANCE);
        s.createGroup(StreamCreateGroupArgs.name("g").makeStream());
        var id1 = s.add(StreamAddArgs.entry("f", "1"));
        var id2 = s.add(StreamAddArgs.entries(Map.of("f", "2")));
        assertEquals(2, s.size());
        var read = s.readGroup("g", "consumer", StreamReadGroupArgs.neverDelivered().count(10));
        assertEquals(2, read.size());
        assertEquals(Map.of("f", "1"), read.get(id1));
        assertEquals(2, s.getPendingInfo("g").getTotal());
        assertEquals(2, s.ack("g", id1, id2));
        assertEquals(0, s.getPendingInfo("g").getTotal());
        assertEquals(2, s.range(id1, id2).size());
        s.trim(org.redisson.api.stream.StreamTrimArgs.maxLen(1).noLimit());
        assertEquals(1, s.size());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void atomicLong(Target t) {
        RAtomicLong a = t.client().getAtomicLong(key("along"));
        assertEquals(1, a.incrementAndGet());
        assertEquals(1, a.getAndAdd(9));
        assertTrue(a.compareAndSet(10, 20));
        assertFalse(a.compareAndSet(10, 30));
        assertEquals(19, a.decrementAndGet());
        assertEquals(19, a.getAndDelete());
        assertEquals(0, a.get());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void longAdder(Target t) {
        String name = key("adder");
        RLongAdder a = t.client().getLongAdder(name);
        RLongAdder b = t.newClient().getLongAdder(name);
        a.add(5);
        b.increment();
        b.increment();
        assertEquals(7, a.sum(), "sum gathers every client's counter over pub/sub");
        a.reset();
        assertEquals(0, b.sum());
        a.destroy();
        b.destroy();
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void idGenerator(Target t) {
        RIdGenerator g = t.client().getIdGenerator(key("ids"));
        assertTrue(g.tryInit(100, 5));
        long prev = 99;
        for (int i = 0; i < 12; i++) {
            long id = g.nextId();
            assertEquals(prev + 1, id);
            prev = id;
        }
        RIdGenerator other = t.newClient().getIdGenerator(g.getName());
        assertTrue(other.nextId() > prev, "another client's block follows");
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void hyperLogLog(Target t) {
        String tg = tag("hll");
        RHyperLogLog<String> a = t.client().getHyperLogLog(tg + "a", StringCodec.INSTANCE);
        RHyperLogLog<String> b = t.client().getHyperLogLog(tg + "b", StringCodec.INSTANCE);
        List<String> xs = new ArrayList<>();
        for (int i = 0; i < 1000; i++) xs.add("x" + i);
        assertTrue(a.addAll(xs));
        for (int i = 500; i < 1500; i++) b.add("x" + i);
        long ca = a.count();
        assertTrue(Math.abs(ca - 1000) < 30, "count " + ca);
        long union = a.countWith(b.getName());
        assertTrue(Math.abs(union - 1500) < 45, "union " + union);
        a.mergeWith(b.getName());
        assertEquals(union, a.count());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void bitSet(Target t) {
        String tg = tag("bits");
        RBitSet a = t.client().getBitSet(tg + "a");
        RBitSet b = t.client().getBitSet(tg + "b");
        assertFalse(a.set(3));
        a.set(7);
        a.set(100, true);
        assertTrue(a.get(7));
        assertFalse(a.get(8));
        assertEquals(3, a.cardinality());
        assertEquals(101, a.length());
        b.set(7);
        b.set(9);
        a.and(b.getName());
        assertEquals(1, a.cardinality());
        assertTrue(a.get(7));
        a.clear(7);
        assertEquals(0, a.cardinality());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void bloomFilter(Target t) {
        RBloomFilter<String> f = t.client().getBloomFilter(key("bloom"));
        assertTrue(f.tryInit(1000, 0.01));
        assertFalse(t.client().getBloomFilter(f.getName()).tryInit(10, 0.1), "already initialised");
        for (int i = 0; i < 200; i++) f.add("item" + i);
        for (int i = 0; i < 200; i++) assertTrue(f.contains("item" + i));
        int fp = 0;
        for (int i = 0; i < 200; i++) if (f.contains("other" + i)) fp++;
        assertTrue(fp < 15, "false positives " + fp);
        long n = f.count();
        assertTrue(Math.abs(n - 200) < 20, "count " + n);
    }

    /** GeoUnit and GeoEntry moved to org.redisson.api.geo in 4.x: the geo calls go through reflection. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object km() throws Exception {
        Class<?> unit;
        try {
            unit = Class.forName("org.redisson.api.geo.GeoUnit");
        } catch (ClassNotFoundException e) {
            unit = Class.forName("org.redisson.api.GeoUnit");
        }
        return Enum.valueOf((Class) unit, "KILOMETERS");
    }

    private static Object searchArgs(double lon, double lat, double radiusKm) throws Exception {
        Object km = km();
        Object from = Class.forName("org.redisson.api.geo.GeoSearchArgs").getMethod("from", double.class, double.class)
                .invoke(null, lon, lat);
        for (var m : from.getClass().getMethods()) {
            if (m.getName().equals("radius") && m.getParameterCount() == 2 && m.getParameterTypes()[1] == ((Enum<?>) km).getDeclaringClass()) {
                m.setAccessible(true);
                return m.invoke(from, radiusKm, km);
            }
        }
        throw new IllegalStateException("no GeoSearchArgs.radius(double, GeoUnit)");
    }

    @SuppressWarnings("unchecked")
    private static <R> R call(Object target, String name, Object... args) throws Exception {
        for (var m : RGeo.class.getMethods()) {
            if (!m.getName().equals(name) || m.getParameterCount() != args.length) continue;
            Class<?>[] ps = m.getParameterTypes();
            boolean ok = true;
            for (int i = 0; i < ps.length && ok; i++) {
                Class<?> p = ps[i].isPrimitive() ? (ps[i] == double.class ? Double.class : Long.class) : ps[i];
                ok = args[i] == null || p.isInstance(args[i]);
            }
            if (ok) return (R) m.invoke(target, args);
        }
        throw new IllegalStateException("no RGeo." + name);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void geo(Target t) throws Exception {
        RGeo<String> g = t.client().getGeo(key("geo"), StringCodec.INSTANCE);
        assertEquals(1, g.add(13.361389, 38.115556, "Palermo"));
        assertEquals(1, g.add(15.087269, 37.502669, "Catania"));
        Double d = call(g, "dist", "Palermo", "Catania", km());
        assertEquals(166.2742, d, 0.001);
        List<String> near = call(g, "search", searchArgs(15, 37, 200));
        assertEquals(Set.of("Palermo", "Catania"), new HashSet<>(near));
        List<String> closer = call(g, "search", searchArgs(15, 37, 100));
        assertEquals(List.of("Catania"), closer);
        assertEquals(2, g.hash("Palermo", "Catania").size());
        assertEquals(2, g.pos("Palermo", "Catania").size());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void rateLimiter(Target t) {
        RRateLimiter r = t.client().getRateLimiter(key("rate"));
        assertTrue(r.trySetRate(RateType.OVERALL, 3, Duration.ofSeconds(30)));
        assertTrue(r.tryAcquire());
        assertTrue(r.tryAcquire(2));
        assertFalse(r.tryAcquire(), "the rate is used up");
        assertEquals(0, r.availablePermits());
        assertEquals(3, r.getConfig().getRate());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void transaction(Target t) {
        RedissonClient c = t.client();
        String tg = tag("tx");
        c.getBucket(tg + "b", StringCodec.INSTANCE).set("old");
        RTransaction tx = c.createTransaction(TransactionOptions.defaults());
        tx.getBucket(tg + "b", StringCodec.INSTANCE).set("new");
        tx.getMap(tg + "m", StringCodec.INSTANCE).put("k", "v");
        assertEquals("old", c.getBucket(tg + "b", StringCodec.INSTANCE).get(), "not yet visible");
        tx.commit();
        assertEquals("new", c.getBucket(tg + "b", StringCodec.INSTANCE).get());
        assertEquals("v", c.getMap(tg + "m", StringCodec.INSTANCE).get("k"));
        RTransaction rb = c.createTransaction(TransactionOptions.defaults());
        rb.getBucket(tg + "b", StringCodec.INSTANCE).set("rolled back");
        rb.rollback();
        assertEquals("new", c.getBucket(tg + "b", StringCodec.INSTANCE).get());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void batchAtomicAndNot(Target t) {
        RedissonClient c = t.client();
        String tg = tag("batch");
        RBatch atomic = c.createBatch(BatchOptions.defaults().executionMode(BatchOptions.ExecutionMode.IN_MEMORY_ATOMIC));
        atomic.getBucket(tg + "a", StringCodec.INSTANCE).setAsync("1");
        atomic.getAtomicLong(tg + "n").incrementAndGetAsync();
        atomic.getAtomicLong(tg + "n").addAndGetAsync(5);
        atomic.getMap(tg + "m", StringCodec.INSTANCE).fastPutAsync("k", "v");
        BatchResult<?> r = atomic.execute();
        assertEquals(4, r.getResponses().size());
        assertEquals(6L, r.getResponses().get(2));
        RBatch plain = c.createBatch(BatchOptions.defaults());
        for (int i = 0; i < 20; i++) plain.getBucket(key("batch-plain"), StringCodec.INSTANCE).setAsync("v" + i);
        plain.getAtomicLong(tg + "n").getAsync();
        BatchResult<?> r2 = plain.execute();
        assertEquals(21, r2.getResponses().size());
        assertEquals(6L, r2.getResponses().get(20));
        assertEquals("1", c.getBucket(tg + "a", StringCodec.INSTANCE).get());
    }

    /** 4.x renamed ReturnType.INTEGER/MULTI to LONG/LIST. */
    private static RScript.ReturnType rt(String v3, String v4) {
        for (RScript.ReturnType r : RScript.ReturnType.values()) if (r.name().equals(v3) || r.name().equals(v4)) return r;
        throw new IllegalStateException(v3);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void script(Target t) {
        RScript s = t.client().getScript(StringCodec.INSTANCE);
        String k = key("script");
        Object r = s.eval(k, RScript.Mode.READ_WRITE, "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])",
                RScript.ReturnType.VALUE, Collections.singletonList(k), "v1");
        assertEquals("v1", r);
        String sha = s.scriptLoad("return tonumber(ARGV[1]) + 1");
        Long n = s.evalSha(RScript.Mode.READ_ONLY, sha, rt("INTEGER", "LONG"), Collections.emptyList(), "41");
        assertEquals(42L, n);
        assertEquals(List.of(true), s.scriptExists(sha));
        List<Object> multi = s.eval(k, RScript.Mode.READ_ONLY, "return {1, 'two', KEYS[1]}", rt("MULTI", "LIST"),
                Collections.singletonList(k));
        assertEquals(Arrays.asList(1L, "two", k), multi);
        assertThrows(RuntimeException.class, () -> s.eval(RScript.Mode.READ_ONLY, "return redis.call('nosuchcommand')",
                RScript.ReturnType.VALUE));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void function(Target t) {
        RFunction f = t.client().getFunction(StringCodec.INSTANCE);
        String lib = "compatlib" + key("fn").replaceAll("[^a-zA-Z0-9]", "");
        f.load(lib, "redis.register_function('" + lib + "_set', function(keys, args) "
                + "redis.call('set', keys[1], args[1]); return redis.call('get', keys[1]) end)\n"
                + "redis.register_function{function_name='" + lib + "_ro', callback=function(keys, args) return #args end, "
                + "flags={'no-writes'}}");
        String k = key("fnkey");
        Object r = f.call(FunctionMode.WRITE, lib + "_set", FunctionResult.STRING, Collections.singletonList(k), "val");
        assertEquals("val", r);
        Long n = f.call(FunctionMode.READ, lib + "_ro", FunctionResult.LONG, Collections.emptyList(), "a", "b", "c");
        assertEquals(3L, n);
        f.delete(lib);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void keys(Target t) {
        RedissonClient c = t.client();
        RKeys keys = c.getKeys();
        String prefix = key("keys");
        for (int i = 0; i < 5; i++) c.getBucket(prefix + ":" + i, StringCodec.INSTANCE).set("v");
        Set<String> found = new HashSet<>();
        keys.getKeysByPattern(prefix + ":*").forEach(found::add);
        assertEquals(5, found.size());
        assertEquals(2, keys.countExists(prefix + ":0", prefix + ":1", prefix + ":nope"));
        assertTrue(keys.expire(prefix + ":0", 60, TimeUnit.SECONDS));
        long ttl = keys.remainTimeToLive(prefix + ":0");
        assertTrue(ttl > 50_000 && ttl <= 60_000);
        assertEquals(org.redisson.api.RType.OBJECT, keys.getType(prefix + ":1"));
        assertEquals(3, keys.delete(prefix + ":0", prefix + ":1", prefix + ":2"));
        assertEquals(2, keys.deleteByPattern(prefix + ":*"));
        assertTrue(keys.count() >= 0);
        assertEquals(-2, keys.remainTimeToLive(prefix + ":3"));
    }
}
