package dev.tumbler.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a tumbler server for a JUnit 5 test class.
 *
 * <ul>
 *   <li>On the class: one server for the class ({@code lifecycle = PER_METHOD}: one per test).
 *       Test and lifecycle methods take it as a {@code TumblerServer} parameter, and a
 *       {@code RedissonClient} parameter connected to it when Redisson is on the classpath
 *       (shut down after the server's scope).</li>
 *   <li>On a {@code TumblerServer} field: a static field holds one server for the class, an
 *       instance field one per test.</li>
 * </ul>
 *
 * <pre>{@code
 * @Tumbler(timeControl = true)
 * class LeaseTest {
 *     @Test
 *     void leaseLapses(TumblerServer srv, RedissonClient redisson) { ... srv.advance(Duration.ofSeconds(31)); ... }
 * }
 * }</pre>
 */
@Target({ElementType.TYPE, ElementType.FIELD, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(TumblerExtension.class)
public @interface Tumbler {
    /** {@code --enable-time-control yes}: advance, freeze, resume. */
    boolean timeControl() default true;

    /** Independent nodes in one process (RedLock, MultiLock). Ignored when {@link #clusterPrimaries} > 0. */
    int nodes() default 1;

    /** Above 0: one Redis Cluster of that many primaries. */
    int clusterPrimaries() default 0;

    /** Replicas per primary in cluster mode. */
    int clusterReplicas() default 0;

    /**
     * Above 0: a primary (node 0) and that many replicas of it ({@code --replicas}); the injected
     * {@code RedissonClient} is in master-slave mode, or sentinel mode with {@link #sentinels}.
     */
    int replicas() default 0;

    /** Above 0: that many sentinels watching the primary ({@code --sentinels}), master {@link #masterName}. */
    int sentinels() default 0;

    /** {@code --sentinel-master-name}. */
    String masterName() default "mymaster";

    /** {@code --sentinel-down-after-milliseconds} (of tumbler's time); 0 is the server's default, 30000. */
    long sentinelDownAfterMillis() default 0;

    /** {@code --personality}: the server release tumbler imitates ("redis-8.0", "valkey-9.1"); "" is the default, redis-7.2. */
    String personality() default "";

    /** {@code --lockdep}: "" (off, unless {@link #failOnLockInversions}), "yes" or "strict". */
    String lockdep() default "";

    /** After the server's scope (the class, or each test), fail if lockdep found inversions or deadlocks. */
    boolean failOnLockInversions() default false;

    /** TLS only ({@code rediss://}) with generated certificates; client certificates required. */
    boolean tls() default false;

    /** ACL users, {@code "name:password"} or {@code "name:password RULES"} (rules default {@code ~* &* +@all}). */
    String[] users() default {};

    /** {@code requirepass}. */
    String password() default "";

    /** Extra server arguments. */
    String[] args() default {};

    /**
     * Each test starts from the data the class's {@code @BeforeAll} methods left: the extension
     * saves every database ({@code TumblerServer.snapshot}) before the class's first test, after
     * {@code @BeforeAll}, and restores it after each test, after {@code @AfterEach}. For a
     * server shared by the class (the class annotation, or a static field); a per-test server
     * starts empty anyway.
     */
    boolean restoreAfterEach() default false;

    /**
     * When a test fails, write the server's state to {@link #artifactsDir}:
     * {@code <class>.<method>.rdb} ({@code TUMBLER.RDB SAVE}) and {@code <class>.<method>.txt}
     * ({@code TUMBLER.STATE}), taken as the test method ends (before {@code @AfterEach} and the
     * restore of {@link #restoreAfterEach}). Also turned on for every server by the system
     * property {@code tumbler.artifacts} or the environment variable {@code TUMBLER_ARTIFACTS}
     * (a directory).
     */
    boolean failureArtifacts() default false;

    /**
     * The directory of {@link #failureArtifacts}, relative to the working directory; setting it
     * turns them on. Default: {@code tumbler.artifacts}, else {@code TUMBLER_ARTIFACTS}, else
     * {@code target/tumbler-artifacts}.
     */
    String artifactsDir() default "";

    /** One server per class (default) or per test method. Fields decide by being static or not. */
    Lifecycle lifecycle() default Lifecycle.PER_CLASS;

    enum Lifecycle {
        PER_CLASS,
        PER_METHOD
    }
}
