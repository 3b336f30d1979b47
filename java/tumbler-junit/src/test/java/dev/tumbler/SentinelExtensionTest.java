package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.junit.Tumbler;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/** @Tumbler(replicas = 2, sentinels = 3): the injected RedissonClient is in sentinel mode. */
@Tumbler(replicas = 2, sentinels = 3)
class SentinelExtensionTest {

    @Test
    void injectedClientUsesTheSentinels(TumblerServer srv, RedissonClient redisson) throws Exception {
        assertEquals(3, srv.sentinelCount());
        assertEquals(2, srv.replicaCount());
        assertTrue(redisson.getConfig().isSentinelConfig());
        redisson.getBucket("ext:k", StringCodec.INSTANCE).set("v");
        assertEquals("v", srv.commandOn(srv.primary(), "GET", "ext:k"));
        for (int r : srv.replicas()) {
            assertEquals("v", srv.commandOn(r, "GET", "ext:k"), "replica " + r);
        }
        RLock lock = redisson.getLock("ext:lock");
        assertTrue(lock.tryLock(1, 30, TimeUnit.SECONDS));
        assertTrue(lock.isLocked());
        lock.unlock();
    }
}
