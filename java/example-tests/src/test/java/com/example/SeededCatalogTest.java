package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.junit.Tumbler;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.redisson.api.RMap;
import org.redisson.api.RedissonClient;

/**
 * A catalogue seeded once in {@code @BeforeAll}; {@code restoreAfterEach} gives every test that
 * seed back, whatever the test before it bought or deleted. The order is fixed so that the
 * later tests would see the earlier ones' changes if the restore did not happen.
 */
@Tumbler(restoreAfterEach = true, failureArtifacts = true)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SeededCatalogTest {

    @BeforeAll
    static void seed(RedissonClient redisson) {
        RMap<String, Integer> stock = redisson.getMap("stock");
        stock.put("apple", 10);
        stock.put("pear", 4);
        redisson.getBucket("banner").set("autumn sale");
    }

    @Test
    @Order(1)
    void buyingApplesLowersTheStock(RedissonClient redisson) {
        RMap<String, Integer> stock = redisson.getMap("stock");
        assertEquals(10, stock.get("apple"));
        stock.put("apple", stock.get("apple") - 3);
        assertEquals(7, stock.get("apple"));
        redisson.getBucket("order:1").set("3 apples");
    }

    @Test
    @Order(2)
    void aNewTestSeesTheSeedAgain(RedissonClient redisson) {
        assertEquals(10, redisson.<String, Integer>getMap("stock").get("apple"), "restored after the purchase");
        assertFalse(redisson.getBucket("order:1").isExists(), "the first test's order is gone");
        redisson.getKeys().flushall();
        assertNull(redisson.getBucket("banner").get());
    }

    @Test
    @Order(3)
    void evenAfterAFlush(RedissonClient redisson) {
        assertEquals("autumn sale", redisson.getBucket("banner").get());
        assertTrue(redisson.getMap("stock").containsKey("pear"));
    }
}
