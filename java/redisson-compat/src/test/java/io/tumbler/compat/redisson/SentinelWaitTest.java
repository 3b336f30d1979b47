package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.ReplSet;
import io.tumbler.compat.Resp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.command.NoSyncedSlavesException;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;

/**
 * Asynchronous replication and locks, Redisson in sentinel mode (a primary, 2 replicas, 3
 * sentinels; each test its own set, since it breaks it). The replicas' link stalls (tumbler:
 * TUMBLER.REPL PAUSE; redis-server: SIGSTOP of the replica processes, and for the lost lock also
 * CLIENT KILL TYPE replica on the primary, so that the write never leaves it).
 *
 * - With checkLockSyncedSlaves (Redisson runs WAIT after taking a lock) the lock is refused:
 *   NoSyncedSlavesException, and Redisson releases what it took. Protected by WAIT.
 * - Without it the lock is granted on the primary alone; the primary goes down (tumbler:
 *   TUMBLER.NODE DOWN 0 and the clock past down-after-milliseconds; redis-server: SIGKILL), the
 *   sentinels promote a replica that never got the lock, and a second client takes the same lock
 *   while the first still believes it holds it. The lost lock.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SentinelWaitTest {
    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread th = new Thread(r, "wait-worker");
        th.setDaemon(true);
        return th;
    });

    @AfterAll
    void stop() { pool.shutdownNow(); }

    static ReplSet set(String side) {
        return set(side, 3);
    }

    static ReplSet set(String side, int sentinels) {
        String only = System.getProperty("compat.only", "");
        org.junit.jupiter.api.Assumptions.assumeTrue(only.isEmpty() || only.equals(side), "-Dcompat.only=" + only);
        return side.equals("tumbler") ? ReplSet.tumbler(2, sentinels) : ReplSet.redis(2, sentinels);
    }

    static Config config(ReplSet set, boolean checkSynced) {
        return Topo.sentinelConfig(set, ReadMode.MASTER, c -> c.setCheckLockSyncedSlaves(checkSynced).setSlavesSyncTimeout(300)).get();
    }

    private boolean tryLockElsewhere(RLock lock, long waitMs) throws Exception {
        return pool.submit(() -> lock.tryLock(waitMs, 60_000, TimeUnit.MILLISECONDS)).get(20, TimeUnit.SECONDS);
    }

    @ParameterizedTest(name = "on {0}") @ValueSource(strings = {"tumbler", "redis-server"})
    void protectedByWait(String side) throws Exception {
        ReplSet set = set(side);
        refusedWithoutSyncedReplicas(set, config(set, true));
    }

    /** The same in master-slave mode (no sentinels): Redisson's WAIT check is the same code. */
    @ParameterizedTest(name = "on {0}") @ValueSource(strings = {"tumbler", "redis-server"})
    void protectedByWaitMasterSlave(String side) throws Exception {
        ReplSet set = set(side, 0);
        Config cfg = Topo.masterSlaveConfig(set, ReadMode.MASTER).get();
        cfg.setCheckLockSyncedSlaves(true).setSlavesSyncTimeout(300);
        refusedWithoutSyncedReplicas(set, cfg);
    }

    private void refusedWithoutSyncedReplicas(ReplSet set, Config cfg) throws Exception {
        RedissonClient c = null;
        try {
            c = Redisson.create(cfg);
            RLock ok = c.getLock("wait:" + run + ":synced");
            assertTrue(ok.tryLock(1, 30, TimeUnit.SECONDS), "both replicas acknowledge: granted");
            ok.unlock();

            set.pauseReplica(1);
            set.pauseReplica(2);
            try (Resp r = new Resp(set.primaryPort(), 5000)) {
                assertEquals("OK", r.call("SET", "wait:" + run + ":probe", "1"));
                assertEquals(0L, r.call("WAIT", 1, 200), "no replica acknowledges a write");
            }
            String name = "wait:" + run + ":unsynced";
            RLock lock = c.getLock(name);
            Exception e = assertThrows(Exception.class, () -> lock.tryLock(1, 30, TimeUnit.SECONDS));
            assertTrue(causedBy(e, NoSyncedSlavesException.class), "NoSyncedSlavesException, got " + e);
            assertEquals(0L, Resp.once(set.primaryPort(), "EXISTS", name), "Redisson released what WAIT did not cover");
            assertFalse(lock.isLocked());

            set.resumeReplica(1);
            set.resumeReplica(2);
            long deadline = System.currentTimeMillis() + 15_000;
            boolean granted = false;
            while (!granted && System.currentTimeMillis() < deadline) {
                try {
                    granted = lock.tryLock(1, 30, TimeUnit.SECONDS);
                } catch (RuntimeException again) {
                    Thread.sleep(200); // the replicas are still catching up
                }
            }
            assertTrue(granted, "granted again once the replicas acknowledge");
            lock.unlock();
        } finally {
            if (c != null) c.shutdown(0, 2, TimeUnit.SECONDS);
            set.close();
        }
    }

    @ParameterizedTest(name = "on {0}") @ValueSource(strings = {"tumbler", "redis-server"})
    void lockLostInLossyFailover(String side) throws Exception {
        ReplSet set = set(side);
        RedissonClient a = null, b = null;
        try {
            a = Redisson.create(config(set, false));
            String name = "wait:" + run + ":lost";
            RLock lockA = a.getLock(name);
            set.isolateReplicas();
            assertTrue(lockA.tryLock(1, 60, TimeUnit.SECONDS), "granted by the primary alone");
            assertEquals(1L, Resp.once(set.primaryPort(), "EXISTS", name));

            int old = set.primaryPort();
            set.killPrimary();
            set.resumeReplica(1);
            set.resumeReplica(2);
            for (int p : set.replicaPorts()) assertEquals(0L, Resp.once(p, "EXISTS", name), "replica " + p + " never got it");
            if (set.tumbler) set.advance(ReplSet.DOWN_AFTER_MS + 1);
            int now = set.awaitNewMaster(old, 30_000);
            assertTrue(set.replicaPorts().contains(now), "a replica was promoted: " + now);
            assertEquals(0L, Resp.once(now, "EXISTS", name), "the new primary does not have the lock");

            b = Redisson.create(config(set, false));
            RLock lockB = b.getLock(name);
            assertTrue(tryLockElsewhere(lockB, 10_000), "a second client takes the same lock");
            assertTrue(lockB.isLocked());
            // client A never unlocked; its lock is gone: unlocking now fails
            long deadline = System.currentTimeMillis() + 20_000;
            while (SentinelFailoverTest.redissonMasterPort(a) != now && System.currentTimeMillis() < deadline) Thread.sleep(100);
            assertEquals(now, SentinelFailoverTest.redissonMasterPort(a), "client A follows the new primary");
            RLock stale = lockA;
            try {
                stale.unlock();
                fail("client A's unlock of a lock it lost succeeded");
            } catch (IllegalMonitorStateException expected) {
                // "attempt to unlock lock, not locked by current thread"
            }
            assertTrue(lockB.isLocked(), "still client B's");
        } finally {
            if (a != null) a.shutdown(0, 2, TimeUnit.SECONDS);
            if (b != null) b.shutdown(0, 2, TimeUnit.SECONDS);
            set.close();
        }
    }

    static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable x = e; x != null; x = x.getCause()) {
            if (type.isInstance(x)) return true;
            for (Throwable s : x.getSuppressed()) if (causedBy(s, type)) return true;
        }
        return false;
    }
}
