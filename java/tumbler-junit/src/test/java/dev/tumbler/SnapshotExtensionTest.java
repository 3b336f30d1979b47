package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.tumbler.junit.Tumbler;
import dev.tumbler.junit.TumblerExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * {@code @Tumbler(restoreAfterEach = true)} and {@code failureArtifacts}, run through the JUnit
 * engine. The fixture classes only do something while {@link #RUNNING} is set, so that they
 * pass (skipped) if a build ever picks them up on their own.
 */
class SnapshotExtensionTest {
    static volatile boolean RUNNING;
    static final List<String> SEEN = new ArrayList<>();

    private static EngineExecutionResults run(Class<?> c) {
        SEEN.clear();
        RUNNING = true;
        try {
            return EngineTestKit.engine("junit-jupiter").selectors(selectClass(c)).execute();
        } finally {
            RUNNING = false;
        }
    }

    // ------------------------------------------------------------ restoreAfterEach

    /** Each test changes the seeded data in its own way and checks it sees none of the others' changes. */
    @Tumbler(restoreAfterEach = true)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class Restored {
        @BeforeAll
        static void seed(TumblerServer srv) {
            srv.command("SET", "stock:apple", "10");
            srv.command("RPUSH", "queue", "a", "b");
            srv.command("MOVE", "queue", "2"); // a second database
        }

        static void seesOnlyTheSeed(TumblerServer srv) {
            assumeTrue(RUNNING);
            assertEquals("10", srv.command("GET", "stock:apple"));
            assertEquals(0L, srv.command("EXISTS", "order:1"), "a key an earlier test wrote");
            assertEquals(0L, srv.command("EXISTS", "order:2"), "a key an earlier test wrote");
            assertEquals(List.of("a", "b"), Resp.pipeline(srv.host(), srv.port(), null, null, null, 10_000, false,
                    List.of(new String[] {"SELECT", "2"}, new String[] {"LRANGE", "queue", "0", "-1"})).get(1));
        }

        @Test
        @Order(1)
        void first(TumblerServer srv) {
            seesOnlyTheSeed(srv);
            srv.command("SET", "order:1", "paid");
            srv.command("DECRBY", "stock:apple", "3");
            Resp.pipeline(srv.host(), srv.port(), null, null, null, 10_000, false,
                    List.of(new String[] {"SELECT", "2"}, new String[] {"LPOP", "queue"}));
            SEEN.add("first");
        }

        @Test
        @Order(2)
        void second(TumblerServer srv) {
            seesOnlyTheSeed(srv);
            srv.command("SET", "order:2", "paid");
            srv.command("DEL", "stock:apple");
            SEEN.add("second");
        }

        @ParameterizedTest
        @ValueSource(ints = {1, 2})
        @Order(3)
        void third(int n, TumblerServer srv) {
            seesOnlyTheSeed(srv);
            srv.command("SET", "order:" + n, "paid");
            SEEN.add("third" + n);
        }
    }

    /** The same tests without restoreAfterEach: the second test sees the first's keys. */
    @Tumbler
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class NotRestored extends Restored {}

    @Test
    void restoreAfterEachIsolatesTestsFromEachOther() {
        run(Restored.class).testEvents().assertStatistics(s -> s.succeeded(4).failed(0));
        assertEquals(List.of("first", "second", "third1", "third2"), SEEN);
    }

    @Test
    void withoutRestoreTheTestsSeeEachOthersKeys(@TempDir Path dir) {
        // The control case: the same fixture fails once the server is not restored, so the
        // test above does prove the isolation. Its failures' artifacts (if a CI run turned
        // them on) go to a temporary directory.
        withArtifactsIn(dir, () -> run(NotRestored.class).testEvents()
                .assertStatistics(s -> s.succeeded(1).failed(3)));
    }

    /** Runs r with the system property tumbler.artifacts set to dir. */
    private static void withArtifactsIn(Path dir, Runnable r) {
        String before = System.getProperty(TumblerExtension.ARTIFACTS_PROPERTY);
        System.setProperty(TumblerExtension.ARTIFACTS_PROPERTY, dir.toString());
        try {
            r.run();
        } finally {
            if (before == null) {
                System.clearProperty(TumblerExtension.ARTIFACTS_PROPERTY);
            } else {
                System.setProperty(TumblerExtension.ARTIFACTS_PROPERTY, before);
            }
        }
    }

    // ------------------------------------------------------------ failure artifacts

    /** One failing test, one passing; artifacts to the directory of tumbler.artifacts. */
    @Tumbler(restoreAfterEach = true, failureArtifacts = true)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class Failing {
        @BeforeAll
        static void seed(TumblerServer srv) {
            srv.command("SET", "seeded", "yes");
        }

        @Test
        @Order(1)
        void fails(TumblerServer srv) {
            assumeTrue(RUNNING);
            srv.command("HSET", "cart:7", "sku", "apple");
            srv.command("SET", "session:7", "open", "EX", "300");
            fail("deliberately");
        }

        @Test
        @Order(2)
        void passesAfterRestore(TumblerServer srv) {
            assumeTrue(RUNNING);
            assertEquals(0L, srv.command("EXISTS", "cart:7"), "the failed test's keys were restored away");
            assertEquals("yes", srv.command("GET", "seeded"));
        }

        @Test
        @Order(3)
        void aborted(TumblerServer srv) {
            assumeTrue(RUNNING);
            srv.command("SET", "aborted:key", "x");
            assumeTrue(false, "an aborted test is not a failure");
        }
    }

    /** An instance-field server per test, its directory named by the annotation. */
    static class FieldFailing {
        static final String DIR = "target/tumbler-artifacts-fieldtest";

        @Tumbler(artifactsDir = DIR)
        TumblerServer own;

        @AfterEach
        void alsoFails() {
            if (RUNNING) {
                own.command("SET", "after-each:ran", "1");
            }
        }

        @Test
        void fails() {
            assumeTrue(RUNNING);
            own.command("SET", "field:key", "v");
            throw new IllegalStateException("deliberately, with\na second line");
        }
    }

    private static String txt(Path dir, String name) throws Exception {
        return Files.readString(dir.resolve(name + ".txt"), StandardCharsets.UTF_8);
    }

    private static void assertRdb(Path file, String... keys) throws Exception {
        byte[] rdb = Files.readAllBytes(file);
        assertTrue(rdb.length > 9, file + " has " + rdb.length + " bytes");
        assertEquals("REDIS", new String(rdb, 0, 5, StandardCharsets.US_ASCII), file + " is an RDB file");
        for (String k : keys) {
            assertTrue(SnapshotTest.indexOf(rdb, k) > 0, file + " holds " + k);
        }
    }

    private static List<String> names(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aFailedTestLeavesItsStateBehind(@TempDir Path dir) throws Exception {
        EngineExecutionResults[] r = new EngineExecutionResults[1];
        withArtifactsIn(dir, () -> r[0] = run(Failing.class));
        r[0].testEvents().assertStatistics(s -> s.failed(1).succeeded(1).aborted(1));

        String base = Failing.class.getName() + ".fails";
        assertEquals(List.of(base + ".rdb", base + ".txt"), names(dir), "files only for the failed test");
        String state = txt(dir, base);
        assertTrue(state.contains("cart:7") && state.contains("apple") && state.contains("session:7")
                && state.contains("seeded"), "the state as the test failed:\n" + state);
        assertTrue(state.contains("deliberately"), "the header says why:\n" + state);
        assertRdb(dir.resolve(base + ".rdb"), "cart:7", "session:7", "seeded");
    }

    @Test
    void artifactsDirOnTheAnnotationAndFailuresInAfterEach() throws Exception {
        Path dir = Path.of(FieldFailing.DIR).toAbsolutePath();
        String base = FieldFailing.class.getName() + ".fails.own";
        Files.deleteIfExists(dir.resolve(base + ".rdb"));
        Files.deleteIfExists(dir.resolve(base + ".txt"));

        run(FieldFailing.class).testEvents().assertStatistics(s -> s.failed(1));

        String state = txt(dir, base);
        assertTrue(state.contains("field:key"), state);
        assertFalse(state.contains("after-each:ran"), "taken when the test method ended, before @AfterEach:\n" + state);
        assertTrue(state.contains("# java.lang.IllegalStateException: deliberately, with\n"), state);
        assertRdb(dir.resolve(base + ".rdb"), "field:key");
    }
}
