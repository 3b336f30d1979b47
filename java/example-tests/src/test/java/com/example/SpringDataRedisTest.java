package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.tumbler.TumblerServer;
import dev.tumbler.spring.TumblerServiceConnection;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * spring-boot-starter-data-redis (Lettuce) connected to tumbler through
 * {@code @TumblerServiceConnection}: no spring.data.redis.* properties anywhere.
 */
@SpringBootTest(classes = SpringDataRedisTest.DataRedisOnly.class, properties = "spring.autoconfigure.exclude="
        + "org.redisson.spring.starter.RedissonAutoConfigurationV2,org.redisson.spring.starter.RedissonAutoConfigurationV4")
class SpringDataRedisTest {

    @TumblerServiceConnection
    static TumblerServer tumbler = TumblerServer.builder().timeControl(true).start();

    /** Spring Data Redis alone (the app's Redisson-based beans are not scanned here). */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class DataRedisOnly {}

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedisConnectionFactory connectionFactory;

    @Autowired
    RedisConnectionDetails details;

    @Autowired
    TumblerServer server;

    @Test
    void templateTalksToTumbler() {
        assertInstanceOf(LettuceConnectionFactory.class, connectionFactory);
        assertEquals(tumbler.port(), details.getStandalone().getPort());
        assertEquals(tumbler, server);

        redis.opsForValue().set("session:1", "alice", Duration.ofMinutes(30));
        assertEquals("alice", tumbler.command("GET", "session:1"), "the write reached the tumbler server");

        tumbler.advance(Duration.ofMinutes(30).plusMillis(1));
        assertNull(redis.opsForValue().get("session:1"), "the session expired on the server's clock");
    }
}
