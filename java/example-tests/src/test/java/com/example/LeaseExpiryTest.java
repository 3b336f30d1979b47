package com.example;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.TumblerServer;
import dev.tumbler.junit.Tumbler;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** An RLock's lease runs out when the server's clock is advanced: no sleeping in tests. */
@Tumbler(timeControl = true)
class LeaseExpiryTest {
    private static final long OTHER_THREAD = 424242L;

    @Test
    void leaseLapsesAfterAdvance(TumblerServer srv, RedissonClient redisson) throws Exception {
        RLock lock = redisson.getLock("report:{daily}:lock");
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS), "first holder takes the lock");
        assertFalse(lock.tryLockAsync(0, 30_000, TimeUnit.MILLISECONDS, OTHER_THREAD).get(),
                "another holder is refused while the lease runs");

        srv.advance(Duration.ofSeconds(29));
        assertTrue(lock.isLocked(), "29 s in, the lease still holds");
        assertTrue(lock.remainTimeToLive() > 0 && lock.remainTimeToLive() <= 1_000, "about 1 s left");

        srv.advance(Duration.ofMillis(1_001));
        assertFalse(lock.isLocked(), "30 s in, the lease has lapsed");
        assertTrue(lock.tryLockAsync(0, 30_000, TimeUnit.MILLISECONDS, OTHER_THREAD).get(),
                "the other holder gets it now");
        lock.forceUnlock();
    }

    @Test
    void frozenClockKeepsTheLease(TumblerServer srv, RedissonClient redisson) throws Exception {
        RLock lock = redisson.getLock("report:{weekly}:lock");
        srv.freeze();
        try {
            assertTrue(lock.tryLock(0, 1, TimeUnit.SECONDS));
            Thread.sleep(1_200); // real time passes, server time does not
            assertTrue(lock.isLocked(), "a frozen clock does not expire the lease");
        } finally {
            srv.resume();
        }
        srv.advance(Duration.ofSeconds(2));
        assertFalse(lock.isLocked());
    }
}
