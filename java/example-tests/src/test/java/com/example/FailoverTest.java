package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.TumblerServer;
import dev.tumbler.junit.Tumbler;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** A lock under a fault: the primary of its slot dies and the replica takes over. */
class FailoverTest {

    /** 3 primaries with one replica each; a new server for each test. */
    @Tumbler(clusterPrimaries = 3, clusterReplicas = 1)
    TumblerServer cluster;

    @Test
    void lockSurvivesFailoverOfItsPrimary() throws Exception {
        RedissonClient redisson = Redisson.create(cluster.redissonConfig());
        try {
            String name = "order:{42}:lock";
            RLock lock = redisson.getLock(name);
            assertTrue(lock.tryLock(0, 60, TimeUnit.SECONDS));

            int primary = cluster.primaryFor(name);
            int replica = primary + cluster.primaries(); // replica i replicates primary i mod primaries
            cluster.nodeDown(primary);                    // the primary dies ...
            cluster.failover(replica);                    // ... and its replica takes over
            assertEquals(replica, cluster.primaryFor(name));
            assertNotEquals(primary, cluster.primaryFor(name));

            assertTrue(lock.isLocked(), "the lock was replicated before the failover");
            assertTrue(lock.isHeldByCurrentThread());
            lock.unlock();
            assertFalse(lock.isLocked());
            assertTrue(lock.tryLock(0, 60, TimeUnit.SECONDS), "the new primary grants it again");
            lock.unlock();
        } finally {
            redisson.shutdown();
        }
    }
}
