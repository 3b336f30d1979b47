package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.tumbler.junit.Tumbler;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.redisson.api.RedissonClient;

/** The extension's scopes, run through the JUnit engine: which server each test sees, and that all stop. */
class ExtensionLifecycleTest {
    static final List<TumblerServer> SEEN = new ArrayList<>();
    static final List<RedissonClient> CLIENTS = new ArrayList<>();

    private static EngineExecutionResults run(Class<?> c) {
        SEEN.clear();
        CLIENTS.clear();
        EngineExecutionResults r = EngineTestKit.engine("junit-jupiter").selectors(selectClass(c)).execute();
        r.allEvents().assertStatistics(s -> s.failed(0));
        return r;
    }

    @Tumbler
    static class PerClass {
        static TumblerServer fromBeforeAll;

        @BeforeAll
        static void setUp(TumblerServer srv) {
            fromBeforeAll = srv;
        }

        @Test
        void a(TumblerServer srv, RedissonClient redisson) {
            SEEN.add(srv);
            CLIENTS.add(redisson);
            assertSame(fromBeforeAll, srv);
            redisson.getBucket("k").set("v");
        }

        @Test
        void b(TumblerServer srv, RedissonClient redisson) {
            SEEN.add(srv);
            CLIENTS.add(redisson);
        }
    }

    @Tumbler(lifecycle = Tumbler.Lifecycle.PER_METHOD, timeControl = false)
    static class PerMethod {
        @Test
        void a(TumblerServer srv) {
            SEEN.add(srv);
            assertFalse(srv.hasTimeControl());
        }

        @Test
        void b(TumblerServer srv) {
            SEEN.add(srv);
        }
    }

    static class Fields {
        @Tumbler(nodes = 2)
        static TumblerServer shared;

        @Tumbler
        TumblerServer own;

        @Test
        void a() {
            SEEN.add(shared);
            SEEN.add(own);
            assertEquals(2, shared.nodeCount());
        }

        @Test
        void b() {
            SEEN.add(shared);
            SEEN.add(own);
        }
    }

    @Test
    void perClassSharesOneServerAndClientThenStopsThem() {
        run(PerClass.class).testEvents().assertStatistics(s -> s.succeeded(2));
        assertEquals(2, SEEN.size());
        assertSame(SEEN.get(0), SEEN.get(1));
        assertSame(CLIENTS.get(0), CLIENTS.get(1));
        assertTrue(CLIENTS.get(0).isShutdown(), "the injected RedissonClient was shut down");
        assertFalse(SEEN.get(0).isAlive(), "the server stopped after the class");
    }

    @Test
    void perMethodStartsOneServerPerTest() {
        run(PerMethod.class).testEvents().assertStatistics(s -> s.succeeded(2));
        assertEquals(2, SEEN.size());
        assertTrue(SEEN.get(0) != SEEN.get(1));
        SEEN.forEach(s -> assertFalse(s.isAlive()));
    }

    @Test
    void staticFieldPerClassInstanceFieldPerTest() {
        run(Fields.class).testEvents().assertStatistics(s -> s.succeeded(2));
        assertEquals(4, SEEN.size());
        SEEN.forEach(s -> assertNotNull(s));
        assertSame(SEEN.get(0), SEEN.get(2), "the static field's server is shared");
        assertTrue(SEEN.get(1) != SEEN.get(3), "each test has its own instance-field server");
        SEEN.forEach(s -> assertFalse(s.isAlive()));
    }
}
