package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.LockOrderError;
import dev.tumbler.TumblerServer;
import dev.tumbler.junit.Tumbler;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.Events;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/**
 * The lock-order checker: two code paths that nest the same two locks in opposite orders
 * are reported, although the run never deadlocked.
 */
@Tumbler(lockdep = "yes", lifecycle = Tumbler.Lifecycle.PER_METHOD)
class LockdepTest {

    /** Takes {@code first} then {@code second} in a thread of its own (a Redisson owner), then releases both. */
    static void nest(RedissonClient redisson, String first, String second) throws Exception {
        CompletableFuture.runAsync(() -> {
            RLock a = redisson.getLock(first);
            RLock b = redisson.getLock(second);
            a.lock(10, TimeUnit.SECONDS);
            try {
                b.lock(10, TimeUnit.SECONDS);
                b.unlock();
            } finally {
                a.unlock();
            }
        }).get(30, TimeUnit.SECONDS);
    }

    @Test
    void oneOrderEverywhereIsClean(TumblerServer srv, RedissonClient redisson) throws Exception {
        nest(redisson, "order:{1}", "stock:{7}");
        nest(redisson, "order:{2}", "stock:{8}");
        srv.assertNoLockInversions();
    }

    @Test
    void oppositeOrdersAreAnInversion(TumblerServer srv, RedissonClient redisson) throws Exception {
        nest(redisson, "order:{1}", "stock:{7}");   // checkout: order, then stock
        nest(redisson, "stock:{8}", "order:{2}");   // restock: stock, then order -- other keys, same classes
        LockOrderError e = assertThrows(LockOrderError.class, srv::assertNoLockInversions);
        assertTrue(e.getMessage().contains("order:{*}") && e.getMessage().contains("stock:{*}"), e.getMessage());
        assertFalse(((List<?>) e.report().get("inversions")).isEmpty());
    }

    /** A class as a user would write it, run below through the JUnit engine: it must fail. */
    @Tumbler(failOnLockInversions = true)
    static class CheckoutAndRestock {
        @Test
        void checkout(RedissonClient redisson) throws Exception {
            nest(redisson, "order:{1}", "stock:{7}");
        }

        @Test
        void restock(RedissonClient redisson) throws Exception {
            nest(redisson, "stock:{8}", "order:{2}");
        }
    }

    @Test
    void failOnLockInversionsFailsTheClass() {
        EngineExecutionResults run = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(CheckoutAndRestock.class))
                .execute();
        Events containers = run.containerEvents();
        Events tests = run.testEvents();
        assertEquals(2, tests.succeeded().count(), "each test passes on its own");
        List<Event> failed = containers.failed().list();
        assertEquals(1, failed.size(), "the class fails");
        Throwable cause = failed.get(0).getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .orElseThrow().getThrowable().orElseThrow();
        assertInstanceOf(LockOrderError.class, cause);
        assertTrue(cause.getMessage().contains("inversion: "), cause.getMessage());
    }
}
