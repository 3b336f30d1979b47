package dev.tumbler.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Connects a Spring Boot test's application context to a tumbler server, as Boot's
 * {@code @ServiceConnection} does for a container: put it on a static {@code TumblerServer}
 * field of the test class (started in its initializer, or by {@code @Tumbler} on the same field).
 *
 * <p>The context gets the server as a bean, a {@code RedisConnectionDetails} bean (used by
 * spring-boot-starter-data-redis and by redisson-spring-boot-starter), and, when Redisson is on
 * the classpath, the property {@code spring.redis.redisson.config}: the full Redisson
 * configuration of the topology (cluster, TLS stores, user) for redisson-spring-boot-starter.
 *
 * <pre>{@code
 * @SpringBootTest
 * class CartTest {
 *     @TumblerServiceConnection
 *     static TumblerServer tumbler = TumblerServer.builder().timeControl(true).start();
 *
 *     @Autowired StringRedisTemplate redis;
 * }
 * }</pre>
 */
@Target(ElementType.FIELD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface TumblerServiceConnection {
    /** Add {@code spring.redis.redisson.config} when Redisson is present (default true). */
    boolean redissonConfig() default true;
}
