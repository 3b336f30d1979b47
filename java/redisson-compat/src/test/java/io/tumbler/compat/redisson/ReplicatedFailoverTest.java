package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tumbler.compat.ReplSet;
import io.tumbler.compat.Resp;
import io.tumbler.compat.Servers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.ReadMode;

/**
 * Replicated mode across a manual promotion (no sentinels): REPLICAOF NO ONE on replica 1, then
 * REPLICAOF it on the old primary and on replica 2. Redisson finds the new primary by polling
 * every node's role; the lock taken before is still held, and unlock works.
 */
class ReplicatedFailoverTest extends TargetsBase {
    @Override protected List<Target> createTargets() {
        return Topo.replSets(0, set -> Topo.replicatedConfig(set, ReadMode.SLAVE));
    }

    static int masterPort(RedissonClient c) {
        return c.getRedisNodes(RedisNodes.MASTER_SLAVE).getMaster().getAddr().getPort();
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void lockHeldAcrossManualPromotion(Target t) throws Exception {
        ReplSet set = t.repl;
        RedissonClient c = t.client();
        String name = key("promote");
        RLock lock = c.getLock(name);
        assertTrue(lock.tryLock(1, 60, TimeUnit.SECONDS));
        int old = set.primaryPort(), next = set.replicaPorts().get(0), other = set.replicaPorts().get(1);
        assertEquals(old, masterPort(c));
        assertEquals(1L, Resp.once(next, "EXISTS", name), "the replica has the lock");

        assertEquals("OK", Resp.once(next, "REPLICAOF", "NO", "ONE"));
        assertEquals("OK", Resp.once(old, "REPLICAOF", "127.0.0.1", next));
        assertEquals("OK", Resp.once(other, "REPLICAOF", "127.0.0.1", next));
        assertEquals("master", ((List<?>) Resp.once(next, "ROLE")).get(0));
        long deadline = System.currentTimeMillis() + 20_000;
        while (System.currentTimeMillis() < deadline) {
            String a = String.valueOf(Resp.once(old, "INFO", "replication"));
            String b = String.valueOf(Resp.once(other, "INFO", "replication"));
            if (a.contains("master_link_status:up") && b.contains("master_link_status:up")) break;
            Servers.sleep(50);
        }
        assertTrue(String.valueOf(Resp.once(old, "INFO", "replication")).contains("master_port:" + next));

        String probe = key("probe");
        deadline = System.currentTimeMillis() + 20_000;
        while (masterPort(c) != next && System.currentTimeMillis() < deadline) Servers.sleep(100);
        assertEquals(next, masterPort(c), "Redisson found the new primary");
        int n = 0;
        while (System.currentTimeMillis() < deadline) {
            try {
                c.getBucket(probe, StringCodec.INSTANCE).set("v" + (++n));
                if (("v" + n).equals(Resp.once(next, "GET", probe))) break;
            } catch (RuntimeException e) {
                // READONLY from the old primary until Redisson switches
            }
            Servers.sleep(100);
        }
        assertEquals("v" + n, Resp.once(next, "GET", probe), "writes go to the new primary");

        assertTrue(lock.isLocked());
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(inThread(() -> lock.tryLock()), "another thread cannot take it");
        lock.unlock();
        assertFalse(lock.isLocked());
        assertEquals(0L, Resp.once(next, "EXISTS", name));
    }
}
