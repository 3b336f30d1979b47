package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.TumblerServer;
import dev.tumbler.junit.Tumbler;
import dev.tumbler.spring.TumblerServiceConnection;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;

/**
 * The application (redisson-spring-boot-starter) against a 3-primary tumbler cluster: the
 * server comes from {@code @Tumbler} on the field, the starter's configuration
 * ({@code spring.redis.redisson.config}) from {@code @TumblerServiceConnection}.
 */
@SpringBootTest(classes = App.class)
class RedissonStarterTest {

    @Tumbler(clusterPrimaries = 3, timeControl = true)
    @TumblerServiceConnection
    static TumblerServer tumbler;

    @Autowired
    Inventory inventory;

    @Autowired
    RedissonClient redisson;

    @Autowired
    Environment env;

    @Test
    void reservationLeaseLapsesInTheCluster() throws Exception {
        assertTrue(redisson.getConfig().isClusterConfig(), "the starter built a cluster client");
        assertTrue(env.getProperty("spring.redis.redisson.config", "").contains("clusterServersConfig"));

        assertTrue(inventory.reserve("sku-1", 15));
        assertTrue(inventory.lockFor("sku-1").isLocked());
        assertEquals(-1, inventory.decrement("sku-1"));

        tumbler.advance(Duration.ofSeconds(16));
        assertFalse(inventory.lockFor("sku-1").isLocked(), "the reservation's lease lapsed");
        assertTrue(inventory.reserve("sku-1", 15));
        inventory.lockFor("sku-1").unlock();
    }
}
