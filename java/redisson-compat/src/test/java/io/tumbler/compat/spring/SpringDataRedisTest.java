package io.tumbler.compat.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.tumbler.compat.Side;
import io.tumbler.compat.SidesBase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.DefaultRedisScript;

/** spring-boot-starter-data-redis (auto-configured Lettuce) with a StringRedisTemplate, on tumbler and on redis-server. */
class SpringDataRedisTest extends SidesBase {
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {}

    @ParameterizedTest(name = ON) @MethodSource("sides")
    void stringRedisTemplateRoundTrip(Side s) {
        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.NONE)
                .properties(Map.of("spring.data.redis.host", "127.0.0.1", "spring.data.redis.port", String.valueOf(s.port()),
                        "spring.main.banner-mode", "off", "logging.level.root", "warn"))
                .run()) {
            StringRedisTemplate t = ctx.getBean(StringRedisTemplate.class);
            String k = "spring:" + run + ":k";
            t.opsForValue().set(k, "v");
            assertEquals("v", t.opsForValue().get(k));
            assertEquals(3L, t.opsForValue().increment(k + ":n", 3));
            t.opsForHash().putAll(k + ":h", Map.of("a", "1"));
            assertEquals(Map.of("a", "1"), t.opsForHash().entries(k + ":h"));
            t.opsForList().rightPushAll(k + ":l", "x", "y");
            assertEquals(List.of("x", "y"), t.opsForList().range(k + ":l", 0, -1));
            long lease = s.tumbler ? 30_000 : 500;
            assertTrue(t.opsForValue().setIfAbsent(k + ":lock", "me", Duration.ofMillis(lease)));
            assertFalse(t.opsForValue().setIfAbsent(k + ":lock", "you", Duration.ofMillis(lease)));
            DefaultRedisScript<Long> unlock = new DefaultRedisScript<>(
                    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", Long.class);
            assertEquals(0L, t.execute(unlock, List.of(k + ":lock"), "you"));
            assertEquals(1L, t.execute(unlock, List.of(k + ":lock"), "me"));
            assertTrue(t.opsForValue().setIfAbsent(k + ":lock", "me", Duration.ofMillis(lease)));
            s.lapse(lease);
            assertNull(t.opsForValue().get(k + ":lock"));
            assertTrue(t.delete(k));
        }
    }
}
