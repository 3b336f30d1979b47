package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.ReplSet;
import io.tumbler.compat.Resp;
import io.tumbler.compat.Servers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.api.RBucket;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.ReadMode;

/**
 * A lock held across a failover: a primary, 2 replicas and 3 sentinels, Redisson in sentinel mode.
 * The locks are taken, `SENTINEL FAILOVER mymaster` promotes a replica (which had them: the
 * replicas are in sync), and Redisson follows the new primary with the locks still held.
 */
class SentinelFailoverTest extends TargetsBase {
    @Override protected List<Target> createTargets() {
        return Topo.replSets(3, set -> Topo.sentinelConfig(set, ReadMode.SLAVE));
    }

    /** Redisson's own view: the master of its sentinel topology. */
    static int redissonMasterPort(RedissonClient c) {
        return c.getRedisNodes(RedisNodes.SENTINEL_MASTER_SLAVE).getMaster().getAddr().getPort();
    }

    /** Writes through Redisson until one lands on `port` (bounded): Redisson has moved its writes there. */
    static void awaitWritesOn(RedissonClient c, int port, String key, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        int n = 0;
        Throwable last = null;
        while (System.currentTimeMillis() < deadline) {
            String v = "v" + (++n);
            try {
                RBucket<String> b = c.getBucket(key, StringCodec.INSTANCE);
                b.set(v);
                if (v.equals(Resp.once(port, "GET", key)) && redissonMasterPort(c) == port) return;
            } catch (RuntimeException e) {
                last = e; // Redisson still on the old primary (READONLY or reconnecting)
            }
            Servers.sleep(100);
        }
        throw new AssertionError("Redisson's writes did not reach the new primary " + port + " in " + timeoutMs + " ms", last);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void lockHeldAcrossFailover(Target t) throws Exception {
        ReplSet set = t.repl;
        RedissonClient c = t.client();
        String name = key("failover");
        RLock lock = c.getLock(name);
        assertTrue(lock.tryLock(1, 60, TimeUnit.SECONDS));
        RFencedLock fenced = c.getFencedLock(key("failover-fenced"));
        Long token = fenced.tryLockAndGetToken(1, 60, TimeUnit.SECONDS);
        assertNotNull(token);

        int old = set.masterPort(0);
        assertEquals(set.primaryPort(), old);
        assertEquals(old, redissonMasterPort(c));
        set.sentinelFailover();
        int now = set.awaitNewMaster(old, 30_000);
        assertNotEquals(old, now);
        assertTrue(set.replicaPorts().contains(now), "a replica was promoted: " + now);
        assertEquals(1L, Resp.once(now, "EXISTS", name), "the promoted replica had the lock");

        awaitWritesOn(c, now, key("probe"), 20_000);
        assertEquals(now, redissonMasterPort(c), "Redisson follows the new primary");

        assertTrue(lock.isLocked(), "still held");
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(inThread(() -> lock.tryLock()), "another thread cannot take it");
        assertEquals(token, fenced.getToken());
        assertNull(inThread(() -> fenced.tryLockAndGetToken(100, TimeUnit.MILLISECONDS)), "fenced lock held too");

        lock.unlock();
        fenced.unlock();
        assertFalse(lock.isLocked());
        assertEquals(0L, Resp.once(now, "EXISTS", name));
        Long next = inThread(() -> {
            Long tok = fenced.tryLockAndGetToken(1, 5, TimeUnit.SECONDS);
            fenced.unlock();
            return tok;
        });
        assertNotNull(next);
        assertTrue(next > token, "tokens keep growing across the failover: " + token + " then " + next);
        assertTrue(inThread(() -> {
            boolean ok = lock.tryLock(1, 5, TimeUnit.SECONDS);
            if (ok) lock.unlock();
            return ok;
        }), "free for others after unlock");
    }
}
