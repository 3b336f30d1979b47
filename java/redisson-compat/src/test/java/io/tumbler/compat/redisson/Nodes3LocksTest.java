package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.Servers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;

/** Three independent servers (tumbler --nodes 3 / three redis-servers), one Redisson client each. */
class Nodes3LocksTest extends TargetsBase {
    @Override protected List<Target> createTargets() { return Topo.nodes3(); }

    private RLock[] parts(Target t, String name) {
        assertEquals(3, t.clients().size());
        return t.clients().stream().map(c -> c.getLock(name)).toArray(RLock[]::new);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    @SuppressWarnings("deprecation")
    void redLockOnAllNodes(Target t) throws Exception {
        RLock[] p = parts(t, key("redlock"));
        RLock red = new RedissonRedLock(p);
        assertTrue(red.tryLock(2, 10, TimeUnit.SECONDS));
        for (RLock l : p) assertTrue(l.isLocked(), "locked on every node");
        red.unlock();
        for (RLock l : p) assertFalse(l.isLocked());
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    @SuppressWarnings("deprecation")
    void redLockNeedsAMajority(Target t) throws Exception {
        RLock[] p = parts(t, key("redlock-majority"));
        RLock red = new RedissonRedLock(p);
        assertTrue(inThread(() -> p[2].tryLock(1, 30, TimeUnit.SECONDS)), "another owner on node 2");
        assertTrue(red.tryLock(2, 10, TimeUnit.SECONDS), "2 of 3 is a majority");
        red.unlock();
        assertTrue(inThread(() -> p[1].tryLock(1, 30, TimeUnit.SECONDS)), "another owner on node 1 too");
        assertFalse(red.tryLock(500, 10_000, TimeUnit.MILLISECONDS), "1 of 3 is not");
        assertFalse(p[0].isLocked(), "a failed RedLock releases what it took");
        p[1].forceUnlock();
        p[2].forceUnlock();
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void multiLockAcrossNodes(Target t) throws Exception {
        RLock[] p = parts(t, key("multi"));
        RLock multi = new RedissonMultiLock(p);
        multi.lock();
        for (RLock l : p) assertTrue(l.isLocked());
        assertFalse(inThread(() -> p[1].tryLock()));
        multi.unlock();
        for (RLock l : p) assertFalse(l.isLocked());
        assertTrue(inThread(() -> p[1].tryLock(1, 30, TimeUnit.SECONDS)));
        assertFalse(multi.tryLock(300, 10_000, TimeUnit.MILLISECONDS), "MultiLock needs every node");
        assertFalse(p[0].isLocked() || p[2].isLocked());
        p[1].forceUnlock();
    }

    /** Node 1's lease lapses alone: tumbler advances node 1's clock only; redis-server waits a short real lease. */
    @ParameterizedTest(name = ON) @MethodSource("targets")
    void leaseLapsesOnOneNode(Target t) throws Exception {
        String name = key("lapse");
        RLock[] p = parts(t, name);
        long lease = t.tumbler ? 30_000 : 700;
        assertTrue(inThread(() -> p[1].tryLock(1000, lease, TimeUnit.MILLISECONDS)));
        RLock multi = new RedissonMultiLock(p);
        assertFalse(multi.tryLock(100, 10_000, TimeUnit.MILLISECONDS));
        if (t.tumbler) {
            io.tumbler.compat.Resp.once(t.ports.get(1), "TUMBLER.TIME", "ADVANCE", lease + 1);
        } else {
            Servers.sleep(lease + 200);
        }
        assertFalse(p[1].isLocked(), "node 1's lease lapsed");
        assertTrue(multi.tryLock(1000, 10_000, TimeUnit.MILLISECONDS));
        multi.unlock();
    }
}
