package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.Servers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.RedissonMultiLock;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RList;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/** Redisson's lock family, 14 scenarios; each runs on tumbler and on redis-server. */
public abstract class LockScenarios extends TargetsBase {

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void lockUnlock(Target t) throws Exception {
        RLock lock = t.client().getLock(key("lock"));
        lock.lock();
        assertTrue(lock.isLocked());
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(inThread(() -> lock.tryLock()), "another thread must not get a held lock");
        lock.unlock();
        assertFalse(lock.isLocked());
        assertTrue(inThread(() -> {
            boolean ok = lock.tryLock();
            if (ok) lock.unlock();
            return ok;
        }));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void reentry(Target t) throws Exception {
        RLock lock = t.client().getLock(key("reentry"));
        lock.lock();
        lock.lock();
        assertEquals(2, lock.getHoldCount());
        lock.unlock();
        assertTrue(lock.isLocked());
        assertEquals(1, lock.getHoldCount());
        assertFalse(inThread(() -> lock.tryLock()));
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void tryLockWithWaitAndLease(Target t) throws Exception {
        RLock lock = t.client().getLock(key("trylock"));
        assertTrue(lock.tryLock(1, 10, TimeUnit.SECONDS));
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 8000 && ttl <= 10000, "lease ttl " + ttl);
        assertFalse(inThread(() -> lock.tryLock(200, 5000, TimeUnit.MILLISECONDS)), "waited 200 ms for a held lock");
        CountDownLatch waiting = new CountDownLatch(1);
        Future<Boolean> waiter = async(() -> {
            waiting.countDown();
            boolean ok = lock.tryLock(8, 5, TimeUnit.SECONDS);
            if (ok) {
                long l = lock.remainTimeToLive();
                lock.unlock();
                return l > 0 && l <= 5000;
            }
            return false;
        });
        waiting.await(5, TimeUnit.SECONDS);
        Thread.sleep(200);
        lock.unlock(); // the waiter is woken by the unlock message
        assertTrue(waiter.get(10, TimeUnit.SECONDS), "waiter got the lock with its lease");
        assertFalse(lock.isLocked());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void watchdogRenewal(Target t) throws Exception {
        RLock lock = t.client().getLock(key("watchdog"));
        lock.lock(); // no lease: the watchdog (timeout WATCHDOG_MS) keeps renewing it
        long first = lock.remainTimeToLive();
        assertTrue(first > 0 && first <= Topo.WATCHDOG_MS, "ttl " + first);
        Thread.sleep(Topo.WATCHDOG_MS + 800);
        assertTrue(lock.isLocked(), "held past the watchdog timeout");
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0, "renewed, ttl " + ttl);
        assertFalse(inThread(() -> lock.tryLock()));
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void fairLock(Target t) throws Exception {
        String name = key("fair");
        RLock lock = t.client().getFairLock(name);
        // Redisson queues fair-lock waiters in this list; each must be in it before the next starts
        RList<String> queue = t.client().getList("redisson_lock_queue:{" + name + "}", StringCodec.INSTANCE);
        lock.lock();
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int n = i;
            waiters.add(async(() -> {
                if (!lock.tryLock(10, 10, TimeUnit.SECONDS)) return null;
                order.add(n);
                lock.unlock();
                return null;
            }));
            long queued = System.currentTimeMillis() + 10_000;
            while (queue.size() < n + 1 && System.currentTimeMillis() < queued) Thread.sleep(10);
            assertEquals(n + 1, queue.size(), "waiter " + n + " queued");
        }
        lock.unlock();
        for (Future<?> w : waiters) w.get(15, TimeUnit.SECONDS);
        assertEquals(List.of(0, 1, 2), order, "FIFO order");
        assertFalse(lock.isLocked());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void readWriteLock(Target t) throws Exception {
        RReadWriteLock rw = t.client().getReadWriteLock(key("rw"));
        rw.readLock().lock();
        assertTrue(inThread(() -> {
            boolean ok = rw.readLock().tryLock();
            if (ok) rw.readLock().unlock();
            return ok;
        }), "readers share");
        assertFalse(inThread(() -> rw.writeLock().tryLock()), "writer waits for readers");
        rw.readLock().unlock();
        rw.writeLock().lock();
        assertFalse(inThread(() -> rw.readLock().tryLock()), "readers wait for the writer");
        rw.readLock().lock(); // the writer may also read
        rw.readLock().unlock();
        rw.writeLock().unlock();
        assertFalse(rw.writeLock().isLocked());
        assertTrue(inThread(() -> {
            boolean ok = rw.writeLock().tryLock();
            if (ok) rw.writeLock().unlock();
            return ok;
        }));
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void semaphore(Target t) throws Exception {
        RSemaphore s = t.client().getSemaphore(key("sem"));
        assertTrue(s.trySetPermits(2));
        assertFalse(s.trySetPermits(5));
        s.acquire(2);
        assertEquals(0, s.availablePermits());
        assertFalse(s.tryAcquire());
        Future<Boolean> waiter = async(() -> s.tryAcquire(5, TimeUnit.SECONDS));
        Thread.sleep(200);
        s.release();
        assertTrue(waiter.get(10, TimeUnit.SECONDS));
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void permitExpirableSemaphore(Target t) throws Exception {
        RPermitExpirableSemaphore s = t.client().getPermitExpirableSemaphore(key("pes"));
        assertTrue(s.trySetPermits(1));
        String id = s.acquire();
        assertNotNull(id);
        assertNull(s.tryAcquire(), "no permit left");
        assertEquals(0, s.availablePermits());
        s.release(id);
        assertEquals(1, s.availablePermits());
        String leased = s.tryAcquire(1, 400, TimeUnit.MILLISECONDS);
        assertNotNull(leased);
        String next = s.tryAcquire(5000, 1000, TimeUnit.MILLISECONDS);
        assertNotNull(next, "the leased permit expired and came back");
        assertFalse(s.tryRelease(leased), "an expired permit cannot be released");
        s.release(next);
        assertEquals(1, s.availablePermits());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void countDownLatch(Target t) throws Exception {
        RCountDownLatch latch = t.client().getCountDownLatch(key("latch"));
        assertTrue(latch.trySetCount(2));
        Future<Boolean> waiter = async(() -> latch.await(10, TimeUnit.SECONDS));
        Thread.sleep(200);
        latch.countDown();
        assertEquals(1, latch.getCount());
        assertFalse(waiter.isDone());
        latch.countDown();
        assertTrue(waiter.get(10, TimeUnit.SECONDS));
        assertEquals(0, latch.getCount());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void fencedLock(Target t) throws Exception {
        RFencedLock lock = t.client().getFencedLock(key("fenced"));
        Long t1 = lock.lockAndGetToken();
        assertNotNull(t1);
        assertEquals(t1, lock.getToken());
        assertNull(inThread(() -> lock.tryLockAndGetToken(100, TimeUnit.MILLISECONDS)), "held by another thread");
        lock.unlock();
        Long t2 = inThread(() -> {
            Long tok = lock.tryLockAndGetToken(1, 5, TimeUnit.SECONDS);
            lock.unlock();
            return tok;
        });
        assertNotNull(t2);
        assertTrue(t2 > t1, "tokens grow: " + t1 + " then " + t2);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void spinLock(Target t) throws Exception {
        RLock lock = t.client().getSpinLock(key("spin"));
        lock.lock();
        assertTrue(lock.isLocked());
        assertFalse(inThread(() -> lock.tryLock(100, TimeUnit.MILLISECONDS)));
        Future<Boolean> waiter = async(() -> {
            boolean ok = lock.tryLock(5, TimeUnit.SECONDS);
            if (ok) lock.unlock();
            return ok;
        });
        Thread.sleep(150);
        lock.unlock();
        assertTrue(waiter.get(10, TimeUnit.SECONDS), "spinning waiter got it");
        assertFalse(lock.isLocked());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void multiLock(Target t) throws Exception {
        RedissonClient c = t.client();
        RLock a = c.getLock(key("multi-a")), b = c.getLock(key("multi-b")), d = c.getLock(key("multi-c"));
        RLock multi = new RedissonMultiLock(a, b, d);
        multi.lock();
        assertTrue(a.isLocked() && b.isLocked() && d.isLocked());
        multi.unlock();
        assertFalse(a.isLocked() || b.isLocked() || d.isLocked());
        assertTrue(inThread(() -> b.tryLock()));
        assertFalse(multi.tryLock(300, 5000, TimeUnit.MILLISECONDS), "one part is held elsewhere");
        assertFalse(a.isLocked() || d.isLocked(), "a failed multi-lock leaves nothing behind");
        b.forceUnlock();
        assertTrue(multi.tryLock(1000, 5000, TimeUnit.MILLISECONDS));
        multi.unlock();
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void forceUnlock(Target t) throws Exception {
        RLock lock = t.client().getLock(key("force"));
        assertTrue(inThread(() -> lock.tryLock(1, 60, TimeUnit.SECONDS)));
        assertTrue(lock.isLocked());
        assertFalse(lock.isHeldByCurrentThread());
        assertTrue(lock.forceUnlock());
        assertFalse(lock.isLocked());
        assertFalse(lock.forceUnlock());
        assertTrue(lock.tryLock());
        lock.unlock();
    }

    /** Lease expiry: tumbler's clock is advanced past a 30 s lease; redis-server's lease is 600 ms of real time. */
    @ParameterizedTest(name = ON) @MethodSource("targets")
    void leaseExpiry(Target t) throws Exception {
        RLock lock = t.client().getLock(key("lease"));
        long lease = t.tumbler ? 30_000 : 600;
        assertTrue(inThread(() -> lock.tryLock(1000, lease, TimeUnit.MILLISECONDS)));
        assertTrue(lock.isLocked());
        assertFalse(lock.tryLock());
        if (t.tumbler) t.advance(lease + 1);
        else Servers.sleep(lease + 200);
        assertFalse(lock.isLocked(), "the lease lapsed");
        assertTrue(lock.tryLock(1, 5, TimeUnit.SECONDS), "free after the lease");
        lock.unlock();
    }
}
