package com.example;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.TumblerServer;
import dev.tumbler.junit.Tumbler;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** RedLock over three independent nodes in one process, with nodes going down. */
class RedLockTest {

    @Tumbler(nodes = 3)
    TumblerServer nodes;

    @Test
    void redLockNeedsAMajorityOfNodes() throws Exception {
        RedissonClient[] clients = new RedissonClient[3];
        for (int i = 0; i < 3; i++) {
            clients[i] = Redisson.create(fastFailing(nodes.redissonConfig(i)));
        }
        try {
            nodes.nodeDown(2);
            RedissonRedLock two = redLock(clients, "payout:{7}");
            assertTrue(two.tryLock(2, 30, TimeUnit.SECONDS), "2 of 3 nodes are a majority");
            two.unlock();

            nodes.nodeDown(1);
            RedissonRedLock one = redLock(clients, "payout:{8}");
            assertFalse(one.tryLock(2, 30, TimeUnit.SECONDS), "1 of 3 nodes is not");

            nodes.nodeUp(1);
            nodes.nodeUp(2);
            // Existing clients reconnect on Redisson's own back-off (up to seconds); new ones at once.
            RedissonClient[] fresh = new RedissonClient[3];
            for (int i = 0; i < 3; i++) {
                fresh[i] = Redisson.create(fastFailing(nodes.redissonConfig(i)));
            }
            try {
                RedissonRedLock all = redLock(fresh, "payout:{9}");
                assertTrue(all.tryLock(5, 30, TimeUnit.SECONDS), "back to 3 of 3");
                all.unlock();
            } finally {
                for (RedissonClient c : fresh) {
                    c.shutdown();
                }
            }
        } finally {
            for (RedissonClient c : clients) {
                c.shutdown();
            }
        }
    }

    /** A node that is down should cost the lock attempt little time. */
    private static Config fastFailing(Config c) {
        c.useSingleServer().setConnectTimeout(500).setTimeout(500).setRetryAttempts(1).setRetryInterval(100);
        return c;
    }

    @SuppressWarnings("deprecation")
    private static RedissonRedLock redLock(RedissonClient[] clients, String name) {
        return new RedissonRedLock(clients[0].getLock(name), clients[1].getLock(name), clients[2].getLock(name));
    }
}
